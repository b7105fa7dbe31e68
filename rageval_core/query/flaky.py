"""Known flaky questions: whose outcome flips across runs of one config on one dataset
version (the same pipeline, the same questions, a different answer), so a lead can tell
noise from a regression before acting on it.

A run's *series* is its config name plus dataset name and version. Compare asks what was
known before the runs it compares (they are left out of the history: a fresh regression
must not make its own question look flaky).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from rageval_core.query.store import ResultsStore
from rageval_core.query.views import flaky_questions
from rageval_core.runs.manifest import config_name
from rageval_core.runs.reading import RunInfo


def series_flaky(
    store: ResultsStore, info: RunInfo, exclude_runs: Iterable[str] = ()
) -> pd.DataFrame:
    """The flaky questions of `info`'s series (see `flaky_questions` for the columns),
    plus `flaky_note`: `flipped 3× in 7 runs of bm25-top5`; empty without a manifest."""
    m = info.manifest
    if m is None:
        return pd.DataFrame(columns=["question_id", "n_runs", "flips", "flaky_note"])
    config = config_name(m)
    df = flaky_questions(
        store,
        dataset=m.dataset.name,
        dataset_version=str(m.dataset.version),
        config=config,
        exclude_runs=exclude_runs,
    )
    if df.empty:
        return df.assign(flips=pd.Series(dtype=int), flaky_note=pd.Series(dtype=str))
    flips = df["verdict_flips"].astype(int).clip(lower=df["correctness_flips"].astype(int))
    notes = [
        f"flipped {f}× in {n} runs of {config}" for f, n in zip(flips, df["n_runs"], strict=True)
    ]
    return df.assign(flips=flips, flaky_note=notes)


def run_flaky(store: ResultsStore, run_id: str) -> pd.DataFrame:
    """`series_flaky` of a run named by id (Tails, the Question page), as the store last
    saw it: a damaged run has no series to speak of, not an error that hides the page."""
    return series_flaky(store, store.run(run_id))


def mark_flaky(
    store: ResultsStore, infos: Sequence[RunInfo], questions: pd.DataFrame
) -> pd.DataFrame:
    """`questions` (one row per candidate run and question, as `Comparison.questions`)
    with `flaky` (bool) and `flaky_note` (text, empty when not flaky): the question flips
    in the candidate's series or the baseline's, the compared runs left out."""
    compared = [i.run_id for i in infos]
    base_notes = _notes(series_flaky(store, infos[0], compared))
    out = questions.copy()
    notes: list[str] = []
    by_run = {i.run_id: i for i in infos}
    cand_notes: dict[str, dict[str, str]] = {}
    for run_id, qid in zip(out["run_id"], out["question_id"], strict=True):
        if run_id not in cand_notes:
            cand_notes[run_id] = _notes(series_flaky(store, by_run[run_id], compared))
        notes.append(cand_notes[run_id].get(qid) or base_notes.get(qid) or "")
    out["flaky"] = pd.Series([bool(n) for n in notes], index=out.index, dtype=bool)
    out["flaky_note"] = pd.Series(notes, index=out.index, dtype=object)
    return out


def _notes(df: pd.DataFrame) -> dict[str, str]:
    return dict(zip(df["question_id"], df["flaky_note"], strict=True))
