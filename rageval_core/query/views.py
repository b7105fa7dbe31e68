"""One typed function per question the dashboard asks (docs/dashboard.md).

Per-run functions read the run's own files by path through `ResultsStore.run_source`;
cross-run functions read the derived cache through `summary_source` / `metrics_source`.
Metric names, sort keys and columns are checked against the whitelists below and raise
`ConfigError`; every user value (search text, tags, ids, ranges) is a bound parameter.

Metrics runs declare widen those whitelists: per run, with that run's own declarations
(`store.run_catalogue`, whose names quote as columns of its files); across runs, with
every run's (`store.catalogue()`), read from the cache's `declared` map by a bound
parameter (`declared[$metric]`), never spliced in as SQL.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from rageval_core import numbers
from rageval_core.catalogue import (
    BUILTIN,
    COST_COLUMNS,
    DECLARED_NAME_RE,
    DEFAULT_KS,
    LATENCY_COLUMNS,
    QUESTION_METRICS,
    SORT_KEYS,
    Catalogue,
)
from rageval_core.errors import ConfigError, NotFoundError, ResultsError
from rageval_core.metrics.spans import Range, places, relevant, span_gold_ranks
from rageval_core.models import FAILURE_TYPES, Claim, GoldSpan
from rageval_core.query import sql
from rageval_core.query.cache import SUMMARY_SCHEMA
from rageval_core.query.previous import previous_run_ids
from rageval_core.query.source import RunSource, bind, projection, reading_results
from rageval_core.query.store import ResultsStore, run_catalogue
from rageval_core.query.summary import QUALITY_METRICS, SUMMARY_KEYS, run_value_sql
from rageval_core.query.verdicts import QuestionVerdicts, verdicts_from_row
from rageval_core.runs.layout import validate_run_id
from rageval_core.runs.reading import RunInfo
from rageval_core.runs.rows import QUESTION_SCHEMA
from rageval_core.thresholds import DEFAULT_THRESHOLDS

CHART_RUNS = 1_000
"""Newest runs a view over every run returns by default (trend, cost/quality, a question's
history): at 10,000 runs drawing them all took seconds per rerun and showed no more."""

TREND_METRICS: tuple[str, ...] = tuple(k for k in SUMMARY_KEYS)
"""Run-level figures a trend may plot (`<metric>` mean, `<metric>_p10`, rates, p95s…)."""


_QUALITY_DOUBLES = tuple(
    m for m in QUALITY_METRICS if QUESTION_SCHEMA.field(m).type == pa.float64()
)
_SUMMARY_DOUBLES = tuple(f.name for f in SUMMARY_SCHEMA if f.type == pa.float64())
"""The DOUBLE columns a question page / the runs overview selects as NaN where they are
NULL in every row (`_empty_doubles`)."""

_NO_ROWS = f"(SELECT {projection(set(), QUESTION_SCHEMA)} WHERE false)"
"""A source with the row schema and no rows (the shape of a page over an unreadable run)."""
_SEVERITY = (
    "CASE failure_type "
    + " ".join(f"WHEN '{ft}' THEN {i}" for i, ft in enumerate(FAILURE_TYPES))
    + f" ELSE {len(FAILURE_TYPES)} END"
)


def allowed_name(name: str, allowed: Sequence[str], what: str) -> str:
    """`name` if it is one of `allowed` (a metric, a sort key), else ConfigError: such
    names become SQL identifiers, so only whitelisted ones pass."""
    if not isinstance(name, str) or name not in allowed:
        raise ConfigError(
            f"unknown {what} {str(name)[:60]!r}; expected one of: {', '.join(allowed)}"
        )
    return name


def _run(store: ResultsStore, run: str | RunInfo) -> tuple[RunInfo, Catalogue]:
    """The run (`store.run`: as the last refresh saw it) and the catalogue of what its
    files hold. Lenient: a damaged or unreadable run is a page with no rows and its
    problems, not an error; `store.run_info` is the strict check for commands.
    """
    info = store.run(run)
    return info, run_catalogue(info)[0]


def _figure_sql(catalogue: Catalogue, name: str, param: str) -> str:
    """SQL of run-level figure `name` in a summary row: its column for a built-in figure,
    the cache's `declared` map at bound parameter `$param` for a declared one."""
    m = catalogue.metric(name)
    if m is not None and m.declared:
        return f"declared[${param}]"
    return f'"{name}"'


