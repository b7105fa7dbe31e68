"""What every view shares: a run id resolved once, names checked against whitelists, frames
from cursors, the one retry when the derived cache was swapped under a reader.

Metrics runs declare widen the whitelists: per run, with that run's own declarations
(`run_catalogue`, whose names quote as columns of its files); across runs, with every
run's (`store.catalogue()`), read from the cache's `declared` map by a bound parameter
(`declared[$metric]`), never spliced in as SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from rageval_core.catalogue import (
    Catalogue,
)
from rageval_core.errors import ConfigError, ResultsError
from rageval_core.runs.reading import RunInfo, run_catalogue
from rageval_core.runs.rows import QUESTION_SCHEMA
from rageval_core.runs.source import RunSource, bind, reading_results
from rageval_core.runs.summary import QUALITY_METRICS
from rageval_core.store.results import ResultsStore
from rageval_core.store.schemas import SUMMARY_SCHEMA

CHART_RUNS = 1_000
"""Newest runs a view over every run returns by default (trend, cost/quality, a question's
history): at 10,000 runs drawing them all took seconds per rerun and showed no more."""


QUALITY_DOUBLES = tuple(m for m in QUALITY_METRICS if QUESTION_SCHEMA.field(m).type == pa.float64())
SUMMARY_DOUBLES = tuple(f.name for f in SUMMARY_SCHEMA if f.type == pa.float64())
"""The DOUBLE columns a question page / the runs overview selects as NaN where they are
NULL in every row (`empty_doubles`)."""


def allowed_name(name: str, allowed: Sequence[str], what: str) -> str:
    """`name` if it is one of `allowed` (a metric, a sort key), else ConfigError: such
    names become SQL identifiers, so only whitelisted ones pass."""
    if not isinstance(name, str) or name not in allowed:
        raise ConfigError(
            f"unknown {what} {str(name)[:60]!r}; expected one of: {', '.join(allowed)}"
        )
    return name


def resolve_run(store: ResultsStore, run: str | RunInfo) -> tuple[RunInfo, Catalogue]:
    """The run (`store.run`: as the last refresh saw it) and the catalogue of what its
    files hold. Lenient: a damaged or unreadable run is a page with no rows and its
    problems, not an error; `store.run_info` is the strict check for commands.
    """
    info = store.run(run)
    return info, run_catalogue(info)[0]


def figure_sql(catalogue: Catalogue, name: str, param: str) -> str:
    """SQL of run-level figure `name` in a summary row: its column for a built-in figure,
    the cache's `declared` map at bound parameter `$param` for a declared one."""
    m = catalogue.metric(name)
    if m is not None and m.declared:
        return f"declared[${param}]"
    return f'"{name}"'


def expand_declared(df: pd.DataFrame, names: Iterable[str]) -> pd.DataFrame:
    """The cache's `declared` map column as one column per name (NULL where a run has
    none); shapes a few hundred rows already aggregated in SQL."""
    if "declared" not in df.columns:
        return df
    maps = [d if isinstance(d, dict) else {} for d in df["declared"]]
    out = df.drop(columns=["declared"])
    for n in names:
        out[n] = pd.array([d.get(n) for d in maps], dtype="Float64").astype(float)
    return out


def frame(
    cur: duckdb.DuckDBPyConnection,
    q: str,
    params: Mapping[str, Any],
    run_id: str | None = None,
) -> pd.DataFrame:
    with reading_results(run_id):
        return cur.execute(q, bind(q, params)).df()


def empty_doubles(
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

    The page selects those as NaN (`nan_as`): what `.df()` makes of a NULL double anyway,
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


def nan_as(name: str) -> str:
    """`name` as a NaN double: for a query's outer SELECT only (to WHERE, ORDER BY and
    aggregates NaN is a number, not NULL)."""
    return f"CAST('NaN' AS DOUBLE) AS \"{name}\""


def cache_retry(store: ResultsStore, compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """`compute()` over the derived cache; once more after a refresh if a cache file it
    named is gone (another process or thread rewrote the cache since this store's state)."""
    try:
        return compute()
    except ResultsError as exc:
        if not isinstance(exc.__cause__, duckdb.IOException):
            raise
        store.refresh()
        return compute()


def over_summaries(store: ResultsStore, template: str, params: dict, **fmt: str) -> pd.DataFrame:
    """Run `template` with `{summary}` as every run's summary row (cached + live runs)."""

    def compute() -> pd.DataFrame:
        with store.cursor() as cur, store.summary_source(cur) as src:
            return frame(cur, template.format(summary=src.sql, **fmt), {**src.params, **params})

    return cache_retry(store, compute)


def strings(values: Iterable[str] | str | None) -> list[str]:
    """A filter argument given as one string, several or none, as a list of strings (run
    tags, question tags, failure types: each is then a bound parameter)."""
    if values is None:
        return []
    if isinstance(values, str):
        return [values]
    return [str(v) for v in values]


def opt_str(v: object) -> str | None:
    return None if v is None else str(v)
