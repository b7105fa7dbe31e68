"""What a set of runs cannot compute, and why, one sentence per reason: pages drop the
empty columns and say why once (docs/metrics.md, "Reference-free verdicts")."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rageval_core.catalogue import DEFAULT_KS, retrieval_columns
from rageval_core.query.store import ResultsStore
from rageval_core.query.summary import summarize_run

VERDICT_METRICS: tuple[str, ...] = ("context_relevance", "answer_relevancy", "context_recall")
"""The judge metrics (`models.JUDGE_METRICS`) whose columns older runs lack."""
_FAMILIES = {
    "context_relevance": ("context_relevance", "context_precision"),
    "answer_relevancy": ("answer_relevancy",),
    "context_recall": ("context_recall",),
}


@dataclass(frozen=True)
class Unavailable:
    """A family of metrics none of the runs has a value for, and the one reason why."""

    family: str
    metrics: tuple[str, ...]
    reason: str


def _reasons(store: ResultsStore, run_id: str) -> dict[str, str]:
    info = store.run_info(run_id)
    s = summarize_run(info, con=store.con, fs=store.fs, to_url=store.to_url)
    out: dict[str, str] = {}
    if all(s.get(m) is None for m in retrieval_columns(DEFAULT_KS)):
        out["retrieval"] = "Retrieval figures need gold chunk ids or spans: no retrieval gold."
    if s.get("answer_correctness") is None:
        out["correctness"] = "Answer correctness needs reference answers: no reference answers."
    asked = info.manifest.judge.metrics if info.manifest else None
    for metric in VERDICT_METRICS:
        if s.get(metric) is not None:
            continue
        label = metric.replace("_", " ")
        if asked is None:
            out[metric] = f"No {label}: the run was written before these verdicts existed."
        elif metric not in asked:
            out[metric] = f"No {label}: the judge was not asked for {metric}."
        elif metric == "context_recall":
            out[metric] = "Context recall needs reference answers: no reference answers."
        else:
            out[metric] = f"No {label}: the judge gave no verdict on any question."
    return out


def unavailable_metrics(store: ResultsStore, run_ids: Iterable[str]) -> tuple[Unavailable, ...]:
    """The metric families that none of `run_ids` can show, each with the first run's
    reason (a family one run has is shown, NULL for the others)."""
    per_run = [_reasons(store, r) for r in run_ids]
    if not per_run:
        return ()
    families = {
        "retrieval": tuple(retrieval_columns(DEFAULT_KS)),
        "correctness": ("answer_correctness",),
        **_FAMILIES,
    }
    return tuple(
        Unavailable(family, metrics, per_run[0][family])
        for family, metrics in families.items()
        if all(family in r for r in per_run)
    )
