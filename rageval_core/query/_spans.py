"""Span views (docs/metrics.md): span figures per k across runs, what a chunking costs in input
tokens, gold spans cut by a chunk boundary, one question's ranges over its document.

The maths is `metrics/spans.py`; this module only reads runs (their rows, summaries and,
for the text of a document, the run's dataset when it is still there unchanged).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rageval_core.catalogue import DEFAULT_KS
from rageval_core.dataset import load_dataset
from rageval_core.errors import DatasetError
from rageval_core.metrics.spans import Range, cut_spans, places
from rageval_core.models import GoldSpan
from rageval_core.query._question import QuestionDetail
from rageval_core.query._shared import frame, over_summaries
from rageval_core.runs.layout import validate_run_id
from rageval_core.runs.reading import RunInfo
from rageval_core.store.results import ResultsStore

SPAN_CURVE = """
SELECT s.run_id, s.created_at, s.config_name, k.k,
       CASE k.k {recall} END AS span_recall,
       CASE k.k {precision} END AS span_precision,
       CASE k.k {iou} END AS span_iou
FROM {summary} s, (SELECT unnest($ks) AS k) k
WHERE list_contains($run_ids, s.run_id) AND s."span_recall_at_5" IS NOT NULL
ORDER BY s.created_at, s.run_id, k.k
"""

TOKENS = "SELECT avg(input_tokens) AS input_tokens FROM {src}"

NO_GOLD = """
SELECT count(*) FILTER (WHERE answerable AND len(gold_ids) = 0) AS n FROM {src}
"""

SPAN_ROWS = """
SELECT question_id, question, retrieved_doc_ids, retrieved_starts, retrieved_ends, gold_spans
FROM {src} WHERE len(gold_spans) > 0
"""


def span_curve(store: ResultsStore, run_ids: Iterable[str]) -> pd.DataFrame:
    """Mean span recall, precision and IoU at each K, per run that has span figures
    (columns run_id, created_at, config_name, k, span_recall, span_precision, span_iou,
    input_tokens: the run's mean input tokens per question, what its chunks cost)."""
    ids = [validate_run_id(r) for r in run_ids]

    def cases(stem: str) -> str:
        return " ".join(f'WHEN {k} THEN s."{stem}_at_{k}"' for k in DEFAULT_KS)

    df = over_summaries(
        store,
        SPAN_CURVE,
        {"ks": list(DEFAULT_KS), "run_ids": ids},
        recall=cases("span_recall"),
        precision=cases("span_precision"),
        iou=cases("span_iou"),
    )
    tokens = {r: _tokens(store, r) for r in dict.fromkeys(df["run_id"])}
    return df.assign(input_tokens=df["run_id"].map(tokens))


def _tokens(store: ResultsStore, run_id: str) -> float | None:
    info = store.run(run_id)
    with store.cursor() as cur, store.run_source(cur, info) as src:
        value = frame(cur, TOKENS.format(src=src.sql), src.params, info.run_id)["input_tokens"][0]
    return None if pd.isna(value) else float(value)


def _list(value: object) -> list:
    """A list cell as a list (DuckDB hands DataFrames numpy arrays; NULL is None)."""
    return [] if value is None else list(value)  # type: ignore[call-overload]


def _places(row: dict) -> list[Range | None]:
    return places(
        _list(row.get("retrieved_doc_ids")),
        _list(row.get("retrieved_starts")),
        _list(row.get("retrieved_ends")),
    )


def _gold(row: dict) -> list[GoldSpan]:
    return [GoldSpan(g["doc_id"], g["start"], g["end"]) for g in _list(row.get("gold_spans"))]


def no_retrieval_gold(store: ResultsStore, run_id: str | RunInfo) -> int:
    """Answerable questions of a run with no retrieval gold (no gold key in the dataset):
    their retrieval figures are not computed (`dataset.answerability`)."""
    info = store.run(run_id)
    with store.cursor() as cur, store.run_source(cur, info) as src:
        return int(frame(cur, NO_GOLD.format(src=src.sql), src.params, info.run_id)["n"][0])


@dataclass(frozen=True)
class CutSpans:
    """Gold spans of a run that its top-k chunks cover only in part."""

    k: int
    n_spans: int
    n_cut: int
    questions: pd.DataFrame
    """question_id, question, cut (spans cut in that question), spans"""


def cut_gold_spans(store: ResultsStore, run_id: str | RunInfo, k: int = 5) -> CutSpans:
    """Per run: gold spans the top-k cover in part — a chunk boundary went through them."""
    info = store.run(run_id)
    with store.cursor() as cur, store.run_source(cur, info) as src:
        rows = frame(cur, SPAN_ROWS.format(src=src.sql), src.params, info.run_id)
    out = []
    for row in rows.to_dict("records"):
        gold = _gold(row)
        cut = cut_spans(_places(row), gold, k)
        out.append((row["question_id"], row["question"], cut, len(gold)))
    df = pd.DataFrame(out, columns=["question_id", "question", "cut", "spans"])
    cut = df[df["cut"] > 0].sort_values("cut", ascending=False)
    return CutSpans(k, int(df["spans"].sum()), int(df["cut"].sum()), cut.reset_index(drop=True))


@dataclass(frozen=True)
class DocumentView:
    """One gold document of a question with the ranges over it: `text` None when the
    run's dataset is not at hand (or changed since); ranges are still drawn."""

    doc_id: str
    text: str | None
    length: int
    gold: tuple[tuple[int, int], ...]
    chunks: tuple[tuple[int, str, int, int], ...]
    """(rank, chunk id, start, end) of each retrieved chunk placed in this document"""


def question_documents(store: ResultsStore, detail: QuestionDetail) -> tuple[DocumentView, ...]:
    """The documents holding a question's gold spans, each with its gold spans and the
    retrieved chunks placed in it (`detail` from `question_detail`)."""
    if not detail.gold_spans:
        return ()
    texts = _document_texts(store.run(detail.run_id))
    views = []
    for doc in dict.fromkeys(g.doc_id for g in detail.gold_spans):
        chunks = tuple(
            (r.rank, r.id, p.start, p.end)
            for r, p in zip(detail.retrieved, detail.places, strict=False)
            if p is not None and p.doc_id == doc
        )
        spans = tuple((g.start, g.end) for g in detail.gold_spans if g.doc_id == doc)
        text = texts.get(doc)
        ends = [e for _, e in spans] + [c[3] for c in chunks]
        views.append(
            DocumentView(doc, text, len(text) if text is not None else max(ends), spans, chunks)
        )
    return tuple(views)


def _document_texts(info: RunInfo) -> dict[str, str]:
    """The run's dataset documents, when its file is still there with the same hash."""
    m = info.manifest
    if m is None or not m.dataset.path:
        return {}
    path = Path(m.dataset.path)
    try:
        stamp = path.stat().st_mtime_ns if path.is_file() else None
    except OSError:
        return {}
    return {} if stamp is None else _texts(str(path), m.dataset.sha256, stamp)


@functools.lru_cache(maxsize=4)
def _texts(path: str, sha256: str, stamp: int) -> dict[str, str]:
    """Documents of the dataset at `path` if it hashes to `sha256` (`stamp` keys the cache
    to the file's version: a page reruns often, a dataset changes rarely)."""
    try:
        ds = load_dataset(path)
    except (DatasetError, OSError):
        return {}
    return {d.id: d.text for d in ds.documents} if ds.sha256 == sha256 else {}
