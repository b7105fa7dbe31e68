"""One question's result row, however it reached the results (docs/metrics.md).

The only code that turns a question (`Asked`), what a pipeline or a harness gave for it
(`Given`) and what a judge said of it (`Judged`) into a row of the run's schema
(`runs/rows.py`). `rageval run` (runner.py), `RunWriter` (writer.py, and so every
importer) and `rageval rescore` (rescore.py) all call it, so a question scores the same
whichever door its row came through: retrieval and span figures from the chunks' places
in the dataset's documents (`placement.Placer`), the timing rule, the refusal, the
failure type. Doors differ in what they are given, never in how it is scored. No I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rageval_core.config import Prices
from rageval_core.errors import PipelineError, RagevalError, shown
from rageval_core.judges import Judge
from rageval_core.judges.offline import declines
from rageval_core.metrics.context import char_weighted
from rageval_core.metrics.failure import classify_failure
from rageval_core.metrics.retrieval import gold_ranks, retrieval_metrics
from rageval_core.metrics.spans import Range, span_gold_ranks, span_metrics
from rageval_core.models import (
    ChunkVerdict,
    Claim,
    DeclaredMetric,
    GoldenDataset,
    GoldenQuestion,
    GoldSpan,
    JudgeInput,
    Judgement,
    PipelineOutput,
    RetrievedChunk,
    Statement,
    number,
)
from rageval_core.placement import Placer, unknown_columns
from rageval_core.thresholds import DEFAULT_THRESHOLDS, FailureThresholds


@dataclass(frozen=True)
class Asked:
    """The question a row is about, as the row records it. `answerable` None is a
    reference-free question: nobody stated whether it should be answered."""

    id: str
    question: str | None
    reference_answer: str | None
    answerable: bool | None
    tags: tuple[str, ...] = ()
    gold_chunk_ids: tuple[str, ...] = ()
    gold_spans: tuple[GoldSpan, ...] = ()

    @classmethod
    def of(cls, q: GoldenQuestion) -> Asked:
        return cls(
            q.id,
            q.question,
            q.reference_answer,
            None if q.answerability == "reference_free" else q.answerable,
            q.tags,
            q.gold_chunk_ids,
            q.gold_spans,
        )

    @property
    def gold_labels(self) -> tuple[str, ...]:
        """The row's `gold_ids`: the spans' labels on a span question, else the chunk ids."""
        return tuple(s.label for s in self.gold_spans) if self.gold_spans else self.gold_chunk_ids


@dataclass(frozen=True)
class Given:
    """What the pipeline or the harness gave for one question; None is unknown.

    `retrieved` None: what was retrieved is unknown (`()`: nothing). `ids_known` False: a
    chunk's id is unknown (its `id` is ""), so the id figures are too; its text is still
    placed in the documents. `wall_ms` is the call's time where the door measured it
    (`rageval run`): it then stands in for the stages the pipeline did not report.
    """

    answer: str | None = None
    retrieved: tuple[RetrievedChunk, ...] | None = None
    ids_known: bool = True
    retrieval_ms: float | None = None
    generation_ms: float | None = None
    ttft_ms: float | None = None
    total_ms: float | None = None
    wall_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    scores: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    chars_cut: int = 0
    """Characters of the texts beyond `models.MAX_TEXT_CHARS`, cut before scoring."""

    @classmethod
    def output(cls, out: PipelineOutput, wall_ms: float) -> Given:
        """A pipeline's (checked) output and the measured time of its call."""
        return cls(
            answer=out.answer,
            retrieved=out.retrieved,
            retrieval_ms=out.retrieval_ms,
            generation_ms=out.generation_ms,
            ttft_ms=out.ttft_ms,
            wall_ms=wall_ms,
            input_tokens=out.input_tokens,
            output_tokens=out.output_tokens,
            scores=out.scores,
            chars_cut=out.chars_cut,
        )


