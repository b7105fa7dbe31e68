"""The run before: the one rule every "change since last time" uses.

A run's previous run is the newest complete run created before it with the same config
name and the same dataset version (dataset name and version): a change of either makes
figures incomparable, so no delta is shown rather than a misleading one. "Before" is the
manifests' `created_at`, then the run id; "complete" means status `complete` and rows to
read. The end-of-run headline, `rageval check --baseline latest`, `rageval report`, the
Runs page's Δ and the Compare page's default baseline all ask `previous_run` or
`previous_runs`, over the runs the store lists (`ResultsStore.listed_runs`): no manifest
it holds is read again. The rule is written for users in docs/ci.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rageval_core.errors import shown
from rageval_core.models import RunManifest
from rageval_core.runs.manifest import config_name
from rageval_core.runs.reading import RunInfo
from rageval_core.store.results import ResultsStore


@dataclass(frozen=True)
class Series:
    """What a run's figures are comparable within: its config name and dataset version."""

    config: str
    dataset: str
    version: str

    def describe(self) -> str:
        """`config bm25 on dataset qa v2`, as `rageval check` explains its baseline (each
        name as written, on one bounded line: it is the user's text)."""
        config, dataset = shown(self.config, bare=True), shown(self.dataset, bare=True)
        version = shown(self.version, bare=True)
        return f"config {config if self.config else '(unnamed)'} on dataset {dataset} v{version}"


def series_of(info: RunInfo) -> Series | None:
    """The run's series; None when its manifest cannot be read (it has no previous run)."""
    return None if info.manifest is None else Series(*_series_key(info.manifest))


def _series_key(m: RunManifest) -> tuple[str, str, str]:
    return (config_name(m), m.dataset.name, str(m.dataset.version))


def previous_runs(runs: Iterable[RunInfo]) -> dict[str, RunInfo]:
    """Run id → its previous run among `runs`, for each run that has one: one pass per
    series in creation order (10,000 runs in milliseconds, no pairwise search)."""
    by_series: dict[tuple[str, str, str], list[tuple[str, str, RunInfo]]] = {}
    for r in runs:
        m = r.manifest
        if m is not None:  # `series_of` as a tuple: 10,000 frozen dataclasses cost
            by_series.setdefault(_series_key(m), []).append((m.created_at, r.run_id, r))
    out: dict[str, RunInfo] = {}
    for members in by_series.values():
        members.sort(key=_created)
        last: RunInfo | None = None
        for _, rid, r in members:
            if last is not None:
                out[rid] = last
            if r.status == "complete" and r.readable:
                last = r
    return out


def previous_run(store: ResultsStore, info: RunInfo) -> RunInfo | None:
    """`info`'s previous run among the runs the store lists (`info` as given: a run
    written since the listing, or one looked at afresh, is judged as the caller sees it)."""
    others = (r for r in store.listed_runs() if r.run_id != info.run_id)
    return previous_runs([*others, info]).get(info.run_id)


def previous_run_ids(store: ResultsStore) -> dict[str, str]:
    """Run id → its previous run's id, for every run of the store's state that has one."""
    return {rid: prev.run_id for rid, prev in previous_runs(store.listed_runs()).items()}


def _created(member: tuple[str, str, RunInfo]) -> tuple[str, str]:
    return (member[0], member[1])
