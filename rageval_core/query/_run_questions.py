"""One run's questions, read from the run's own files: a filtered, sorted page of them, the
worst tenth of a figure, rerank candidates, tags, a figure's distribution.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rageval_core import numbers
from rageval_core.catalogue import (
    BUILTIN,
    DECLARED_NAME_RE,
    QUESTION_METRICS,
    SORT_KEYS,
)
from rageval_core.errors import ConfigError, ResultsError
from rageval_core.models import FAILURE_TYPES
from rageval_core.query import _sql as sql
from rageval_core.query._shared import (
    QUALITY_DOUBLES,
    allowed_name,
    empty_doubles,
    frame,
    nan_as,
    resolve_run,
    strings,
)
from rageval_core.runs.reading import RunInfo
from rageval_core.runs.rows import QUESTION_SCHEMA
from rageval_core.runs.source import bind, projection, reading_results
from rageval_core.runs.summary import QUALITY_METRICS, run_value_sql
from rageval_core.store.results import ResultsStore

_NO_ROWS = f"(SELECT {projection(set(), QUESTION_SCHEMA)} WHERE false)"
"""A source with the row schema and no rows (the shape of a page over an unreadable run)."""


"""A source with the row schema and no rows (the shape of a page over an unreadable run)."""
_SEVERITY = (
    "CASE failure_type "
    + " ".join(f"WHEN '{ft}' THEN {i}" for i, ft in enumerate(FAILURE_TYPES))
    + f" ELSE {len(FAILURE_TYPES)} END"
)


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
        object.__setattr__(self, "failure_types", tuple(strings(self.failure_types)))
        object.__setattr__(self, "tags", tuple(strings(self.tags)))
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
    info, cat = resolve_run(store, run_id)
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
            metric_cols=", ".join(nan_as(m) if m in empty else f'"{m}"' for m in cols),
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
                else empty_doubles(store, fingerprint, cur, src, QUALITY_DOUBLES, info.run_id)
            )
            rows = frame(cur, page_sql(src.sql, empty), all_params, info.run_id)
        except ResultsError as exc:
            # Diagnose lists a page's problems: an unreadable run is an empty page
            # that says why, with the columns a readable one has.
            rows = frame(cur, page_sql(_NO_ROWS), params)
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
    info, cat = resolve_run(store, run_id)
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
        df = frame(cur, q, {**src.params, "pct": float(pct)}, info.run_id)
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
        return frame(cur, q, {**src.params, "lo": lo, "hi": hi}, info.run_id)


def question_tags(store: ResultsStore, run_id: str | RunInfo) -> list[str]:
    """The distinct question tags of one run, sorted (options of a tag filter)."""
    info = store.run(run_id)
    with store.cursor() as cur, store.run_source(cur, info) as src:
        q = sql.QUESTION_TAGS.format(src=src.sql)
        return [str(t) for t in frame(cur, q, src.params, info.run_id)["tag"] if t is not None]


def metric_distribution(store: ResultsStore, run_id: str | RunInfo, metric: str) -> pd.DataFrame:
    """Values of `metric` in one run, ascending (question_id, value): histogram/ECDF.

    The values run-level figures count (`run_value_sql`): correctness of answerable
    questions only, so the curve matches the mean and p10 beside it."""
    info, cat = resolve_run(store, run_id)
    allowed_name(metric, cat.measure_names(), "metric")
    with store.cursor() as cur, store.run_source(cur, info) as src:
        q = sql.DISTRIBUTION.format(src=src.sql, value=run_value_sql(metric))
        return frame(cur, q, src.params, info.run_id)