def _expand_declared(df: pd.DataFrame, names: Iterable[str]) -> pd.DataFrame:
    """The cache's `declared` map column as one column per name (NULL where a run has
    none); shapes a few hundred rows already aggregated in SQL."""
    if "declared" not in df.columns:
        return df
    maps = [d if isinstance(d, dict) else {} for d in df["declared"]]
    out = df.drop(columns=["declared"])
    for n in names:
        out[n] = pd.array([d.get(n) for d in maps], dtype="Float64").astype(float)
    return out


def _df(
    cur: duckdb.DuckDBPyConnection,
    q: str,
    params: Mapping[str, Any],
    run_id: str | None = None,
) -> pd.DataFrame:
    with reading_results(run_id):
        return cur.execute(q, bind(q, params)).df()


def _empty_doubles(
    store: ResultsStore,
    fingerprint: str,
    cur: duckdb.DuckDBPyConnection,
    src: RunSource,
    names: Sequence[str],
    run_id: str | None = None,
) -> frozenset[str]:
    """Which of `names` (DOUBLE columns of `src`) are NULL in every row of `src`, memoised
    per store state: `src` must have been opened while the store's fingerprint was
    `fingerprint` (none is named when a refresh came in between).

    The page selects those as NaN (`_nan_as`): what `.df()` makes of a NULL double anyway,
    but `.df()` pays a pandas masked assignment (about 0.65 ms) per column holding a NULL;
    a run without spans or verdicts has 19 such columns per question, 38 per summary. The
    count itself costs about as much, hence the memo.
    """
    if store.fingerprint() != fingerprint:
        return frozenset()
    counts = ", ".join(f'count("{n}")' for n in names)
    q = f"SELECT {counts} FROM {src.sql}"

    def compute() -> frozenset[str]:
        with reading_results(run_id):
            (row,) = cur.execute(q, bind(q, src.params)).fetchall()
        return frozenset(n for n, c in zip(names, row, strict=True) if not c)

    return store.memo(("empty_doubles", fingerprint, run_id, tuple(names)), compute)


def _nan_as(name: str) -> str:
    """`name` as a NaN double: for a query's outer SELECT only (to WHERE, ORDER BY and
    aggregates NaN is a number, not NULL)."""
    return f"CAST('NaN' AS DOUBLE) AS \"{name}\""


