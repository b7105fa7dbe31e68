"""Known flaky questions: whose outcome flips across runs of one config on one dataset
version (the same pipeline, the same questions, a different answer), so a lead can tell
noise from a regression before acting on it.

A run's *series* is its config name plus dataset name and version; only the runs of the
series with the run's own settings (`runs.manifest.config_fingerprint`: the config less
its name and how it was run, the judge, the dataset's content) count. A flip between
runs of other settings — a chunk size changed under the same name — is the change, not
noise, and `settings_change` names it. Compare asks what was known before the runs it
compares (they are left out of the history: a fresh regression must not make its own
question look flaky).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from rageval_core.models import RunManifest
from rageval_core.query import _sql as sql
from rageval_core.query._previous import previous_run
from rageval_core.query._shared import cache_retry, frame, opt_str
from rageval_core.runs.layout import validate_run_id
from rageval_core.runs.manifest import config_fingerprint, config_name, settings_changes
from rageval_core.runs.reading import RunInfo
from rageval_core.store.results import ResultsStore
from rageval_core.thresholds import DEFAULT_THRESHOLDS

MAX_CHANGES = 5
"""Settings a change note names; the rest are counted."""


def same_settings(store: ResultsStore, info: RunInfo) -> list[str]:
    """Ids of the runs the store lists with `info`'s config name, dataset version and
    settings (`info` itself included): the runs whose flips are noise."""
    m = info.manifest
    if m is None:
        return []
    series = (config_name(m), m.dataset.name, str(m.dataset.version))
    fingerprint = config_fingerprint(m)
    return [
        r.run_id
        for r in (*store.runs(), info)
        if r.manifest is not None
        and (config_name(r.manifest), r.manifest.dataset.name, str(r.manifest.dataset.version))
        == series
        and config_fingerprint(r.manifest) == fingerprint
    ]


def run_same_settings(store: ResultsStore, run_id: str) -> list[str]:
    """`same_settings` of a run named by id (the Runs tiles' latency noise)."""
    return same_settings(store, store.run(run_id))


def settings_change(store: ResultsStore, info: RunInfo) -> tuple[str | None, list[str]]:
    """The previous run of `info` (`previous.previous_run`) and the settings that differ
    from it (`config.pipeline.params.chunk_size 64 → 256`, at most `MAX_CHANGES` and a
    count of the rest); (None, []) when there is no previous run or nothing changed."""
    before = previous_run(store, info)
    if before is None or before.manifest is None or info.manifest is None:
        return None, []
    changes = named_changes(before.manifest, info.manifest)
    return (before.run_id, changes) if changes else (None, [])


def run_settings_change(store: ResultsStore, run_id: str) -> tuple[str | None, list[str]]:
    """`settings_change` of a run named by id (the Question page), as the store last saw it."""
    return settings_change(store, store.run(run_id))


def named_changes(before: RunManifest, after: RunManifest) -> list[str]:
    """`runs.manifest.settings_changes`, at most `MAX_CHANGES` and `and 3 more`."""
    changes = settings_changes(before, after)
    if len(changes) > MAX_CHANGES:
        changes = [*changes[:MAX_CHANGES], f"and {len(changes) - MAX_CHANGES} more"]
    return changes


def series_flaky(
    store: ResultsStore, info: RunInfo, exclude_runs: Iterable[str] = ()
) -> pd.DataFrame:
    """The flaky questions of `info`'s series (see `flaky_questions` for the columns),
    plus `flaky_note`: `flipped 3× in 7 runs of bm25-top5 with the same settings`; empty
    without a manifest."""
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
        runs=same_settings(store, info),
    )
    if df.empty:
        return df.assign(flips=pd.Series(dtype=int), flaky_note=pd.Series(dtype=str))
    flips = df["verdict_flips"].astype(int).clip(lower=df["correctness_flips"].astype(int))
    notes = [
        f"flipped {f}× in {n} runs of {config} with the same settings"
        for f, n in zip(flips, df["n_runs"], strict=True)
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


def flaky_questions(
    store: ResultsStore,
    *,
    dataset: str | None = None,
    dataset_version: str | None = None,
    correctness_threshold: float = DEFAULT_THRESHOLDS.correctness_min,
    min_runs: int = 2,
    config: str | None = None,
    exclude_runs: Iterable[str] = (),
    runs: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Questions whose outcome flips between consecutive runs of the same dataset.

    A verdict flip is failure_type changing between `ok` and not ok; a correctness flip is
    answer_correctness crossing `correctness_threshold`. `dataset` defaults to the dataset of
    the newest run; `config` keeps the runs of one config name (flakiness proper: the same
    pipeline answering differently); `runs` keeps only those runs (`flaky.series_flaky`:
    the runs of one config's settings); `exclude_runs` leaves runs out (a comparison asks
    what was known before the runs it compares). Columns: question_id, n_runs, n_ok,
    verdict_flips, correctness_flips, correctness_min, correctness_max. The result is
    memoised on the store, and in the cache directory, until a refresh sees a change (it
    scans every run's narrow rows).
    """
    exclude = tuple(sorted(validate_run_id(r) for r in exclude_runs))
    only = None if runs is None else tuple(sorted(validate_run_id(r) for r in runs))
    key = ("flaky", dataset, opt_str(dataset_version), float(correctness_threshold), min_runs)
    key += (config, exclude) if config is not None or exclude else ()
    key += (only,) if only is not None else ()
    return store.memo(
        key,
        lambda: cache_retry(
            store,
            lambda: _flaky(
                store,
                dataset,
                dataset_version,
                correctness_threshold,
                min_runs,
                config,
                exclude,
                only,
            ),
        ),
        persist=True,
    )


def _flaky(
    store: ResultsStore,
    dataset: str | None,
    dataset_version: str | None,
    correctness_threshold: float,
    min_runs: int,
    config: str | None = None,
    exclude: tuple[str, ...] = (),
    only: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    with (
        store.cursor() as cur,
        store.summary_source(cur) as runs,
        store.metrics_source(cur) as rows,
    ):
        if dataset is None:
            q = sql.RUNS_OVERVIEW.format(summary=runs.sql, nan="")
            everything = dict.fromkeys(("config", "dataset", "dataset_version", "status"))
            newest = frame(cur, q, {**runs.params, "tags": [], **everything})
            if newest.empty:
                return pd.DataFrame(columns=["question_id", "n_runs", "verdict_flips"])
            dataset = str(newest["dataset_name"].iloc[0])
        q = sql.FLAKY_QUESTIONS.format(summary=runs.sql, metrics=rows.sql)
        params = {
            "dataset": dataset,
            "dataset_version": opt_str(dataset_version),
            "threshold": float(correctness_threshold),
            "min_runs": int(min_runs),
            "config": config,
            "exclude": list(exclude),
            "any_run": only is None,
            "runs": list(only or ()),
        }
        return frame(cur, q, {**runs.params, **rows.params, **params})
