"""When a change between two runs is noise (docs/metrics.md, "Reading a change").

A score's change is noise when its paired bootstrap interval (`compare_runs`) includes 0;
a latency figure has no such interval (a quantile of timings that depend on the machine's
load), so its change is noise when it is within the spread of the earlier runs of the
same config, settings and dataset version (`flaky.same_settings`: a chunk size changed
under one name moves latency by itself, and that move is no measure of noise).
`Metric.reading` applies the rule; this module finds the interval and the spread. Used by
the Runs tiles, Compare and the end-of-run headline.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import numpy as np
import pandas as pd

from rageval_core.catalogue import BUILTIN, Catalogue
from rageval_core.numbers import absent

MIN_EARLIER = 2
"""Earlier runs of a config needed to speak of their spread: one run has none."""


def intervals(metrics: pd.DataFrame, run_id: str) -> dict[str, tuple[float, float]]:
    """`Comparison.metrics` rows of `run_id` as {metric: (ci_low, ci_high)}, where paired."""
    rows = metrics[metrics["run_id"] == run_id]
    return {
        str(m): (float(lo), float(hi))
        for m, lo, hi in zip(rows["metric"], rows["ci_low"], rows["ci_high"], strict=True)
        if not absent(lo) and not absent(hi)
    }


def spread(values: Iterable[object]) -> float | None:
    """max − min of the values present, when there are at least `MIN_EARLIER`."""
    xs = [float(v) for v in values if not absent(v)]  # type: ignore[arg-type]
    return float(np.ptp(xs)) if len(xs) >= MIN_EARLIER else None


def series_spread(
    runs: pd.DataFrame, run_id: str, metric: str, same: Collection[str]
) -> float | None:
    """The spread of `metric` over the complete runs created before `run_id` among `same`,
    the runs of its config with its settings (`runs` is a `runs_overview` frame)."""
    if metric not in runs.columns:
        return None
    me = runs[runs["run_id"] == run_id]
    if me.empty:
        return None
    earlier = (
        runs["run_id"].isin(list(same))
        & (runs["status"] == "complete")
        & (runs["created_at"] < me.iloc[0]["created_at"])
    )
    return spread(runs.loc[earlier, metric].tolist())


def latency_spreads(
    runs: pd.DataFrame,
    run_id: str,
    names: Iterable[str],
    same: Collection[str],
    cat: Catalogue = BUILTIN,
) -> dict[str, float]:
    """`series_spread` of each latency figure among `names`."""
    out = {}
    for n in names:
        if cat.entry(n).unit == "ms":
            s = series_spread(runs, run_id, n, same)
            if s is not None:
                out[n] = s
    return out