def _cache_retry(store: ResultsStore, compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """`compute()` over the derived cache; once more after a refresh if a cache file it
    named is gone (another process or thread rewrote the cache since this store's state)."""
    try:
        return compute()
    except ResultsError as exc:
        if not isinstance(exc.__cause__, duckdb.IOException):
            raise
        store.refresh()
        return compute()


def _over_summaries(store: ResultsStore, template: str, params: dict, **fmt: str) -> pd.DataFrame:
    """Run `template` with `{summary}` as every run's summary row (cached + live runs)."""

    def compute() -> pd.DataFrame:
        with store.cursor() as cur, store.summary_source(cur) as src:
            return _df(cur, template.format(summary=src.sql, **fmt), {**src.params, **params})

    return _cache_retry(store, compute)


def _strings(values: Iterable[str] | str | None) -> list[str]:
    """A filter argument given as one string, several or none, as a list of strings (run
    tags, question tags, failure types: each is then a bound parameter)."""
    if values is None:
        return []
    if isinstance(values, str):
        return [values]
    return [str(v) for v in values]


# ------------------------------------------------------------------------------ cross-run


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
        "tags": _strings(tags),
        "config": config,
        "dataset": dataset,
        "dataset_version": _opt_str(dataset_version),
        "status": status,
    }

    def compute() -> pd.DataFrame:
        fingerprint = store.fingerprint()
        with store.cursor() as cur, store.summary_source(cur) as src:
            empty = _empty_doubles(store, fingerprint, cur, src, _SUMMARY_DOUBLES)
            nan = f" REPLACE ({', '.join(map(_nan_as, sorted(empty)))})" if empty else ""
            q = sql.RUNS_OVERVIEW.format(summary=src.sql, nan=nan)
            return _df(cur, q, {**src.params, **params})

    df = _cache_retry(store, compute)
    cat = store.catalogue()
    df = _expand_declared(df, (f for f in cat.figures if cat.figures[f].declared))
    previous = previous_run_ids(store)
    df["previous_run"] = pd.Series(
        [previous.get(r) for r in df["run_id"].tolist()], index=df.index, dtype=object
    )
    return df


def _opt_str(v: object) -> str | None:
    return None if v is None else str(v)


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
    return _over_summaries(
        store,
        sql.METRIC_TREND,
        {
            "tags": _strings(tags),
            "config": config,
            "dataset": dataset,
            "dataset_version": _opt_str(dataset_version),
            "metric": metric,
            "metric_p10": f"{metric}_p10",
            "limit": int(limit),
        },
        value=_figure_sql(cat, metric, "metric"),
        p10=_figure_sql(cat, f"{metric}_p10", "metric_p10") if has_p10 else "CAST(NULL AS DOUBLE)",
    )


