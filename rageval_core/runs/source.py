"""Open one run's rows in DuckDB by path: its Parquet shard(s), else its journal(s).

A run is always read from its own files (never a glob filtered by run id), so a per-run
view costs the same at 10 runs or 10,000. Which files and columns are read is
`runs.reading.usable_files`, the choice rescore's `read_run_rows` makes too: columns a
file lacks become typed NULLs, as do columns of the wrong type (both reported); a corrupt
shard is reported and its journal used when there is one. Nothing here writes.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import duckdb
import fsspec
import pyarrow as pa

from rageval_core.catalogue import DEFAULT_KS
from rageval_core.errors import ResultsError, shown
from rageval_core.runs.reading import RunInfo, journal_tables, usable_files
from rageval_core.runs.rows import question_schema

_K_COL = re.compile(r"^(?:recall|precision|hit)_at_(\d+)$")
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def duck_type(t: pa.DataType) -> str:
    """DuckDB spelling of the Arrow types used by the row schema."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "VARCHAR"
    if pa.types.is_float64(t) or pa.types.is_float32(t):
        return "DOUBLE"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_int32(t):
        return "INTEGER"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return duck_type(t.value_type) + "[]"
    if pa.types.is_struct(t):
        inner = ", ".join(f'"{f.name}" {duck_type(f.type)}' for f in t)
        return f"STRUCT({inner})"
    raise TypeError(f"unsupported type {t}")


def extra_ks(names: Any) -> set[int]:
    """The K values of retrieval columns present in `names`."""
    return {int(m.group(1)) for n in names if (m := _K_COL.match(n))}


def projection(present: set[str], schema: pa.Schema) -> str:
    """SELECT list mapping a file's columns onto `schema`; absent columns become NULLs.

    Identifiers come only from `schema` (our own row schema), never from a caller.
    """
    out = []
    for f in schema:
        t = duck_type(f.type)
        if f.name not in present:
            out.append(f'CAST(NULL AS {t}) AS "{f.name}"')
        elif pa.types.is_list(f.type) or pa.types.is_struct(f.type):
            out.append(f'"{f.name}"')
        else:
            # scalars cast so an all-NULL column written with another type still unions
            out.append(f'TRY_CAST("{f.name}" AS {t}) AS "{f.name}"')
    return ", ".join(out)


_OUR_SQL = (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException)
"""Errors of the SQL written here, not of the files read: they stay bugs, not problems."""


@contextmanager
def reading_results(run_id: str | None = None) -> Iterator[None]:
    """Any DuckDB failure reading results files as one bounded ResultsError line.

    A Parquet file whose footer is intact but a data page is not fails only when its rows
    are read, with IO, input, conversion or plain `duckdb.Error`s ("Out of buffer").
    """
    try:
        yield
    except _OUR_SQL:
        raise
    except duckdb.Error as exc:
        run = f"run {run_id!r}: " if run_id else ""
        raise ResultsError(f"{run}unreadable results file ({shown(exc)})") from exc


def bind(sql: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Only the named parameters `sql` uses (DuckDB rejects extra ones)."""
    used = set(_PARAM.findall(sql))
    return {k: v for k, v in params.items() if k in used}


@dataclass
class RunSource:
    """SQL text for a FROM clause reading one run, its parameters, and what went wrong."""

    sql: str
    params: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    empty: bool = False


@contextmanager
def open_run(
    cur: duckdb.DuckDBPyConnection,
    info: RunInfo,
    fs: fsspec.AbstractFileSystem | None = None,
    to_url: Callable[[str], str] = lambda p: p,
    columns: tuple[str, ...] | None = None,
    alias: str = "run",
) -> Iterator[RunSource]:
    """Yield a `RunSource` over the run's rows on `cur`; journals are registered as Arrow.

    `columns` limits the projection (the narrow cache needs far fewer columns than a
    question page); names must come from the row schema. `alias` names the path
    parameter so two runs can be read in one statement. The run's declared metrics
    (validated names from its manifest) are columns of its schema; one its files lack
    or hold as non-numbers reads as NULL and is a problem naming the file.
    """
    fs = fs or fsspec.filesystem("file")
    declared = info.manifest.metrics if info.manifest else ()
    files = usable_files(info, fs)
    tables, journal_problems = journal_tables(info, files.journals, fs)
    problems = [*files.problems, *journal_problems]
    good = files.parquet
    present = set(files.columns).union(*(t.column_names for t in tables))
    if not good and not tables and info.readable and not fs.isdir(info.path):
        # listed with files, now gone: say so once rather than once per vanished file
        problems = [f"{info.path}: no such run (removed since it was listed)"]
    schema = question_schema(DEFAULT_KS + tuple(sorted(extra_ks(present))), declared)
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns if c in schema.names])
    proj = projection(present, schema)
    parts: list[str] = []
    params: dict[str, Any] = {}
    registered: list[str] = []
    if good:
        params[f"{alias}_paths"] = [to_url(p) for p in good]
        parts.append(f"SELECT {proj} FROM read_parquet(${alias}_paths, union_by_name=true)")
    for t in tables:
        name = f"journal_{uuid.uuid4().hex}"
        cur.register(name, t)
        registered.append(name)
        cols = set(t.column_names)
        parts.append(f"SELECT {projection(cols, schema)} FROM {name}")
    empty = not parts
    if empty:
        parts.append(f"SELECT {projection(set(), schema)} WHERE false")
    union = " UNION ALL ".join(parts)
    if "run_id" in schema.names:  # rows belong to the folder they were found in
        params[f"{alias}_run_id"] = info.run_id
        union = f"SELECT * REPLACE (${alias}_run_id::VARCHAR AS run_id) FROM ({union})"
    try:
        yield RunSource(f"({union})", params, problems, empty)
    finally:
        for name in registered:
            cur.unregister(name)
