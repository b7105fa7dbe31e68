"""The runs table and the Runs page: headline figures, deltas, run tags and labels,
problems and stale runs, the runs worth opening first."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from rageval_core.catalogue import BUILTIN, TABLE_FIRST, Catalogue, failure_label
from rageval_core.errors import shown
from rageval_core.links import md_escape
from rageval_core.models import FAILURE_TYPES
from rageval_core.runs.layout import RUN_ID_RE
from rageval_core.runs.reading import RunInfo


def key_metrics(cat: Catalogue) -> dict[str, str]:
    """The Runs table's headline figures (declared means too) and their labels."""
    return {m: cat.label(m) for m in cat.figure_names("runs")}


TABLE_RUNS = 200
"""The newest runs a table of runs sends (the Runs table, a question's history): at 1,000
runs each sent 400 KB, the largest part of its page's browser time (docs/scale.md)."""


def tile_metrics(names: Sequence[str], latest: pd.Series) -> list[str]:
    """The latest run's tiles: every built-in figure (an unknown one is "–", which says
    something), and only the declared metrics this run has — another tool's import
    declaring `promptfoo pass` gives the other runs no tile that could never be filled."""
    return [n for n in names if n in BUILTIN.figures or pd.notna(latest.get(n))]


def quality_metrics(cat: Catalogue) -> tuple[str, ...]:
    """Measures with a mean and a p10 (trend, tails, cost vs quality, range filters)."""
    return cat.measure_names("quality")


def slider_range(
    lo: float | None, hi: float | None, bounds: tuple[float, float] = (0.0, 1.0)
) -> tuple[float, float]:
    """A (low, high) range from a URL as a slider's value: open ends filled, clamped to
    the measure's `bounds` (0..1 for a score, a declared metric's own range)."""
    first, last = bounds
    a = min(max(first if lo is None else lo, first), last)
    b = min(max(last if hi is None else hi, first), last)
    return (min(a, b), max(a, b))