def recall_curve(store: ResultsStore, run_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Mean recall@k at each K per run (columns run_id, created_at, config_name, k, recall)."""
    ids = [validate_run_id(r) for r in run_ids or ()]
    cases = " ".join(f'WHEN {k} THEN s."recall_at_{k}"' for k in DEFAULT_KS)
    return _over_summaries(
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
    df = _over_summaries(
        store,
        sql.COST_QUALITY,
        {"run_ids": ids, "quality": quality, "limit": int(limit)},
        quality=_figure_sql(store.catalogue(), quality, "quality"),
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
    return _over_summaries(
        store, sql.FAILURE_COUNTS, {"types": list(FAILURE_TYPES), "run_ids": ids}, cases=cases
    )


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
            return _df(cur, q, {**runs.params, **rows.params, **params})

    return _expand_declared(_cache_retry(store, compute), store.catalogue().declared_names)


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
    key = ("flaky", dataset, _opt_str(dataset_version), float(correctness_threshold), min_runs)
    key += (config, exclude) if config is not None or exclude else ()
    key += (only,) if only is not None else ()
    return store.memo(
        key,
        lambda: _cache_retry(
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
            newest = _df(cur, q, {**runs.params, "tags": [], **everything})
            if newest.empty:
                return pd.DataFrame(columns=["question_id", "n_runs", "verdict_flips"])
            dataset = str(newest["dataset_name"].iloc[0])
        q = sql.FLAKY_QUESTIONS.format(summary=runs.sql, metrics=rows.sql)
        params = {
            "dataset": dataset,
            "dataset_version": _opt_str(dataset_version),
            "threshold": float(correctness_threshold),
            "min_runs": int(min_runs),
            "config": config,
            "exclude": list(exclude),
            "any_run": only is None,
            "runs": list(only or ()),
        }
        return _df(cur, q, {**runs.params, **rows.params, **params})


# ------------------------------------------------------------------------------ one run


def _range_tuple(ranges: Any) -> tuple[tuple[str, float | None, float | None], ...]:
    if not ranges:
        return ()
    items = ranges.items() if isinstance(ranges, Mapping) else ((r[0], r[1:]) for r in ranges)
    out = []
    for metric, bounds in items:
        lo, hi = (list(bounds) + [None, None])[:2]
        out.append((str(metric), lo, hi))
    return tuple(out)


@dataclass(frozen=True)
class QuestionFilter:
    """Filters of the per-question table; every field optional, all combine with AND.

    `metric_ranges` maps a metric to (min, max), either bound None for open; rows whose
    metric is NULL are excluded by a range on it. `search` matches question or answer,
    case-insensitive, as literal text (% and _ are not wildcards). `tags`: any of them.
    """

    failure_types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    metric_ranges: tuple[tuple[str, float | None, float | None], ...] = ()
    search: str | None = None
    answerable: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "failure_types", tuple(_strings(self.failure_types)))
        object.__setattr__(self, "tags", tuple(_strings(self.tags)))
        object.__setattr__(self, "metric_ranges", _range_tuple(self.metric_ranges))
        for metric, lo, hi in self.metric_ranges:
            # a declared metric is checked against the run's own declarations when the
            # filter is used (`question_rows`); here only its shape
            if not DECLARED_NAME_RE.fullmatch(metric):
                allowed_name(metric, QUESTION_METRICS, "metric")
            for b in (lo, hi):
                if b is not None and (
                    not isinstance(b, (int, float)) or isinstance(b, bool) or math.isnan(b)
                ):
                    raise ConfigError(f"range bound for {metric} must be a number, got {b!r}")


@dataclass(frozen=True)
class QuestionPage:
    """One page of the per-question table plus the number of rows matching the filters."""

    rows: pd.DataFrame
    total: int
    limit: int
    offset: int
    problems: tuple[str, ...] = ()


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _where(f: QuestionFilter) -> tuple[str, dict[str, Any]]:
    where = sql.QUESTION_WHERE
    params: dict[str, Any] = {
        "no_ft": not f.failure_types,
        "failure_types": list(f.failure_types) or [""],
        "tags": list(f.tags),
        "answerable": f.answerable,
        "search": _like_pattern(f.search) if f.search else None,
    }
    for i, (metric, lo, hi) in enumerate(f.metric_ranges):
        if lo is not None:
            where += f' AND "{metric}" >= $lo_{i}'
            params[f"lo_{i}"] = float(lo)
        if hi is not None:
            where += f' AND "{metric}" <= $hi_{i}'
            params[f"hi_{i}"] = float(hi)
    return where, params


def question_rows(
    store: ResultsStore,
    run_id: str | RunInfo,
    filters: QuestionFilter | None = None,
    *,
    sort: str = "severity",
    descending: bool | None = None,
    limit: int = 50,
    offset: int = 0,
) -> QuestionPage:
    """Filtered, sorted, paged per-question rows of one run (read by path).

    Worst first by default: `severity` orders by failure type (error … ok) then answer
    correctness; a quality metric sorts ascending, latency/cost descending, unless
    `descending` says otherwise. NULLs sort last.
    """
    f = filters or QuestionFilter()
    info, cat = _run(store, run_id)
    measures = cat.measure_names()
    allowed_name(sort, (*SORT_KEYS, *cat.declared_names), "sort key")
    for metric, _, _ in f.metric_ranges:
        allowed_name(metric, measures, "metric")
    if not isinstance(limit, int) or not isinstance(offset, int) or limit < 0 or offset < 0:
        raise ConfigError("limit and offset must be non-negative integers")
    if descending is None:
        descending = cat.lower_is_better(sort)
    where, params = _where(f)
    params.update(limit=limit, offset=offset)
    direction = "DESC" if descending else "ASC"
    if sort == "severity":
        order = f"__severity {direction}, answer_correctness {direction} NULLS LAST"
    else:
        order = f'"{sort}" {direction} NULLS LAST'

    def page_sql(src: str, empty: frozenset[str] = frozenset()) -> str:
        cols = (*QUALITY_METRICS, *cat.declared_names)
        return sql.QUESTION_PAGE.format(
            src=f"(SELECT *, {_SEVERITY} AS __severity FROM {src})",
            where=where,
            metric_cols=", ".join(_nan_as(m) if m in empty else f'"{m}"' for m in cols),
            order=order,
        )

    fingerprint = store.fingerprint()
    with store.cursor() as cur, store.run_source(cur, info) as src:
        all_params = {**src.params, **params}
        count_sql = sql.QUESTION_COUNT.format(src=src.sql, where=where)
        try:
            with reading_results(info.run_id):
                count = cur.execute(count_sql, bind(count_sql, all_params)).fetchall()
            empty = (
                frozenset()  # its rows grow between refreshes: a column empty now may fill
                if info.status == "running"
                else _empty_doubles(store, fingerprint, cur, src, _QUALITY_DOUBLES, info.run_id)
            )
            rows = _df(cur, page_sql(src.sql, empty), all_params, info.run_id)
        except ResultsError as exc:
            # Diagnose lists a page's problems: an unreadable run is an empty page
            # that says why, with the columns a readable one has.
            rows = _df(cur, page_sql(_NO_ROWS), params)
            return QuestionPage(rows, 0, limit, offset, (*src.problems, str(exc)))
        return QuestionPage(rows, int(count[0][0]), limit, offset, tuple(src.problems))


TAIL_PCT = 10.0
"""The share of a run's questions a tail view shows (Tails page, report): the bottom tenth."""


@dataclass(frozen=True)
class Tail:
    """The worst `pct`% of one run's questions on `metric` (see `bottom_questions`).

    `rows` (question_id, question, answer, failure_type, tags, value) worst first;
    `n_scored` questions have a value; `n_within` of them are as bad as the last row or
    worse — more than `len(rows)` when ties at the cut were left out.
    """

    metric: str
    pct: float
    rows: pd.DataFrame
    n_scored: int
    n_within: int
    lower_is_better: bool = False
    is_score: bool = True  # its cut is written as a score, not in its unit

    @property
    def cut(self) -> float | None:
        """The value of the last (least bad) question shown."""
        return None if self.rows.empty else float(self.rows["value"].iloc[-1])

    def describe(self, name: str) -> str:
        """`bottom 10%: 63 of 626 questions, faithfulness ≤ 0.50` — exactly what `rows`
        holds, with the ties left out said: `(388 are ≤ 0.50: ties broken by question id)`.
        `name` is the metric as the reader knows it."""
        if self.cut is None:
            return f"no question of this run has a value for {name}"
        high = self.lower_is_better
        side, op = ("top", "≥") if high else ("bottom", "≤")
        cut = _short(self.cut, self.metric, not self.is_score)
        text = (
            f"{side} {self.pct:g}%: {len(self.rows):,} of {self.n_scored:,} questions, "
            f"{name} {op} {cut}"
        )
        if self.n_within > len(self.rows):
            text += f" ({self.n_within:,} are {op} {cut}: ties broken by question id)"
        return text


def _short(v: float, metric: str, raw_units: bool) -> str:
    """A score with two decimals unless that would round it (0.994 stays 0.994); latency
    and cost in their unit (`1,995 ms`, `$0.0013`), another number with four significant
    digits."""
    m = BUILTIN.measures.get(metric)
    if m is not None and m.unit in ("ms", "usd"):
        return m.fmt(v)
    if not raw_units and abs(v * 100 - round(v * 100)) < 1e-9:
        return f"{v:.2f}"
    return numbers.plain(v, 4)


def bottom_questions(
    store: ResultsStore, run_id: str | RunInfo, metric: str, *, pct: float = TAIL_PCT
) -> Tail:
    """The worst `pct`% of the run's questions on `metric`: ceil(n × pct / 100) of the n
    questions with a value (NULL, NaN and ±inf have none; correctness counts on answerable
    questions only, see `run_value_sql`), lowest first.

    Ties at the cut are broken by question id, so the tail is that share whatever the
    ties (a run where most questions score 1.0 still shows a tenth, not all of them).
    For latency and cost the tail is the top: the slowest / dearest first.
    """
    info, cat = _run(store, run_id)
    allowed_name(metric, cat.measure_names(), "metric")
    if (
        not isinstance(pct, (int, float))
        or isinstance(pct, bool)
        or not 0 < pct <= 100  # NaN fails this too
    ):
        raise ConfigError(f"pct must be in (0, 100], got {str(pct)[:20]!r}")
    high = cat.lower_is_better(metric)
    with store.cursor() as cur, store.run_source(cur, info) as src:
        q = sql.BOTTOM_QUESTIONS.format(
            src=src.sql,
            value=run_value_sql(metric),
            direction="DESC" if high else "ASC",
            within=">=" if high else "<=",
            edge="min" if high else "max",
        )
        df = _df(cur, q, {**src.params, "pct": float(pct)}, info.run_id)
    n_scored = int(df["n_scored"].iloc[0]) if len(df) else 0
    n_within = int(df["n_within"].iloc[0]) if len(df) else 0
    rows = df.drop(columns=["n_scored", "n_within"]).reset_index(drop=True)
    return Tail(metric, float(pct), rows, n_scored, n_within, high, cat.is_score(metric))


def rerank_candidates(
    store: ResultsStore, run_id: str | RunInfo, *, lo: int = 6, hi: int = 20
) -> pd.DataFrame:
    """Answerable questions whose first gold chunk sits at rank `lo`..`hi` (1-based).

    These are what a reranker could fix. The rank is recomputed from retrieved_ids and
    gold_ids (a duplicate retrieved id counts at its best rank). Columns: question_id,
    question, failure_type, first_gold_rank, recall_at_5, recall_at_20, mrr.
    """
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi)) or lo > hi:
        raise ConfigError("lo and hi must be integers with lo <= hi")
    info = store.run(run_id)
    with store.cursor() as cur, store.run_source(cur, info) as src:
        q = sql.RERANK_CANDIDATES.format(src=src.sql)
        return _df(cur, q, {**src.params, "lo": lo, "hi": hi}, info.run_id)