@dataclass(frozen=True)
class Judged:
    """What a judge said of one answer: a `Judgement` (`Judged.of`), or the figures a
    tool reported (the writer). None is not asked or not known."""

    claims: tuple[Claim, ...] = ()
    faithfulness: float | None = None
    answer_correctness: float | None = None
    refused: bool | None = None
    context_relevance: float | None = None
    context_precision: float | None = None
    answer_relevancy: float | None = None
    answer_relevancy_reason: str | None = None
    context_recall: float | None = None
    chunk_verdicts: tuple[ChunkVerdict, ...] | None = None
    statements: tuple[Statement, ...] | None = None
    cost_usd: float | None = None
    error: str | None = None
    served_model: str | None = None
    fingerprint: str | None = None

    @classmethod
    def of(cls, j: Judgement) -> Judged:
        """A judgement's figures; a judge that erred decided nothing (all NULL)."""
        failed = j.error is not None
        return cls(
            claims=j.claims,
            faithfulness=j.faithfulness,
            answer_correctness=j.answer_correctness,
            refused=None if failed else j.refused,
            context_relevance=j.context_relevance,
            context_precision=j.context_precision,
            answer_relevancy=None if failed else j.answer_relevancy,
            answer_relevancy_reason=None if failed else j.answer_relevancy_reason,
            context_recall=j.context_recall,
            chunk_verdicts=None if failed else j.chunk_verdicts,
            statements=None if failed else j.statements,
            cost_usd=j.cost_usd,
            error=j.error,
            served_model=j.served_model,
            fingerprint=j.system_fingerprint,
        )


def judge_answer(judge: Judge, inp: JudgeInput) -> Judged:
    """`judge`'s verdicts on `inp`; a judge bug costs that row (`judge_error`), not the run."""
    try:
        return Judged.of(judge.judge(inp))
    except Exception as exc:
        return Judged.of(Judgement((), False, None, error=f"{type(exc).__name__}: {exc}"))


def timings(g: Given) -> dict[str, float | None]:
    """Stage timings: what was reported; `total_ms` the reported total, else retrieval +
    generation when both are known (independent of the machine's speed).

    A door that timed the call (`wall_ms`) fills what the pipeline did not report: the
    total, the unreported stage gets the time the other does not account for (all of it,
    as generation, when neither is reported: then `retrieval_ms` stays NULL), and
    `ttft_ms` defaults to `generation_ms`. A failed call keeps only its total.
    """
    r, gen, ttft, total = g.retrieval_ms, g.generation_ms, g.ttft_ms, g.total_ms
    if total is None and r is not None and gen is not None:
        total = r + gen
    wall = g.wall_ms
    if total is None:
        total = wall
    if wall is not None and g.error is None:
        if gen is None:
            gen = wall if r is None else max(0.0, wall - r)
        elif r is None:
            r = max(0.0, wall - gen)
        if ttft is None:
            ttft = gen
    return {"retrieval_ms": r, "generation_ms": gen, "ttft_ms": ttft, "total_ms": total}


def judge_columns(
    judged: Judged,
    answer: str | None,
    error: str | None,
    answerable: bool | None,
    ranks: list[int | None] | None,
    thresholds: FailureThresholds,
    texts: Sequence[str] | None,
) -> dict[str, Any]:
    """The columns a judge decides, and the failure type that follows from them.

    `texts` are the retrieved chunks' texts in rank order (None: unknown), which weigh the
    chunk verdicts by characters (`metrics/context.py`).

    A refusal nobody reported (an import: no tool reports one) is read from the answer by
    the offline judge's rule (`judges.offline.declines`), as `rageval run` with the
    offline judge would. answer_correctness of an unanswerable question is 1.0 when the
    pipeline declined and 0.0 when it answered: declining is its reference. `answerable`
    None (reference-free): declining it is neither a false nor a right refusal. An
    unanswerable question with neither an answer nor a refusal has no failure type.
    """
    refused = judged.refused
    if refused is None and judged.error is None and answer is not None:
        refused = declines(answer)
    correctness = judged.answer_correctness
    if answerable is False and refused is not None:
        correctness = 1.0 if refused else 0.0
    unknown = answerable is False and refused is None and not error and judged.error is None
    verdicts, statements = judged.chunk_verdicts, judged.statements
    by_chars = char_weighted(verdicts, texts)
    # the failure rule reads relevance by characters, so a chunking does not flip it; an
    # import that gave only the figure is read on that figure
    relevance = by_chars["context_relevance_chars"]
    if relevance is None:
        relevance = judged.context_relevance
    return {
        "claims": [c.to_dict() for c in judged.claims],
        "unsupported_claims": [c.text for c in judged.claims if c.verdict != "supported"],
        "faithfulness": judged.faithfulness,
        "answer_correctness": correctness,
        "refused": refused,
        "judge_cost_usd": judged.cost_usd,
        "judge_error": judged.error,
        "context_relevance": judged.context_relevance,
        "context_precision": judged.context_precision,
        **by_chars,
        "chunk_verdicts": None if verdicts is None else [v.to_dict() for v in verdicts],
        "answer_relevancy": judged.answer_relevancy,
        "answer_relevancy_reason": judged.answer_relevancy_reason,
        "context_recall": judged.context_recall,
        "recall_statements": None if statements is None else [s.to_dict() for s in statements],
        "judge_served_model": judged.served_model,
        "judge_fingerprint": judged.fingerprint,
        "failure_type": None
        if unknown
        else classify_failure(
            error=error,
            answerable=answerable is not False,
            # An unknown refusal (judge error) is judged on retrieval alone, not as declined.
            refused=bool(refused) and answerable is not None,
            gold_ranks=ranks,
            faithfulness=judged.faithfulness,
            answer_correctness=correctness,
            thresholds=thresholds,
            judge_failed=judged.error is not None,
            context_relevance=relevance,
            answer_relevancy=judged.answer_relevancy,
        ),
    }


