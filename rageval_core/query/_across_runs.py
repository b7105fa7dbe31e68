"""Views across runs, read from the derived cache: the runs overview, a figure's trend, the
recall curve, cost against quality, failure counts.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from rageval_core.catalogue import (
    DEFAULT_KS,
)
from rageval_core.errors import ConfigError
from rageval_core.models import FAILURE_TYPES
from rageval_core.query import _sql as sql
from rageval_core.query._previous import previous_run_ids
from rageval_core.query._shared import (
    CHART_RUNS,
    SUMMARY_DOUBLES,
    allowed_name,
    cache_retry,
    empty_doubles,
    expand_declared,
    figure_sql,
    frame,
    nan_as,
    opt_str,
    over_summaries,
    strings,
)
from rageval_core.runs.layout import validate_run_id
from rageval_core.runs.summary import SUMMARY_KEYS
from rageval_core.store.results import ResultsStore

TREND_METRICS: tuple[str, ...] = tuple(k for k in SUMMARY_KEYS)
"""Run-level figures a trend may plot (`<metric>` mean, `<metric>_p10`, rates, p95s…)."""


def runs_overview(
    store: ResultsStore,
    *,
    tags: Iterable[str] | str | None = None,
    config: str | None = None,
    dataset: str | None = None,
    dataset_version: str | None = None,
    status: str | None = None,
) -> pd.DataFrame:
    """Every run, newest first: manifest fields + aggregates (columns of SUMMARY_SCHEMA),
    and `previous_run`: the id of the run's previous run (`previous.previous_runs`, over
    every run whatever the filters), None when it has none.

    Filters: runs carrying all of `tags`, config name, dataset name / version, status.
    Running runs are included with aggregates over their journal so far. Declared
    figures (`store.catalogue()`) are columns too, NULL for runs that do not declare them.
    """
    params = {
        "tags": strings(tags),
        "config": config,
        "dataset": dataset,
        "dataset_version": opt_str(dataset_version),
        "status": status,
    }

    def compute() -> pd.DataFrame:
        fingerprint = store.fingerprint()
        with store.cursor() as cur, store.summary_source(cur) as src:
            empty = empty_doubles(store, fingerprint, cur, src, SUMMARY_DOUBLES)
            nan = f" REPLACE ({', '.join(map(nan_as, sorted(empty)))})" if empty else ""
            q = sql.RUNS_OVERVIEW.format(summary=src.sql, nan=nan)
            return frame(cur, q, {**src.params, **params})

    df = cache_retry(store, compute)
    cat = store.catalogue()
    df = expand_declared(df, (f for f in cat.figures if cat.figures[f].declared))
    previous = previous_run_ids(store)
    df["previous_run"] = pd.Series(
        [previous.get(r) for r in df["run_id"].tolist()], index=df.index, dtype=object
    )
    return df


def metric_trend(
    store: ResultsStore,
    metric: str,
    *,
    config: str | None = None,
    dataset: str | None = None,
    dataset_version: str | None = None,
    tags: Iterable[str] | str | None = None,
    limit: int = CHART_RUNS,
) -> pd.DataFrame:
    """One run-level figure over time, oldest first: the newest `limit` matching runs.

    Columns: run_id, created_at, config_name, dataset_name, dataset_version, status,
    value (the figure), p10 (the run's 10th percentile when `metric` is a quality metric).
    """
    cat = store.catalogue()
    allowed_name(metric, tuple(cat.figures), "metric")
    has_p10 = metric in cat.measure_names("quality")
    return over_summaries(
        store,
        sql.METRIC_TREND,
        {
            "tags": strings(tags),
            "config": config,
            "dataset": dataset,
            "dataset_version": opt_str(dataset_version),
            "metric": metric,
            "metric_p10": f"{metric}_p10",
            "limit": int(limit),
        },
        value=figure_sql(cat, metric, "metric"),
        p10=figure_sql(cat, f"{metric}_p10", "metric_p10") if has_p10 else "CAST(NULL AS DOUBLE)",
    )


def recall_curve(store: ResultsStore, run_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Mean recall@k at each K per run (columns run_id, created_at, config_name, k, recall)."""
    ids = [validate_run_id(r) for r in run_ids or ()]
    cases = " ".join(f'WHEN {k} THEN s."recall_at_{k}"' for k in DEFAULT_KS)
    return over_summaries(
        store, sql.RECALL_CURVE, {"ks": list(DEFAULT_KS), "run_ids": ids}, cases=cases
    )


def cost_quality(
    store: ResultsStore,
    *,
    quality: str = "answer_correctness",
    run_ids: Iterable[str] | None = None,
    limit: int = CHART_RUNS,
) -> pd.DataFrame:
    """Quality against p95 latency and cost per question, one row per run, best first:
    the runs `run_ids` names, else the newest `limit` (domination is pairwise: n²).

    `quality` is one of `cost_quality_metrics(store)` (a quality mean or its p10, higher
    is better, declared ones included); anything else is a ConfigError naming it.

    `dominated_latency` / `dominated_cost`: another run is at least as good on quality and
    at least as cheap on that axis, strictly better on one. `dominated` uses both axes;
    rows with `dominated == False` form the Pareto frontier. A run whose latency or cost is
    unknown (NULL: no question reported one) is on no frontier of that axis: its flag is
    NA, and it neither dominates nor is dominated there.
    """
    allowed = cost_quality_metrics(store)
    if quality not in allowed:
        # The frontier treats higher as better: a latency, cost or rate would rank backwards.
        raise ConfigError(
            f"cost_quality: {str(quality)[:60]!r} is not a higher-is-better quality metric; "
            f"expected one of: {', '.join(allowed)}"
        )
    ids = [validate_run_id(r) for r in run_ids or ()]
    df = over_summaries(
        store,
        sql.COST_QUALITY,
        {"run_ids": ids, "quality": quality, "limit": int(limit)},
        quality=figure_sql(store.catalogue(), quality, "quality"),
    )
    # Domination is a pairwise comparison of a few hundred per-run rows, not an aggregate.
    qv = df["quality"].to_numpy(dtype=float, na_value=np.nan)
    lat = df["latency_p95_ms"].to_numpy(dtype=float, na_value=np.nan)
    cost = df["cost_per_question"].to_numpy(dtype=float, na_value=np.nan)
    df["dominated_latency"] = _dominated_where_known(qv, lat)
    df["dominated_cost"] = _dominated_where_known(qv, cost)
    df["dominated"] = _dominated_where_known(qv, lat, cost)
    return df


def cost_quality_metrics(store: ResultsStore) -> tuple[str, ...]:
    """Qualities `cost_quality` ranks by: higher-is-better quality figures, declared too."""
    cat = store.catalogue()
    return tuple(n for n in cat.figure_names("quality") if not cat.lower_is_better(n))


def _dominated_where_known(quality: np.ndarray, *costs: np.ndarray) -> pd.arrays.BooleanArray:
    """`_dominated` among the rows whose every cost is known; NA for the others."""
    known = np.logical_and.reduce([~np.isnan(c) for c in costs])
    out = np.zeros(len(quality), dtype=bool)
    out[known] = _dominated(quality[known], *(c[known] for c in costs))
    return pd.arrays.BooleanArray(out, ~known)


def _dominated(quality: np.ndarray, *costs: np.ndarray) -> np.ndarray:
    """True where another row has quality ≥ and every cost ≤, strictly better somewhere."""
    ge = quality[None, :] >= quality[:, None]  # [i, j]: j at least as good as i
    gt = quality[None, :] > quality[:, None]
    for c in costs:
        ge &= c[None, :] <= c[:, None]
        gt |= c[None, :] < c[:, None]
    return (ge & gt).any(axis=1)


def failure_counts(store: ResultsStore, run_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Questions per failure type per run, long form: run_id, created_at, failure_type, n, share."""
    ids = [validate_run_id(r) for r in run_ids or ()]
    cases = " ".join(f"WHEN '{ft}' THEN s.\"failure_{ft}\"" for ft in FAILURE_TYPES)
    return over_summaries(
        store, sql.FAILURE_COUNTS, {"types": list(FAILURE_TYPES), "run_ids": ids}, cases=cases
    )