def question_tags(store: ResultsStore, run_id: str | RunInfo) -> list[str]:
    """The distinct question tags of one run, sorted (options of a tag filter)."""
    info = store.run(run_id)
    with store.cursor() as cur, store.run_source(cur, info) as src:
        q = sql.QUESTION_TAGS.format(src=src.sql)
        return [str(t) for t in _df(cur, q, src.params, info.run_id)["tag"] if t is not None]


def metric_distribution(store: ResultsStore, run_id: str | RunInfo, metric: str) -> pd.DataFrame:
    """Values of `metric` in one run, ascending (question_id, value): histogram/ECDF.

    The values run-level figures count (`run_value_sql`): correctness of answerable
    questions only, so the curve matches the mean and p10 beside it."""
    info, cat = _run(store, run_id)
    allowed_name(metric, cat.measure_names(), "metric")
    with store.cursor() as cur, store.run_source(cur, info) as src:
        q = sql.DISTRIBUTION.format(src=src.sql, value=run_value_sql(metric))
        return _df(cur, q, src.params, info.run_id)


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


def _none(v: Any) -> Any:
    """`v`, with a NaN float as None (a missing score is one thing on every page)."""
    return None if isinstance(v, float) and math.isnan(v) else v


def question_detail(store: ResultsStore, run_id: str | RunInfo, question_id: str) -> QuestionDetail:
    """One question of one run; NotFoundError when the run has no such question, another
    ResultsError when its files cannot be read."""
    info, cat = _run(store, run_id)
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


# shared with query/spans.py, which reads runs the same way
frame = _df
over_summaries = _over_summaries