def with_deltas(
    runs: pd.DataFrame, metrics: Iterable[str], among: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Add `<metric>_delta` = this run minus its previous run (the `previous_run` column
    of `runs_overview`), whose figures are looked up in `among` (every run: a filter may
    hide the previous run); NaN for a run without one."""
    out = runs.copy()
    values = (runs if among is None else among).set_index("run_id")
    previous = out["previous_run"].tolist()
    for m in metrics:
        before = values[m].astype(float).reindex(previous).to_numpy()
        out[f"{m}_delta"] = out[m].astype(float).to_numpy() - before
    return out


def newest_with(runs: pd.DataFrame, metric: str, n: int) -> list[str]:
    """The newest `n` runs whose mean of `metric` is known (the overview, newest first):
    overlays default to runs that can be drawn, not to the newest whatever they hold."""
    if metric not in runs.columns:  # a measure the overview does not summarise
        return list(runs["run_id"].head(n))
    return list(runs.loc[runs[metric].notna(), "run_id"].head(n))


def default_columns(rows: pd.DataFrame) -> tuple[str, ...]:
    """Diagnose's columns unless the URL chose others: what a failing question is opened
    for (`TABLE_FIRST`) and the retrieval figure that explains a miss (span recall on a
    run scored by spans): all within 1280 px, no scrolling."""
    spans = "span_recall_at_5" in rows and rows["span_recall_at_5"].notna().any()
    return (*TABLE_FIRST, "span_recall_at_5" if spans else "recall_at_5")


def run_tags(runs: pd.DataFrame) -> list[str]:
    """Every tag used by any run, sorted (options of the tag filter)."""
    # tolist() first, str() on the distinct tags only: iterating the Arrow column was 10 ms
    tags = {t for ts in runs["tags"].dropna().tolist() for t in ts}
    return sorted({str(t) for t in tags})


def distinct(values: pd.Series) -> list[str]:
    # pd.unique first: str() on a few distinct values, not on every one of 10,000 runs
    return sorted({str(v) for v in pd.unique(values.dropna()) if str(v)})


def run_label(runs: pd.DataFrame) -> dict[str, str]:
    """run id -> `run id (status)` for pickers; running and failed runs say so."""
    # two columns zipped, not itertuples over every column: 10,000 runs in ms, not seconds
    return {
        rid: rid if status == "complete" else f"{rid} ({status})"
        for rid, status in zip(runs["run_id"].tolist(), runs["status"].tolist(), strict=True)
    }


def problems_markdown(broken: Mapping[str, Sequence[str]], limit: int = 600) -> str:
    """One bullet per run: its id, then its problems on one line of at most `limit`
    characters. Problems quote file contents (a manifest value, a folder name), so they are
    escaped: a damaged file must not draw a link or an image in the dashboard."""
    lines = []
    for run_id, messages in broken.items():
        who = (
            f"`{run_id}`"
            if RUN_ID_RE.fullmatch(run_id)
            else md_escape(shown(run_id, 100, bare=True))
        )
        lines.append(f"- {who}: {md_escape(shown('; '.join(messages), limit, bare=True))}")
    return "\n".join(lines)


def failure_headline(counts: Mapping[str, int]) -> str:
    """`23 of 99 questions failed: 9 retrieval miss, 8 unfaithful, …` (largest first)."""
    total = sum(int(n) for n in counts.values())
    failed = {ft: int(n) for ft, n in counts.items() if ft != "ok" and n}
    n_failed = sum(failed.values())
    if not total:
        return "No questions in this run yet."
    if not n_failed:
        return f"All {total} questions passed."
    parts = sorted(failed.items(), key=lambda kv: (-kv[1], FAILURE_TYPES.index(kv[0])))
    detail = ", ".join(f"{n} {failure_label(ft)}" for ft, n in parts)
    return f"{n_failed} of {total} questions failed: {detail}."


STALE_SHOWN = 10
"""Stale question ids a note names before "and N more"."""


def stale_questions_note(runs: Sequence[RunInfo], named: Sequence[str | None]) -> list[str]:
    """The app-wide word on dataset questions left out as stale (plain text: `ui.say`
    escapes it), for the runs the URL names, else the newest run: one line per such run
    that left any out."""
    wanted = [r for r in named if r]
    if wanted:
        shown_runs = [r for r in runs if r.run_id in wanted]
    else:
        dated = [r for r in runs if r.manifest is not None]
        shown_runs = [max(dated, key=lambda r: r.manifest.created_at)] if dated else []
    notes = []
    for r in shown_runs:
        ids = list(r.stale_questions)
        if not ids:
            continue
        more = f" and {len(ids) - STALE_SHOWN} more" if len(ids) > STALE_SHOWN else ""
        notes.append(
            f"{len(ids)} stale question{'s' if len(ids) != 1 else ''} left out of run "
            f"{r.run_id}: {', '.join(ids[:STALE_SHOWN])}{more} — their gold no longer "
            "matches the documents; see docs/datasets.md#refreshing-gold"
        )
    return notes


def stale_note(info: RunInfo) -> str:
    """The sidebar's and Runs page's word on a run whose writer died: it stays "running"
    and will not finish unless someone resumes it."""
    ago = max(0.0, time.time() - (info.last_active or time.time())) / 60
    shards = info.manifest.shards if info.manifest else 1
    more = f" (with `--shard K/{shards}` for each unfinished shard)" if shards > 1 else ""
    return (
        f"Stale: `{info.run_id}` has shown no sign of life for {ago:.0f} min: its writer "
        f"stopped without finishing it. Finish it with "
        f"`rageval run CONFIG.yaml --resume {info.run_id}`{more}."
    )


def default_compare(runs: pd.DataFrame) -> tuple[str, ...]:
    """(baseline, candidate) Compare opens on: the newest complete run and its previous
    run (`previous_run` of `runs_overview`, newest first); the latest two runs when no
    complete run has one."""
    done = runs[(runs["status"] == "complete") & runs["previous_run"].notna()]
    if not done.empty:
        first = done.iloc[0]
        return (str(first["previous_run"]), str(first["run_id"]))
    return tuple(reversed(runs["run_id"].head(2).tolist()))


def widest_gap_run(runs: pd.DataFrame, among: Sequence[str]) -> str | None:
    """The run in `among` whose recall@20 beats its recall@5 the most: the one with the
    most rerank candidates, so the Retrieval page opens on a run where they exist."""
    picked = runs[runs["run_id"].isin(among)]
    gap = picked["recall_at_20"] - picked["recall_at_5"]
    if picked.empty or not (gap > 0).any():
        return None
    return str(picked.loc[gap.idxmax(), "run_id"])
