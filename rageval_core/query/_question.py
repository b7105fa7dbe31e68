"""One question: its detail in one run (answer, claims, chunks placed in their documents,
the judge's verdicts) and its history across runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from rageval_core.catalogue import (
    COST_COLUMNS,
    LATENCY_COLUMNS,
)
from rageval_core.errors import NotFoundError
from rageval_core.metrics.spans import Range, places, relevant, span_gold_ranks
from rageval_core.models import Claim, GoldSpan
from rageval_core.query import _sql as sql
from rageval_core.query._shared import CHART_RUNS, cache_retry, expand_declared, frame, resolve_run
from rageval_core.query._verdicts import QuestionVerdicts, verdicts_from_row
from rageval_core.runs.reading import RunInfo
from rageval_core.runs.source import bind, reading_results
from rageval_core.runs.summary import QUALITY_METRICS
from rageval_core.store.results import ResultsStore


def question_history(
    store: ResultsStore, question_id: str, *, dataset: str | None = None, limit: int = CHART_RUNS
) -> pd.DataFrame:
    """One question across runs, oldest first: the newest `limit` runs that have it
    (narrow cache + running runs)."""

    def compute() -> pd.DataFrame:
        with (
            store.cursor() as cur,
            store.summary_source(cur) as runs,
            store.metrics_source(cur) as rows,
        ):
            q = sql.QUESTION_HISTORY.format(summary=runs.sql, metrics=rows.sql)
            params = {"question_id": str(question_id), "dataset": dataset, "limit": int(limit)}
            return frame(cur, q, {**runs.params, **rows.params, **params})

    return expand_declared(cache_retry(store, compute), store.catalogue().declared_names)


@dataclass(frozen=True)
class RetrievedRow:
    """One retrieved chunk of a question, in rank order (rank is 1-based)."""

    id: str
    text: str
    score: float | None
    rank: int
    is_gold: bool


@dataclass(frozen=True)
class QuestionDetail:
    """Everything about one question in one run, evidence included."""

    run_id: str
    question_id: str
    question: str | None
    reference_answer: str | None
    answer: str | None
    answerable: bool | None
    tags: tuple[str, ...]
    failure_type: str | None
    refused: bool | None
    metrics: Mapping[str, float | None]
    claims: tuple[Claim, ...]
    unsupported_claims: tuple[str, ...]
    retrieved: tuple[RetrievedRow, ...]
    gold_ids: tuple[str, ...]
    missed_gold_ids: tuple[str, ...]
    timings: Mapping[str, float | None]
    tokens: Mapping[str, int | None]
    cost: Mapping[str, float | None]
    error: str | None = None
    judge_error: str | None = None
    problems: tuple[str, ...] = field(default=())
    gold_spans: tuple[GoldSpan, ...] = ()
    """On a span dataset: the question's gold spans (`gold_ids` are their labels)."""
    places: tuple[Range | None, ...] = ()
    """Each retrieved chunk's place in a document, in rank order (None: not placed)."""
    verdicts: QuestionVerdicts = QuestionVerdicts()
    """The judge's reference-free verdicts (their figures are in `metrics`)."""

    def chunk_names(self) -> dict[str, str]:
        """Each retrieved chunk's name for a reader: its document and character range
        (`git-rebase.txt 4,120–4,380`) when placed, else its id. Frameworks name chunks
        by UUIDs (LlamaIndex nodes) that say nothing about where the text is."""
        out: dict[str, str] = {}
        for i, r in enumerate(self.retrieved):
            place = self.places[i] if i < len(self.places) else None
            name = r.id if place is None else f"{place.doc_id} {place.start:,}–{place.end:,}"
            out.setdefault(r.id, name)
        return out

    def named(self, text: str) -> str:
        """`text` (a judge's reason, "found in 1c79d393-…") with each placed chunk's id
        as its name; an id inside a longer token is left alone."""
        names = {i: n for i, n in self.chunk_names().items() if n != i}
        if not names or not text:
            return text
        ids = sorted(names, key=len, reverse=True)
        pattern = "|".join(re.escape(i) for i in ids)
        return re.sub(rf"(?<![\w#:.-])(?:{pattern})(?![\w#:-])", lambda m: names[m[0]], text)


