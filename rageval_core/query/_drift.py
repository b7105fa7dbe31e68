"""Judge drift: a judge that answered two runs under one model name with another model
(docs/judges.md, "Judge drift").

An HTTP judge's rows record what its endpoint said served each reply
(`judge_served_model`, `judge_fingerprint`), gathered per run as `runs.summary.SERVED_KEYS`.
Two runs that asked the same judge (kind and model name, as their manifests record it)
drifted when both know what served them and it differs: the served models, else the
`system_fingerprint`s. Unknown is never drift: an offline judge, an endpoint that sends
no `model`, a run written before rows recorded it. `compare` and `check` say so for the
runs they read (`drift_notes`, from the runs' own files); the Judge page lists it between
consecutive runs of one config and judge (`judge_drift`, from the derived cache).
Served names come from a server: the sentences quote them bounded, on one line
(`errors.shown`); each reader escapes them for its medium.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from rageval_core.errors import shown
from rageval_core.query import _sql as sql
from rageval_core.query._shared import cache_retry
from rageval_core.runs.reading import RunInfo
from rageval_core.runs.source import bind, open_run, reading_results
from rageval_core.runs.summary import SERVED_KEYS, SERVED_SELECT
from rageval_core.store.results import ResultsStore

DRIFTS_SHOWN = 50
"""The newest drifts `judge_drift` lists (each is a pair of runs; a page lists no more)."""


@dataclass(frozen=True)
class RunServed:
    """What served one run's judge: the judge asked (`kind`, `model` of its manifest) and
    the distinct served models and fingerprints its rows record (empty: none said)."""

    run_id: str
    kind: str | None
    model: str | None
    models: tuple[str, ...] = ()
    fingerprints: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgeDrift:
    """Two runs of one judge (the same `kind` and `model` asked) served by another model
    (`what` is "model") or by the same model under another `system_fingerprint`
    ("fingerprint"), from run `before` to run `after`."""

    before: RunServed
    after: RunServed
    what: str

    @property
    def was(self) -> tuple[str, ...]:
        return self.before.models if self.what == "model" else self.before.fingerprints

    @property
    def now(self) -> tuple[str, ...]:
        return self.after.models if self.what == "model" else self.after.fingerprints

    def sentence(self) -> str:
        """The line `compare`, `check` and the Judge page print, served names quoted
        bounded on one line (escaping them for markdown or HTML is the reader's)."""

        def names(values: tuple[str, ...]) -> str:
            return ", ".join(shown(v, 80, bare=True) for v in values)

        b, a = self.before, self.after
        asked = f"{shown(b.kind, 40, bare=True)} judge {shown(b.model, 80, bare=True)}"
        change = f"{names(self.was)} → {names(self.now)}"
        if self.what == "fingerprint":
            change = f"{names(a.models) + ', ' if a.models else ''}system_fingerprint {change}"
        return (
            f"judge drift between {b.run_id} and {a.run_id}: the {asked} was served {change}; "
            "the judge's figures may move with it, not with the pipeline"
        )


def drifted(before: RunServed, after: RunServed) -> JudgeDrift | None:
    """The drift from `before` to `after` (the rule of the module docstring), else None."""
    if before.kind is None or before.model is None:
        return None
    if (before.kind, before.model) != (after.kind, after.model):
        return None  # another judge asked: a change the configs show, not drift
    if before.models and after.models and before.models != after.models:
        return JudgeDrift(before, after, "model")
    if before.fingerprints and after.fingerprints and before.fingerprints != after.fingerprints:
        return JudgeDrift(before, after, "fingerprint")
    return None


def run_served(store: ResultsStore, cur: duckdb.DuckDBPyConnection, info: RunInfo) -> RunServed:
    """What served `info`'s judge, read from its own files (a run written before rows
    recorded it reads the columns as NULL: nothing said)."""
    columns = tuple(SERVED_KEYS.values())
    with open_run(cur, info, fs=store.fs, to_url=store.to_url, columns=columns) as src:
        q = sql.RUN_SERVED.format(served=SERVED_SELECT, src=src.sql)
        with reading_results(info.run_id):
            ((models, fingerprints),) = cur.execute(q, bind(q, src.params)).fetchall()
    judge = info.manifest.judge if info.manifest else None
    return RunServed(
        info.run_id,
        judge.kind if judge else None,
        judge.model if judge else None,
        tuple(models or ()),
        tuple(fingerprints or ()),
    )


def drift_notes(store: ResultsStore, infos: Sequence[RunInfo]) -> list[str]:
    """The drift sentence of each run after the first (the baseline) whose judge drifted
    from the baseline's, for `compare` and `check`."""
    with store.cursor() as cur:
        served = [run_served(store, cur, i) for i in infos]
    drifts = (drifted(served[0], s) for s in served[1:])
    return [d.sentence() for d in drifts if d is not None]


def judge_drift(store: ResultsStore, *, limit: int = DRIFTS_SHOWN) -> list[JudgeDrift]:
    """Drifts between consecutive runs (by creation) of one config name and judge that
    both record what served them, newest first, at most `limit` (the Judge page)."""

    def compute() -> list[tuple]:
        with store.cursor() as cur, store.summary_source(cur) as src:
            q = sql.JUDGE_DRIFT_PAIRS.format(summary=src.sql)
            return cur.execute(q, {**src.params, "limit": int(limit)}).fetchall()

    out = []
    for kind, model, *runs in cache_retry(store, compute):
        before, after = (
            RunServed(run, kind, model, tuple(models or ()), tuple(prints or ()))
            for run, models, prints in (runs[:3], runs[3:])
        )
        drift = drifted(before, after)
        if drift is not None:
            out.append(drift)
    return out