def span_places(
    chunks: Sequence[RetrievedChunk] | None, placed: Sequence[Range | None] | None
) -> list[Range | None] | None:
    """The places a span question's figures are scored on (every use of the placements
    is here): every retrieved range counts; a chunk repeated at one place (same id, same
    range) counts once, at its first rank, and the same id at another place is another
    chunk (a chunk whose id is unknown, "", is its own). None when they cannot be known:
    chunks unknown, or none with anything to place it by (no text, no offsets, no corpus
    id: an import that kept only ids, on a dataset without a corpus) — unknown, not a
    miss. One such chunk among placed ones counts as not relevant."""
    if chunks is None or placed is None:
        return None
    if chunks and not any(
        p is not None or c.text.strip() or c.start is not None
        for c, p in zip(chunks, placed, strict=True)
    ):
        return None
    first = dict.fromkeys(
        (c.id or i, p) for i, (c, p) in enumerate(zip(chunks, placed, strict=True))
    )
    return [p for _, p in first]


class Scorer:
    """Scores the questions of one run; build once per run (the placer's index is built
    here). `dataset` None: a harness's rows without one (no places, no corpus ids).
    `bad` is the error a door raises for a value that does not fit (`PipelineError` for
    a pipeline's output: the question's `error`; `SourceError` for a harness's record)."""

    def __init__(
        self,
        run_id: str,
        dataset: GoldenDataset | None,
        ks: Iterable[int],
        thresholds: FailureThresholds = DEFAULT_THRESHOLDS,
        declared: Sequence[DeclaredMetric] = (),
        prices: Prices | None = None,
        bad: type[RagevalError] = PipelineError,
    ):
        self.run_id = run_id
        self.ks = tuple(sorted(set(ks)))
        self.thresholds = thresholds
        self.names = [d.name for d in declared]
        self.prices = prices
        self.bad = bad
        docs = dataset.documents if dataset is not None else ()
        self.placer = Placer(docs, dataset.corpus) if dataset is not None and docs else None
        # on a span dataset ids are free to differ from the corpus: places are scored
        self.corpus_ids = (
            frozenset(c.id for c in dataset.corpus)
            if dataset is not None and dataset.corpus and not docs
            else None
        )

    def placed(self, chunks: tuple[RetrievedChunk, ...]) -> tuple[RetrievedChunk, ...]:
        """`chunks` with the places the dataset's documents give them (their own where
        none is found), for the judge: chunks adjacent in a document are read as one
        text (`judges/passages.py`)."""
        if self.placer is None:
            return chunks
        ranges = self.placer.place_all(chunks).ranges
        return tuple(
            c if r is None else replace(c, doc_id=r.doc_id, start=r.start, end=r.end)
            for c, r in zip(chunks, ranges, strict=True)
        )

    def scores(self, qid: str, given: Mapping[str, Any]) -> dict[str, float | None]:
        """The declared columns (None where one is absent). A score the run does not
        declare, or one that is not a number, is `bad` naming the question: silently
        dropping it would hide a typo in a name."""
        unknown = [k for k in given if k not in self.names]
        if unknown:
            raise self.bad(
                f"question {shown(qid, 80)}: undeclared score(s) "
                f"{', '.join(shown(str(k), 64) for k in unknown[:3])}; declare them under "
                "`metrics:` (the run config, or the writer's `metrics=`)"
            )
        out: dict[str, float | None] = dict.fromkeys(self.names)
        for k, v in given.items():
            where = lambda k=k: f"question {shown(qid, 80)}: score {shown(k, 64)}"  # noqa: E731
            out[k] = number(v, where, self.bad)
        return out

    def retrieval(self, asked: Asked, given: Given) -> tuple[dict[str, Any], list | None]:
        """The retrieval columns of one row and the gold ranks its failure type reads
        (None: no retrieval gold, or retrieval unknown). A span question is scored on the
        chunks' places (`metrics/spans.py`), any other on ids; placement and id checks
        are recorded for both. Unknown chunks (or ids, off a span question) score NULL."""
        chunks = given.retrieved
        ids = [c.id for c in chunks] if chunks is not None and given.ids_known else None
        cols: dict[str, Any] = {"gold_ids": list(asked.gold_labels)}
        placement = self.placer.place_all(chunks) if self.placer and chunks is not None else None
        placed = placement.ranges if placement is not None else None
        if self.placer is not None:
            cols.update(
                placement.columns() if placement is not None else unknown_columns(),
                gold_spans=[
                    {"doc_id": s.doc_id, "start": s.start, "end": s.end} for s in asked.gold_spans
                ],
            )
        if self.corpus_ids is not None:
            cols["n_unknown_ids"] = (
                None if ids is None else sum(i not in self.corpus_ids for i in dict.fromkeys(ids))
            )
        ranks: list[int | None] | None
        ranked = span_places(chunks, placed) if asked.gold_spans else None
        if asked.gold_spans and ranked is not None and self.placer is not None:
            twins = self.placer.twins(asked.gold_spans)
            cols.update(span_metrics(ranked, asked.gold_spans, self.ks, twins))
            ranks = span_gold_ranks(ranked, asked.gold_spans, twins)
        elif ids is not None and not asked.gold_spans:
            cols.update(retrieval_metrics(ids, asked.gold_chunk_ids, self.ks))
            ranks = gold_ranks(ids, asked.gold_chunk_ids)
        else:
            cols.update(retrieval_metrics((), (), self.ks))  # every figure NULL: unknown
            ranks = None
        cols["gold_ranks"] = ranks or []
        known = asked.gold_chunk_ids or asked.gold_spans
        return cols, (ranks if known and ranks is not None else None)

    def row(self, asked: Asked, given: Given, judged: Judged) -> dict[str, Any]:
        """The result row of one question (schema `runs.rows.question_schema`), unredacted."""
        chunks = given.retrieved or ()
        retrieval, ranks = self.retrieval(asked, given)
        cost = given.cost_usd
        if cost is None and self.prices is not None:
            cost = self.prices.cost(given.input_tokens, given.output_tokens)
        return {
            "run_id": self.run_id,
            "question_id": asked.id,
            "question": asked.question,
            "reference_answer": asked.reference_answer,
            "answerable": asked.answerable,
            "tags": list(asked.tags),
            "answer": given.answer,
            "retrieved_ids": [c.id for c in chunks] if given.ids_known else [],
            "retrieved_texts": [c.text for c in chunks],
            "retrieved_scores": [c.score for c in chunks],
            **retrieval,
            **timings(given),
            "input_tokens": given.input_tokens,
            "output_tokens": given.output_tokens,
            "cost_usd": cost,
            "error": given.error,
            "n_chars_cut": given.chars_cut,
            **judge_columns(
                judged,
                given.answer,
                given.error,
                asked.answerable,
                ranks,
                self.thresholds,
                None if given.retrieved is None else [c.text for c in given.retrieved],
            ),
            **self.scores(asked.id, given.scores),
        }
