"""One typed function per question the dashboard asks (SPEC §7).

Per-run functions read the run's own files by path through `ResultsStore.run_source`;
cross-run functions read the derived cache through `summary_source` / `metrics_source`.
Metric names, sort keys and columns are checked against the whitelists below and raise
`ConfigError`; every user value (search text, tags, ids, ranges) is a bound parameter.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from rageval_core.errors import ConfigError, NotFoundError, ResultsError
from rageval_core.models import FAILURE_TYPES, Claim
from rageval_core.query import sql
from rageval_core.query.source import bind
from rageval_core.query.store import ResultsStore
from rageval_core.query.summary import (
    COST_COLUMNS,
    LATENCY_COLUMNS,
    QUALITY_METRICS,
    SUMMARY_KEYS,
)
from rageval_core.results import DEFAULT_KS, validate_run_id

QUESTION_METRICS: tuple[str, ...] = (*QUALITY_METRICS, *LATENCY_COLUMNS, *COST_COLUMNS)
"""Per-question numeric columns a caller may name (ranges, distributions, bottom-X%)."""

TREND_METRICS: tuple[str, ...] = tuple(k for k in SUMMARY_KEYS)
"""Run-level figures a trend may plot (`<metric>` mean, `<metric>_p10`, rates, p95s…)."""

COST_QUALITY_METRICS: tuple[str, ...] = tuple(k for m in QUALITY_METRICS for k in (m, f"{m}_p10"))
"""Accepted `quality` of `cost_quality`: higher-is-better quality means and their p10."""

_LOWER_IS_BETTER = frozenset(LATENCY_COLUMNS + COST_COLUMNS)
_SEVERITY = (
    "CASE failure_type "
    + " ".join(f"WHEN '{ft}' THEN {i}" for i, ft in enumerate(FAILURE_TYPES))
    + f" ELSE {len(FAILURE_TYPES)} END"
)

SORT_KEYS: tuple[str, ...] = ("severity", "question_id", "failure_type", *QUESTION_METRICS)
"""Accepted `sort` values of `question_rows`; `severity` = failure type order, then
answer correctness (worst first)."""


def _check(name: str, allowed: Sequence[str], what: str) -> str:
    if not isinstance(name, str) or name not in allowed:
        raise ConfigError(
            f"unknown {what} {str(name)[:60]!r}; expected one of: {', '.join(allowed)}"
        )
    return name


def _rows(
    cur: duckdb.DuckDBPyConnection, q: str, params: Mapping[str, Any]
) -> tuple[list[str], list[tuple]]:
    """Column names and rows of `q`; a results file DuckDB cannot read (missing, or a
    page that does not decompress) is a ResultsError naming it, as in `_df`."""
    try:
        rel = cur.execute(q, bind(q, params))
        return [d[0] for d in rel.description], rel.fetchall()
    except (duckdb.IOException, duckdb.InvalidInputException) as exc:
        raise ResultsError(f"unreadable results file ({exc})") from exc


def _df(cur: duckdb.DuckDBPyConnection, q: str, params: Mapping[str, Any]) -> pd.DataFrame:
    try:
        return cur.execute(q, bind(q, params)).df()
    except (duckdb.IOException, duckdb.InvalidInputException) as exc:
        raise ResultsError(f"unreadable results file ({exc})") from exc


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
        cur = store.cursor()
        try:
            with store.summary_source(cur) as (src, src_params):
                return _df(cur, template.format(summary=src, **fmt), {**src_params, **params})
        finally:
            cur.close()

    return _cache_retry(store, compute)


def _tags(tags: Iterable[str] | str | None) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str):
        return [tags]
    return [str(t) for t in tags]


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
    """Every run, newest first: manifest fields + aggregates (columns of SUMMARY_SCHEMA).

    Filters: runs carrying all of `tags`, config name, dataset name / version, status.
    Running runs are included with aggregates over their journal so far.
    """
    return _over_summaries(
        store,
        sql.RUNS_OVERVIEW,
        {
            "tags": _tags(tags),
            "config": config,
            "dataset": dataset,
            "dataset_version": _opt_str(dataset_version),
            "status": status,
        },
    )


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
) -> pd.DataFrame:
    """One run-level figure over time, oldest first.

    Columns: run_id, created_at, config_name, dataset_name, dataset_version, status,
    value (the figure), p10 (the run's 10th percentile when `metric` is a quality metric).
    """
    _check(metric, TREND_METRICS, "metric")
    p10 = f'"{metric}_p10"' if metric in QUALITY_METRICS else "CAST(NULL AS DOUBLE)"
    return _over_summaries(
        store,
        sql.METRIC_TREND,
        {
            "tags": _tags(tags),
            "config": config,
            "dataset": dataset,
            "dataset_version": _opt_str(dataset_version),
        },
        metric=metric,
        p10=p10,
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
) -> pd.DataFrame:
    """Quality against p95 latency and cost per question, one row per run, best first.

    `quality` is one of `COST_QUALITY_METRICS` (a quality mean or its p10, higher is
    better); anything else is a ConfigError naming it.

    `dominated_latency` / `dominated_cost`: another run is at least as good on quality and
    at least as cheap on that axis, strictly better on one. `dominated` uses both axes;
    rows with `dominated == False` form the Pareto frontier.
    """
    if quality not in COST_QUALITY_METRICS:
        # The frontier treats higher as better: a latency, cost or rate would rank backwards.
        raise ConfigError(
            f"cost_quality: {str(quality)[:60]!r} is not a higher-is-better quality metric; "
            f"expected one of: {', '.join(COST_QUALITY_METRICS)}"
        )
    ids = [validate_run_id(r) for r in run_ids or ()]
    df = _over_summaries(store, sql.COST_QUALITY, {"run_ids": ids}, quality=quality)
    # Domination is a pairwise comparison of a few hundred per-run rows, not an aggregate.
    qv = df["quality"].to_numpy(dtype=float, na_value=np.nan)
    lat = df["latency_p95_ms"].to_numpy(dtype=float, na_value=np.inf)
    cost = df["cost_per_question"].to_numpy(dtype=float, na_value=np.inf)
    df["dominated_latency"] = _dominated(qv, lat)
    df["dominated_cost"] = _dominated(qv, cost)
    df["dominated"] = _dominated(qv, lat, cost)
    return df


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
    store: ResultsStore, question_id: str, *, dataset: str | None = None
) -> pd.DataFrame:
    """One question across every run, oldest first (narrow cache + running runs)."""

    def compute() -> pd.DataFrame:
        cur = store.cursor()
        try:
            with (
                store.summary_source(cur) as (s_src, s_params),
                store.metrics_source(cur) as (
                    m_src,
                    m_params,
                ),
            ):
                q = sql.QUESTION_HISTORY.format(summary=s_src, metrics=m_src)
                return _df(
                    cur,
                    q,
                    {**s_params, **m_params, "question_id": str(question_id), "dataset": dataset},
                )
        finally:
            cur.close()

    return _cache_retry(store, compute)


def flaky_questions(
    store: ResultsStore,
    *,
    dataset: str | None = None,
    dataset_version: str | None = None,
    correctness_threshold: float = 0.5,
    min_runs: int = 2,
) -> pd.DataFrame:
    """Questions whose outcome flips between consecutive runs of the same dataset.

    A verdict flip is failure_type changing between `ok` and not ok; a correctness flip is
    answer_correctness crossing `correctness_threshold`. `dataset` defaults to the dataset of
    the newest run. Columns: question_id, n_runs, n_ok, verdict_flips, correctness_flips,
    correctness_min, correctness_max. The result is memoised on the store, and in the
    cache directory, until a refresh sees a change (it scans every run's narrow rows).
    """
    key = ("flaky", dataset, _opt_str(dataset_version), float(correctness_threshold), min_runs)
    return store.memo(
        key,
        lambda: _cache_retry(
            store,
            lambda: _flaky(store, dataset, dataset_version, correctness_threshold, min_runs),
        ),
        persist=True,
    )


def _flaky(
    store: ResultsStore,
    dataset: str | None,
    dataset_version: str | None,
    correctness_threshold: float,
    min_runs: int,
) -> pd.DataFrame:
    cur = store.cursor()
    try:
        with (
            store.summary_source(cur) as (s_src, s_params),
            store.metrics_source(cur) as (
                m_src,
                m_params,
            ),
        ):
            if dataset is None:
                q = sql.RUNS_OVERVIEW.format(summary=s_src)
                newest = _df(
                    cur,
                    q,
                    {
                        **s_params,
                        "tags": [],
                        "config": None,
                        "dataset": None,
                        "dataset_version": None,
                        "status": None,
                    },
                )
                if newest.empty:
                    return pd.DataFrame(columns=["question_id", "n_runs", "verdict_flips"])
                dataset = str(newest["dataset_name"].iloc[0])
            q = sql.FLAKY_QUESTIONS.format(summary=s_src, metrics=m_src)
            return _df(
                cur,
                q,
                {
                    **s_params,
                    **m_params,
                    "dataset": dataset,
                    "dataset_version": _opt_str(dataset_version),
                    "threshold": float(correctness_threshold),
                    "min_runs": int(min_runs),
                },
            )
    finally:
        cur.close()


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
        object.__setattr__(self, "failure_types", tuple(_tags(self.failure_types)))
        object.__setattr__(self, "tags", tuple(_tags(self.tags)))
        object.__setattr__(self, "metric_ranges", _range_tuple(self.metric_ranges))
        for metric, lo, hi in self.metric_ranges:
            _check(metric, QUESTION_METRICS, "metric")
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
    run_id: str,
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
    _check(sort, SORT_KEYS, "sort key")
    if not isinstance(limit, int) or not isinstance(offset, int) or limit < 0 or offset < 0:
        raise ConfigError("limit and offset must be non-negative integers")
    if descending is None:
        descending = sort in _LOWER_IS_BETTER
    where, params = _where(f)
    metric_cols = ", ".join(f'"{m}"' for m in QUALITY_METRICS)
    cur = store.cursor()
    try:
        with store.run_source(cur, run_id) as src:
            direction = "DESC" if descending else "ASC"
            if sort == "severity":
                order = f"__severity {direction}, answer_correctness {direction} NULLS LAST"
            else:
                order = f'"{sort}" {direction} NULLS LAST'
            page_sql = sql.QUESTION_PAGE.format(
                src=f"(SELECT *, {_SEVERITY} AS __severity FROM {src.sql})",
                where=where,
                metric_cols=metric_cols,
                order=order,
            )
            count_sql = sql.QUESTION_COUNT.format(src=src.sql, where=where)
            all_params = {**src.params, **params, "limit": limit, "offset": offset}
            total = int(_rows(cur, count_sql, all_params)[1][0][0])
            rows = _df(cur, page_sql, all_params)
            return QuestionPage(rows, total, limit, offset, tuple(src.problems))
    finally:
        cur.close()


def bottom_questions(
    store: ResultsStore, run_id: str, metric: str, *, pct: float = 10.0
) -> pd.DataFrame:
    """Questions at or below the run's `pct`-th percentile (continuous) of `metric`.

    For latency and cost the tail is the top: rows at or above the (100 − pct)-th
    percentile, returned slowest / dearest first. Columns: question_id, question, answer,
    failure_type, tags, value, threshold.
    """
    _check(metric, QUESTION_METRICS, "metric")
    if not isinstance(pct, (int, float)) or not 0 < pct <= 100:
        raise ConfigError(f"pct must be in (0, 100], got {pct!r}")
    cur = store.cursor()
    try:
        with store.run_source(cur, run_id) as src:
            q = sql.BOTTOM_QUESTIONS.format(src=src.sql, metric=metric)
            high = metric in _LOWER_IS_BETTER
            if high:
                q = q.replace("<= cut.threshold", ">= cut.threshold").replace(
                    "ORDER BY value,", "ORDER BY value DESC,"
                )
            return _df(cur, q, {**src.params, "q": (1 - pct / 100) if high else pct / 100})
    finally:
        cur.close()


def rerank_candidates(
    store: ResultsStore, run_id: str, *, lo: int = 6, hi: int = 20
) -> pd.DataFrame:
    """Answerable questions whose first gold chunk sits at rank `lo`..`hi` (1-based).

    These are what a reranker could fix. The rank is recomputed from retrieved_ids and
    gold_ids (a duplicate retrieved id counts at its best rank). Columns: question_id,
    question, failure_type, first_gold_rank, recall_at_5, recall_at_20, mrr.
    """
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi)) or lo > hi:
        raise ConfigError("lo and hi must be integers with lo <= hi")
    cur = store.cursor()
    try:
        with store.run_source(cur, run_id) as src:
            q = sql.RERANK_CANDIDATES.format(src=src.sql)
            return _df(cur, q, {**src.params, "lo": lo, "hi": hi})
    finally:
        cur.close()


def question_tags(store: ResultsStore, run_id: str) -> list[str]:
    """The distinct question tags of one run, sorted (options of a tag filter)."""
    cur = store.cursor()
    try:
        with store.run_source(cur, run_id) as src:
            q = sql.QUESTION_TAGS.format(src=src.sql)
            return [str(t) for t in _df(cur, q, src.params)["tag"] if t is not None]
    finally:
        cur.close()


def metric_distribution(store: ResultsStore, run_id: str, metric: str) -> pd.DataFrame:
    """Non-NULL values of `metric` in one run, ascending (question_id, value): histogram/ECDF."""
    _check(metric, QUESTION_METRICS, "metric")
    cur = store.cursor()
    try:
        with store.run_source(cur, run_id) as src:
            q = sql.DISTRIBUTION.format(src=src.sql, metric=metric)
            return _df(cur, q, src.params)
    finally:
        cur.close()


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


def _none(v: Any) -> Any:
    if v is None:
        return None
    try:
        if isinstance(v, float) and math.isnan(v):
            return None
    except TypeError:
        pass
    return v


def question_detail(store: ResultsStore, run_id: str, question_id: str) -> QuestionDetail:
    """One question of one run; NotFoundError when the run has no such question, another
    ResultsError when its files cannot be read."""
    cur = store.cursor()
    try:
        with store.run_source(cur, run_id) as src:
            q = sql.QUESTION_ONE.format(src=src.sql)
            names, rows_ = _rows(cur, q, {**src.params, "question_id": str(question_id)})
            row = rows_[0] if rows_ else None
            problems = tuple(src.problems)
    finally:
        cur.close()
    if row is None:
        raise NotFoundError(f"run {run_id!r} has no question {str(question_id)[:80]!r}")
    r = dict(zip(names, row, strict=True))
    gold = tuple(r.get("gold_ids") or ())
    ids = list(r.get("retrieved_ids") or ())
    texts = list(r.get("retrieved_texts") or ())
    scores = list(r.get("retrieved_scores") or ())
    gold_set = set(gold)
    retrieved = tuple(
        RetrievedRow(
            id=cid,
            text=texts[i] if i < len(texts) and texts[i] is not None else "",
            score=_none(scores[i]) if i < len(scores) else None,
            rank=i + 1,
            is_gold=cid in gold_set,
        )
        for i, cid in enumerate(ids)
    )
    seen = set(ids)
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
        run_id=run_id,
        question_id=str(r["question_id"]),
        question=r.get("question"),
        reference_answer=r.get("reference_answer"),
        answer=r.get("answer"),
        answerable=r.get("answerable"),
        tags=tuple(r.get("tags") or ()),
        failure_type=r.get("failure_type"),
        refused=r.get("refused"),
        metrics={m: _none(r.get(m)) for m in QUALITY_METRICS},
        claims=claims,
        unsupported_claims=tuple(r.get("unsupported_claims") or ()),
        retrieved=retrieved,
        gold_ids=gold,
        missed_gold_ids=tuple(g for g in gold if g not in seen),
        timings={c: _none(r.get(c)) for c in LATENCY_COLUMNS},
        tokens={c: _none(r.get(c)) for c in ("input_tokens", "output_tokens")},
        cost={c: _none(r.get(c)) for c in COST_COLUMNS},
        error=r.get("error"),
        judge_error=r.get("judge_error"),
        problems=problems,
    )