def _none(v: Any) -> Any:
    """`v`, with a NaN float as None (a missing score is one thing on every page)."""
    return None if isinstance(v, float) and math.isnan(v) else v


def question_detail(store: ResultsStore, run_id: str | RunInfo, question_id: str) -> QuestionDetail:
    """One question of one run; NotFoundError when the run has no such question, another
    ResultsError when its files cannot be read."""
    info, cat = resolve_run(store, run_id)
    with store.cursor() as cur, store.run_source(cur, info) as src:
        q = sql.QUESTION_ONE.format(src=src.sql)
        with reading_results(info.run_id):
            rel = cur.execute(q, bind(q, {**src.params, "question_id": str(question_id)}))
            names = [d[0] for d in rel.description]
            rows_ = rel.fetchall()
        row = rows_[0] if rows_ else None
        problems = tuple(src.problems)
    if row is None:
        raise NotFoundError(f"run {info.run_id!r} has no question {str(question_id)[:80]!r}")
    r = dict(zip(names, row, strict=True))
    gold = tuple(r.get("gold_ids") or ())
    ids = list(r.get("retrieved_ids") or ())
    texts = list(r.get("retrieved_texts") or ())
    scores = list(r.get("retrieved_scores") or ())
    gold_set = set(gold)
    spans = tuple(GoldSpan(g["doc_id"], g["start"], g["end"]) for g in r.get("gold_spans") or ())
    placed = tuple(
        places(r.get("retrieved_doc_ids"), r.get("retrieved_starts"), r.get("retrieved_ends"))
    )
    # on a span question a chunk is gold when it overlaps a gold span (metrics/spans.py),
    # or was the first to cover one through a copy of its text: the row's ranks read
    # twins, and rank a chunk repeated at one place once (`span_gold_ranks`)
    ranks = list(r.get("gold_ranks") or ()) if spans else []
    keys = list(zip(ids, placed, strict=False))
    firsts = [i for i, k in enumerate(keys) if keys.index(k) == i]
    ranked = {firsts[k - 1] for k in ranks if k is not None and 0 < k <= len(firsts)}
    hits = relevant(placed, spans) if spans else [cid in gold_set for cid in ids]
    hits = [h or i in ranked for i, h in enumerate(hits)]
    retrieved = tuple(
        RetrievedRow(
            id=cid,
            text=texts[i] if i < len(texts) and texts[i] is not None else "",
            score=_none(scores[i]) if i < len(scores) else None,
            rank=i + 1,
            is_gold=i < len(hits) and hits[i],
        )
        for i, cid in enumerate(ids)
    )
    missed = (
        tuple(
            s.label
            for s, rank in zip(spans, ranks or span_gold_ranks(placed, spans), strict=False)
            if rank is None
        )
        if spans
        else tuple(g for g in gold if g not in set(ids))
    )
    claims = tuple(
        Claim(
            text=c.get("text") or "",
            verdict=c.get("verdict"),
            evidence_chunk_id=c.get("evidence_chunk_id"),
            evidence=c.get("evidence"),
            reason=c.get("reason") or "",
        )
        for c in r.get("claims") or ()
    )
    return QuestionDetail(
        run_id=info.run_id,
        question_id=str(r["question_id"]),
        question=r.get("question"),
        reference_answer=r.get("reference_answer"),
        answer=r.get("answer"),
        answerable=r.get("answerable"),
        tags=tuple(r.get("tags") or ()),
        failure_type=r.get("failure_type"),
        refused=r.get("refused"),
        metrics={m: _none(r.get(m)) for m in (*QUALITY_METRICS, *cat.declared_names)},
        claims=claims,
        unsupported_claims=tuple(r.get("unsupported_claims") or ()),
        retrieved=retrieved,
        gold_ids=gold,
        missed_gold_ids=missed,
        timings={c: _none(r.get(c)) for c in LATENCY_COLUMNS},
        tokens={c: _none(r.get(c)) for c in ("input_tokens", "output_tokens")},
        cost={c: _none(r.get(c)) for c in COST_COLUMNS},
        error=r.get("error"),
        judge_error=r.get("judge_error"),
        problems=problems,
        gold_spans=spans,
        places=placed,
        verdicts=verdicts_from_row(r),
    )
