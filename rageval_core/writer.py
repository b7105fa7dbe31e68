"""Write a run from any harness: open it, add one question's result at a time, close it.

For evaluation loops rageval does not drive (docs/import.md)::

    with RunWriter("my-harness", dataset="data/dataset.yaml") as run:
        for q in questions:
            if q.id in run.done:      # resumed after a crash: already recorded
                continue
            out = my_rag(q.text)
            run.add(q.id, answer=out.text, retrieved=out.chunk_ids, scores={"tone": 0.8})

The files are those of `rageval run` (manifest first as `running`, one fsynced journal line
per question, then Parquet, summary and the manifest as `complete`: both write through a
`runs.folder.RunFolder`), so a writer killed with `kill -9` keeps every added question
and `RunWriter(..., resume=RUN_ID)` continues it. One writer per run, held by the run's
lease (`runs/lease.py`).

What the harness gives is recorded; what it does not stays NULL, never invented. Retrieval
metrics are computed here (`metrics.retrieval`) when both the gold ids (from the dataset, or
given) and the retrieved ids are known; any other score is a declared metric (`metrics=`).
Every string goes through a `Redactor` before it is written.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rageval_core.catalogue import DEFAULT_KS, parse_declared
from rageval_core.dataset import answerability, load_dataset
from rageval_core.errors import ConfigError, ResultsError, SourceError, shown
from rageval_core.metrics.failure import DEFAULT_THRESHOLDS, FailureThresholds, classify_failure
from rageval_core.metrics.retrieval import gold_ranks, retrieval_metrics
from rageval_core.models import (
    VERDICTS,
    Claim,
    DatasetRef,
    DeclaredMetric,
    GoldenDataset,
    GoldenQuestion,
    JudgeRef,
    RunManifest,
)
from rageval_core.origin import RunOrigin
from rageval_core.redact import Redactor, secret_values
from rageval_core.runner import RunResult, git_commit
from rageval_core.runs.folder import PART_ROWS, RunFolder, run_totals
from rageval_core.runs.layout import default_run_id, iso, results_location, utc_now
from rageval_core.runs.rows import conform_row, question_schema

NO_DATASET = DatasetRef(name="", version="", sha256="", n_questions=0)
PART_BYTES = 32 << 20
"""Text a writer holds before writing its batch early: a batch of long answers stays small."""


def _text_size(row: Mapping[str, Any]) -> int:
    """About how many bytes of text a row holds (its strings and lists of strings)."""
    size = 0
    for v in row.values():
        if isinstance(v, str):
            size += len(v)
        elif isinstance(v, list):
            size += sum(len(x) if isinstance(x, str) else len(str(x)) for x in v)
    return size


@dataclass(frozen=True)
class QuestionRecord:
    """One question's result as a harness reports it; every field but the id is optional.

    `retrieved` is ranked (None: unknown; `[]`: nothing retrieved): chunk ids, or
    mappings `{id?, text?, score?}` (a text whose id is unknown is matched to the
    dataset's corpus by exact text; unmatched, or shared by several chunks, its id stays
    unknown, and so do the question's retrieval metrics). `gold_ids`, `question`,
    `reference` and `tags` default to the dataset's. `claims` are `Claim`s or mappings
    with `text`, `verdict` and optionally `evidence_chunk_id`, `evidence`, `reason`;
    without `faithfulness` it is computed from them. `context_relevance`,
    `context_precision`, `answer_relevancy` (with its reason) and `context_recall` are the
    reference-free verdicts' figures (docs/metrics.md): only the scores, so the per-chunk
    and per-statement verdict lists stay NULL. `scores` holds the run's declared metrics.
    """

    question_id: str
    question: str | None = None
    answer: str | None = None
    retrieved: Sequence[Any] | None = None
    reference: str | None = None
    gold_ids: Sequence[str] | None = None
    tags: Sequence[str] | None = None
    scores: Mapping[str, float | None] = field(default_factory=dict)
    faithfulness: float | None = None
    answer_correctness: float | None = None
    context_relevance: float | None = None
    context_precision: float | None = None
    answer_relevancy: float | None = None
    answer_relevancy_reason: str | None = None
    context_recall: float | None = None
    refused: bool | None = None
    claims: Sequence[Any] = ()
    retrieval_ms: float | None = None
    generation_ms: float | None = None
    ttft_ms: float | None = None
    total_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    judge_cost_usd: float | None = None
    error: str | None = None
    judge_error: str | None = None


def _number(value: Any, name: str, qid: str, kind: type = float) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SourceError(
            f"question {shown(qid, 80)}: {name} must be a number, got {type(value).__name__}"
        )
    if kind is int and float(value).is_integer():
        return int(value)
    return kind(value)


def _claim(raw: Any, qid: str, i: int) -> Claim:
    if isinstance(raw, Claim):
        return raw
    where = f"question {shown(qid, 80)}: claims[{i}]"
    if not isinstance(raw, Mapping) or not isinstance(raw.get("text"), str):
        raise SourceError(f"{where} needs a text")
    if raw.get("verdict") not in VERDICTS:
        # A claim without a verdict is never counted as supported (STYLE: evidence travels).
        raise SourceError(f"{where}: verdict must be one of {', '.join(VERDICTS)}")
    opt = {k: raw.get(k) for k in ("evidence_chunk_id", "evidence")}
    return Claim(
        text=raw["text"],
        verdict=raw["verdict"],
        **{k: None if v is None else str(v) for k, v in opt.items()},
        reason=str(raw.get("reason") or ""),
    )


def _text(value: Any, qid: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise SourceError(f"question {shown(qid, 80)}: answer_relevancy_reason must be text")
    return value


def _answerable(r: QuestionRecord, q: GoldenQuestion | None, reference: str | None) -> bool | None:
    """The row's `answerable` by the one rule (`dataset.answerability`): the dataset
    question's, unless the harness gives the gold ids; NULL for a reference-free question
    (no gold key, no reference), whose answerability nobody stated."""
    if q is not None and r.gold_ids is None:
        kind = q.answerability
    else:
        kind, problem = answerability(
            gold_chunk_ids=r.gold_ids,
            gold_spans=None,
            answerable=None,
            reference_answer=reference,
        )
        if problem:
            raise SourceError(f"question {shown(r.question_id, 80)}: {problem}")
    return None if kind == "reference_free" else kind != "unanswerable"


def _ids_by_text(dataset: GoldenDataset | None) -> dict[str, str | None]:
    """Chunk id by chunk text, for retrieved texts given without ids; None for a text
    two chunks share (versions of one passage): which was retrieved is unknown."""
    out: dict[str, str | None] = {}
    for c in dataset.corpus if dataset is not None else ():
        out[c.text] = None if c.text in out and out[c.text] != c.id else c.id
    return out


class RunWriter:
    """One run written question by question; use as a context manager or call `close()`.

    `dataset` is a golden dataset (path or loaded) or None; `config` is recorded as the
    run's config (its `name` is `name`); `metrics` declares the scores the harness adds
    (`{name: {label, direction, range}}`, docs/metrics.md). `durable=False` skips the journal
    (rows survive only a clean `close()`): for all-or-nothing writers such as the
    importers, which stage the whole run and rename it into place.

    Rows are held `PART_ROWS` (or `PART_BYTES` of text) at a time, then written as a part
    file; `close()` compacts the parts into the final Parquet in DuckDB and sums the totals
    reading it back, so memory does not grow with the run (docs/import.md).
    """

    def __init__(
        self,
        name: str,
        *,
        results_dir: str | Path | None = None,
        dataset: str | Path | GoldenDataset | None = None,
        config: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        resume: str | None = None,
        tags: Iterable[str] = (),
        judge: JudgeRef | None = None,
        ks: Iterable[int] = DEFAULT_KS,
        failure_thresholds: FailureThresholds = DEFAULT_THRESHOLDS,
        origin: RunOrigin | None = None,
        durable: bool = True,
    ):
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("a run needs a name (the config name Runs shows)")
        if resume and run_id and resume != run_id:
            raise ConfigError("run_id and resume name different runs; give one")
        self.dataset = load_dataset(dataset) if isinstance(dataset, str | Path) else dataset
        self.declared: tuple[DeclaredMetric, ...] = parse_declared(metrics, "metrics")
        self.ks = tuple(sorted(set(ks)))
        self.thresholds = failure_thresholds
        self.durable = durable
        origin = origin or RunOrigin("writer", name)
        recorded = {**dict(config or {}), "name": name, "origin": origin.to_dict()}
        recorded.setdefault("ks", list(self.ks))
        self.redactor = Redactor(secret_values(recorded))
        location = results_location(results_dir)
        now = utc_now()
        run_id = resume or run_id or default_run_id(name, now)
        self.folder = RunFolder(location, run_id)
        self._command = origin.kind  # how warnings name who writes
        self.run_id = self.folder.run_id
        self._questions = {q.id: q for q in self.dataset.questions} if self.dataset else {}
        self._by_text = _ids_by_text(self.dataset)
        self._schema = question_schema(self.ks, self.declared)
        self._batch: list[dict[str, Any]] = []
        self._batch_bytes = 0
        self._seq = 0  # rows added, numbering the part files' rows
        self._done: set[str] | None = None  # built when first asked for
        self._started = time.monotonic()
        self._closed = False
        self._held = ExitStack()
        manifest = RunManifest(
            run_id=self.run_id,
            status="running",
            created_at=iso(now),
            config=self.redactor.value(recorded),
            dataset=self._dataset_ref(),
            judge=judge or JudgeRef(kind="none"),
            git_commit=git_commit(Path.cwd()),
            tags=tuple(tags),
            metrics=self.declared,
        )
        self._hold()
        try:
            self.manifest = self._open(manifest, bool(resume))
            self._journal = self.folder.journal_writer() if durable else None
        except BaseException:
            self._held.close()
            raise

    # -- opening

    def _dataset_ref(self) -> DatasetRef:
        ds = self.dataset
        if ds is None:
            return NO_DATASET
        return DatasetRef(ds.name, ds.version, ds.sha256, len(ds.questions), str(ds.path))

    def _hold(self) -> None:
        """Take the run's lease (as `rageval run` does) for as long as the writer is open."""
        self._held.enter_context(self.folder.hold(f"run {self.run_id}"))

    def _open(self, manifest: RunManifest, resume: bool) -> RunManifest:
        opened = self.folder.open(
            manifest, resume=resume, exists_hint="resume it or choose another run id"
        )
        self.folder.clear_parts()
        if resume:
            for row in self.folder.done_rows(self._warn):
                self._keep(row)
        return opened

    def _warn(self, message: str) -> None:
        print(f"rageval {self._command}: {message}", file=sys.stderr)

    # -- adding

    @property
    def done(self) -> frozenset[str]:
        """Ids of the questions already recorded (by this writer or before a resume). The
        first call reads them from the part files; later adds keep the set up to date."""
        if self._done is None:
            self._done = {*self.folder.part_ids(), *(r["question_id"] for r in self._batch)}
        return frozenset(self._done)

    def add(self, question_id: str, **fields: Any) -> None:
        """Record one question's result (fields of `QuestionRecord`); a bad field is a
        SourceError naming the question and the field, and nothing is recorded."""
        if self._closed:
            raise ResultsError(f"run {self.run_id} is closed")
        try:
            record = QuestionRecord(question_id, **fields)
        except TypeError as exc:
            raise SourceError(f"question {shown(question_id, 80)}: {exc}") from None
        row = self.redactor.row(self.row(record))
        try:
            row = conform_row(row, {d.name for d in self.declared})
        except ValueError as exc:
            raise SourceError(str(exc)) from None
        if self._journal is not None:
            self._journal.append(row)
        self._keep(row)

    def _keep(self, row: dict[str, Any]) -> None:
        """Hold a row until its batch is full, then write the batch as a part file."""
        self._batch.append(row)
        self._batch_bytes += _text_size(row)
        if self._done is not None:
            self._done.add(row["question_id"])
        if len(self._batch) >= PART_ROWS or self._batch_bytes >= PART_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._batch:
            self.folder.write_part(self._batch, self._seq, self._schema)
            self._seq += len(self._batch)
            self._batch, self._batch_bytes = [], 0

    def row(self, r: QuestionRecord) -> dict[str, Any]:
        """The result row (schema `question_schema`) of one record."""
        qid = r.question_id
        if not isinstance(qid, str) or not qid:
            raise SourceError(f"a question id must be non-empty text, got {qid!r:.80}")
        q: GoldenQuestion | None = self._questions.get(qid)
        if self.dataset is not None and q is None:
            raise SourceError(f"question {shown(qid, 80)} is not in dataset {self.dataset.name!r}")
        gold = (
            list(r.gold_ids) if r.gold_ids is not None else (list(q.gold_chunk_ids) if q else None)
        )
        reference = r.reference if r.reference is not None else (q.reference_answer if q else None)
        ids, texts, chunk_scores = self._retrieved(r)
        known = bool(gold) and ids is not None  # no gold: no retrieval figure, never a miss
        retrieval = retrieval_metrics(ids or [], gold or [], self.ks)
        if not known:
            retrieval = dict.fromkeys(retrieval)  # unknown, not a miss
        ranks = gold_ranks(ids, gold) if known else None
        claims = [_claim(c, qid, i) for i, c in enumerate(r.claims)]
        faithfulness = _number(r.faithfulness, "faithfulness", qid)
        if faithfulness is None and claims:
            faithfulness = sum(c.verdict == "supported" for c in claims) / len(claims)
        answerable = _answerable(r, q, reference)
        scores = self._scores(r)
        nums = {
            k: _number(getattr(r, k), k, qid)
            for k in (
                "answer_correctness",
                "context_relevance",
                "context_precision",
                "answer_relevancy",
                "context_recall",
                "retrieval_ms",
                "generation_ms",
                "ttft_ms",
                "total_ms",
                "cost_usd",
                "judge_cost_usd",
            )
        }
        if nums["total_ms"] is None and None not in (nums["retrieval_ms"], nums["generation_ms"]):
            nums["total_ms"] = nums["retrieval_ms"] + nums["generation_ms"]
        refused = r.refused
        if refused is not None and not isinstance(refused, bool):
            raise SourceError(f"question {shown(qid, 80)}: refused must be true or false")
        return {
            "run_id": self.run_id,
            "question_id": qid,
            "question": r.question if r.question is not None else (q.question if q else None),
            "reference_answer": reference,
            "answerable": answerable,
            "tags": list(r.tags if r.tags is not None else (q.tags if q else ())),
            "answer": r.answer,
            "retrieved_ids": ids or [],
            "retrieved_texts": texts,
            "retrieved_scores": chunk_scores,
            "gold_ids": gold or [],
            "gold_ranks": ranks or [],
            **retrieval,
            "faithfulness": faithfulness,
            "claims": [c.to_dict() for c in claims],
            "unsupported_claims": [c.text for c in claims if c.verdict != "supported"],
            **nums,
            "refused": refused,
            "input_tokens": _number(r.input_tokens, "input_tokens", qid, int),
            "output_tokens": _number(r.output_tokens, "output_tokens", qid, int),
            "error": r.error,
            "judge_error": r.judge_error,
            "answer_relevancy_reason": _text(r.answer_relevancy_reason, qid),
            "failure_type": self._failure(r, answerable, ranks, faithfulness, nums),
            **scores,
        }

    def _retrieved(self, r: QuestionRecord) -> tuple[list[str] | None, list[str], list[Any]]:
        """Ranked ids (None when any is unknown), texts and scores of the retrieved chunks."""
        if r.retrieved is None:
            return None, [], []
        if isinstance(r.retrieved, str | bytes | Mapping):
            raise SourceError(f"question {shown(r.question_id, 80)}: retrieved must be a list")
        ids: list[str | None] = []
        texts: list[str] = []
        scores: list[Any] = []
        for i, item in enumerate(r.retrieved):
            if isinstance(item, str):
                item = {"id": item}
            if not isinstance(item, Mapping):
                raise SourceError(
                    f"question {shown(r.question_id, 80)}: retrieved[{i}] must be an id "
                    "or a mapping with id and/or text"
                )
            text = item.get("text")
            cid = item.get("id")
            if cid is None and isinstance(text, str):
                cid = self._by_text.get(text)
            ids.append(None if cid is None else str(cid))
            texts.append("" if text is None else str(text))
            scores.append(_number(item.get("score"), f"retrieved[{i}].score", r.question_id))
        known = None if None in ids else [i for i in ids if i is not None]
        return known, texts, scores

    def _scores(self, r: QuestionRecord) -> dict[str, float | None]:
        names = [d.name for d in self.declared]
        unknown = [k for k in r.scores if k not in names]
        if unknown:
            raise SourceError(
                f"question {shown(r.question_id, 80)}: score {shown(unknown[0], 64)} "
                "is not declared; declare it in `metrics=`"
            )
        return {n: _number(r.scores.get(n), n, r.question_id) for n in names}

    def _failure(
        self,
        r: QuestionRecord,
        answerable: bool | None,
        ranks: list[int | None] | None,
        faithfulness: float | None,
        nums: Mapping[str, Any],
    ) -> str | None:
        """The failure type (docs/metrics.md) from what is known, as `runner.judge_columns`
        decides it. Without gold or retrieved ids the retrieval steps cannot be judged and
        are passed over; a reference-free question (answerability unknown) is taken as one
        that expects an answer, and declining it sets no type. An unanswerable question
        whose refusal is unknown (no tool reports one) has none: missed refusal and ok
        cannot be told apart."""
        if answerable is False and r.refused is None and not r.error:
            return None
        return classify_failure(
            error=r.error,
            answerable=answerable is not False,
            refused=bool(r.refused) and answerable is not None,
            gold_ranks=ranks,
            faithfulness=faithfulness,
            answer_correctness=nums["answer_correctness"],
            thresholds=self.thresholds,
        )

    # -- closing

    def close(self, failed: bool = False) -> RunResult:
        """Write the Parquet, summary and manifest (`complete`), or mark the run `failed`
        (resumable: the journal stays). Closing twice is a no-op returning the same run."""
        if self._closed:
            m = self.manifest
            return RunResult(self.run_id, self.folder.path, m.status, m.totals)
        self._closed = True
        try:
            if self._journal is not None:
                self._journal.close()
            self._flush()
            order = [q.id for q in self.dataset.questions] if self.dataset else []
            previous = float(self.manifest.totals.get("duration_s") or 0.0)
            took = previous + time.monotonic() - self._started
            status = "failed" if failed else "complete"
            if failed:  # the journal stays for a resume; the parts go
                with self.folder.compacted(self._schema, order) as tables:
                    totals = run_totals((r for t in tables for r in t.to_pylist()), took)
                self.folder.clear_parts()
            else:
                self.folder.write_rows_from_parts(self._schema, order)
                totals = run_totals(self.folder.iter_rows(), took)
            self.manifest = replace(
                self.manifest,
                status=status,
                finished_at=iso(utc_now()),
                totals=totals,
            )
            self.folder.publish(self.manifest)
        finally:
            self._held.close()
        return RunResult(self.run_id, self.folder.path, status, totals)

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.close(failed=exc_type is not None)
