"""Finished runs summarised for the derived cache: a summary row (manifest fields plus
`summarize_run`) and the narrow per-question rows of each, in batches where the runs'
files allow one query for many runs. A damaged run yields its problems, never an
exception.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import duckdb
import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from rageval_core.catalogue import DEFAULT_KS
from rageval_core.runs.layout import filesystem, is_remote, row_file_stem
from rageval_core.runs.manifest import config_name
from rageval_core.runs.reading import RunInfo, declared_of
from rageval_core.runs.rows import (
    check_columns,
    damaged_header,
    parquet_run_ids,
    question_schema,
    stray_run_ids,
)
from rageval_core.runs.source import bind, extra_ks, open_run, projection
from rageval_core.runs.summary import (
    SUMMARY_EXTRA_COLUMNS,
    SUMMARY_SELECT,
    below_params,
    declared_select,
    finish_summary,
    run_thresholds,
    split_declared,
    summarize_run,
)
from rageval_core.store import sql
from rageval_core.store.schemas import (
    METRICS_SCHEMA,
    NARROW_COLUMNS,
    empty_metrics,
    pack_declared,
)
from rageval_core.store.segments import PART_PREFIX, Segments

BATCH_RUNS = 64  # finished runs summarised by one DuckDB query (8x faster than one by one)

Progress = Callable[[str, int, int], None]
"""`progress(what, done, total)`: how far a refresh is (see `ResultsStore.refresh`)."""

SUMMARISING = "summarising runs into the cache"


def _flat_params(config: dict[str, Any]) -> dict[str, Any]:
    pipeline = config.get("pipeline")
    if isinstance(config.get("params"), dict):
        return config["params"]
    if isinstance(pipeline, dict) and isinstance(pipeline.get("params"), dict):
        return pipeline["params"]
    return {}


def manifest_row(info: RunInfo) -> dict[str, Any]:
    """The manifest half of a summary row."""
    m = info.manifest
    if m is None:
        return {"run_id": info.run_id, "status": info.status, "tags": []}
    config = dict(m.config)
    return {
        "run_id": info.run_id,  # the folder names the run, whatever its manifest says
        "created_at": m.created_at,
        "finished_at": m.finished_at,
        "status": info.status,
        "config_name": config_name(m),
        "params": json.dumps(_flat_params(config), sort_keys=True, default=str),
        "config": json.dumps(config, sort_keys=True, default=str),
        "dataset_name": m.dataset.name,
        "dataset_version": m.dataset.version,
        "dataset_sha256": m.dataset.sha256,
        "dataset_n_questions": m.dataset.n_questions,
        "judge_kind": m.judge.kind,
        "judge_model": m.judge.model,
        "judge_version": m.judge.version,
        "git_commit": m.git_commit,
        "tags": list(m.tags),
        "schema_version": m.schema_version,
    }


class Summariser:
    """Reads finished runs' files (an object store's included) into cache rows."""

    def __init__(self, fs: fsspec.AbstractFileSystem, to_url: Callable[[str], str], remote: bool):
        self.fs = fs
        self.to_url = to_url
        self.remote = remote

    def narrow_rows(self, cur: duckdb.DuckDBPyConnection, info: RunInfo) -> pa.Table:
        """The run's narrow rows; none when its files cannot be read (deleted since the
        listing, damaged): `summary_row` reads the same files and reports why."""
        declared = declared_of(info)
        cols = (*NARROW_COLUMNS, *(d.name for d in declared))
        with open_run(cur, info, fs=self.fs, to_url=self.to_url, columns=cols) as src:
            q = sql.NARROW_FROM_RUN.format(cols="*", src=src.sql)
            try:
                rel = cur.sql(q, params=bind(q, {**src.params, "run_id": info.run_id}))
                t = rel.to_arrow_table()
            except duckdb.Error:
                return empty_metrics()
        return pack_declared(t, declared).cast(METRICS_SCHEMA)

    def summary_row(self, cur: duckdb.DuckDBPyConnection, info: RunInfo) -> dict[str, Any]:
        agg = summarize_run(info, con=cur, fs=self.fs, to_url=self.to_url)
        problems = list(dict.fromkeys(info.problems + agg.pop("problems")))
        return {**manifest_row(info), **agg, "problems": problems}

    def compute(
        self,
        cur: duckdb.DuckDBPyConnection,
        add: list[tuple[RunInfo, str]],
        progress: Progress | None = None,
    ) -> tuple[list[dict[str, Any]], list[pa.Table]]:
        """Summary rows and narrow rows of finished runs, in batches where possible.

        Runs whose rows are exactly their Parquet files (no journal stands in for a shard)
        are grouped by file schema and read BATCH_RUNS at a time, one query for the
        summaries and one for the narrow rows; anything else, or a batch DuckDB cannot
        read, goes run by run, where a damaged file becomes a problem of that run.
        """
        groups: dict[tuple, list[tuple[RunInfo, str]]] = {}
        single: list[tuple[RunInfo, str]] = []
        column_problems: dict[str, list[str]] = {}
        for info, fp in add:
            found = self._parquet_only_schema(info)
            thresholds, bad_thresholds = run_thresholds(info)
            if found is None or bad_thresholds:  # run by run: its problem is reported
                single.append((info, fp))
            else:
                key, column_problems[info.run_id] = found
                # runs of one batch share their declarations and failure thresholds too:
                # one SELECT list and one set of parameters for all
                below_key = tuple(sorted(below_params(thresholds).items()))
                groups.setdefault((key, declared_of(info), below_key), []).append((info, fp))
        rows: list[dict[str, Any]] = []
        tables: list[pa.Table] = []
        done = 0
        for key, items in groups.items():
            for i in range(0, len(items), BATCH_RUNS):
                batch = items[i : i + BATCH_RUNS]
                if progress:
                    progress(SUMMARISING, done, len(add))
                done += len(batch)
                try:
                    aggs, narrow = self._batch(cur, key, batch)
                except duckdb.Error:
                    single += batch
                    continue
                tables.append(narrow)
                for info, fp in batch:
                    if info.run_id not in aggs:  # no rows: the run-by-run path says why
                        single.append((info, fp))
                        continue
                    problems = list(dict.fromkeys(info.problems + column_problems[info.run_id]))
                    agg = aggs[info.run_id]
                    rows.append(
                        {**manifest_row(info), **agg, "problems": problems, "fingerprint": fp}
                    )
        for n, (info, fp) in enumerate(single):
            if progress and n % 8 == 0:
                progress(SUMMARISING, len(add) - len(single) + n, len(add))
            row = self.summary_row(cur, info)
            tables.append(self.narrow_rows(cur, info))
            rows.append({**row, "fingerprint": fp})
        rows.sort(key=lambda r: r["run_id"])
        return rows, tables

    def _parquet_only_schema(self, info: RunInfo) -> tuple[tuple, list[str]] | None:
        """The (name, type, readable) fields shared by all of the run's Parquet files when
        those files are all of its rows (what `open_run` would read), and the files' column
        problems (`check_columns`: a field of the wrong type is not readable); None
        otherwise."""
        if not info.parquet_files:
            return None
        stems = {row_file_stem(p) for p in info.parquet_files}
        if any(row_file_stem(j) not in stems for j in info.journal_files):
            return None
        keys, problems = set(), []
        for p in info.parquet_files:
            try:
                # by path when local: Arrow reads just the footer (fsspec's buffered reads: 3x)
                with self.fs.open(p, "rb") if self.remote else nullcontext(p) as fh:
                    with pq.ParquetFile(fh) as pf:
                        schema = pf.schema_arrow
                        problems += stray_run_ids(parquet_run_ids(pf), info.run_id, p)
                with self.fs.open(p, "rb") as raw:
                    problems += damaged_header(raw.read(4), p)
            except Exception:  # a damaged footer: the run-by-run path reports it
                return None
            usable, column_problems = check_columns(schema, p, declared_of(info))
            problems += column_problems
            keys.add(tuple((f.name, str(f.type), f.name in usable) for f in schema))
        return (keys.pop(), problems) if len(keys) == 1 else None

    def _batch(
        self,
        cur: duckdb.DuckDBPyConnection,
        key: tuple,
        batch: list[tuple[RunInfo, str]],
    ) -> tuple[dict[str, dict[str, Any]], pa.Table]:
        """Summaries (by run id) and narrow rows of runs whose files share one schema and
        whose manifests declare the same metrics and failure thresholds (`key`: file
        fields, declarations, `below_params`).

        The files are read once (narrow columns + `error`); the summaries are then
        aggregated over that Arrow table.
        """
        fields, declared, below = key
        present = {name for name, _, readable in fields if readable}
        full = question_schema(DEFAULT_KS + tuple(sorted(extra_ks(present))), declared)
        wanted = [
            *NARROW_COLUMNS,
            *(c for c in SUMMARY_EXTRA_COLUMNS if c not in NARROW_COLUMNS),
            *(d.name for d in declared),
        ]
        read = pa.schema([full.field(c) for c in wanted if c in full.names])
        paths, owners = [], []
        for info, _ in batch:
            for p in info.parquet_files:
                paths.append(self.to_url(p))
                owners.append(info.run_id)
        files = f"files_{uuid.uuid4().hex}"
        rows = f"rows_{uuid.uuid4().hex}"
        cur.register(files, pa.table({"filename": paths, "owner": owners}))
        try:
            q = sql.NARROW_BATCH.format(proj=projection(present, read), files=files)
            table = cur.sql(q, params={"paths": paths}).to_arrow_table()
            cur.register(rows, table)
            select = SUMMARY_SELECT + declared_select(declared)
            q = sql.SUMMARY_BATCH.format(select=select, rows=rows)
            rel = cur.execute(q, dict(below))
            names = [d[0] for d in rel.description]
            aggs = {
                r[0]: split_declared(
                    finish_summary(dict(zip(names[1:], r[1:], strict=True))), declared
                )
                for r in rel.fetchall()
            }
        finally:
            cur.unregister(files)
            cur.unregister(rows)
        narrow = table.select(
            ["run_id", *(c for c in NARROW_COLUMNS if c in full.names), *(d.name for d in declared)]
        )
        return aggs, pack_declared(narrow, declared).cast(METRICS_SCHEMA)


def summarise_part(
    location: str, cache_dir: str, part: list[tuple[RunInfo, str]]
) -> tuple[list[dict[str, Any]], str | None]:
    """A worker process's share of a build (`DerivedCache._update_in_workers`): the
    summary rows of `part`, and its narrow rows written to an Arrow file in the cache
    folder, for the caller to map rather than receive through a pipe (a million rows
    over 1,000 runs of 1,000 questions); that file's path, None without rows."""
    fs, _ = filesystem(location)
    remote = is_remote(location)
    summariser = Summariser(fs, fs.unstrip_protocol if remote else str, remote)
    con = duckdb.connect(":memory:")
    try:
        if remote:
            con.register_filesystem(fs)
        with con.cursor() as cur:
            rows, tables = summariser.compute(cur, part)
    finally:
        con.close()
    table = pa.concat_tables([empty_metrics(), *tables])
    if not table.num_rows:
        return rows, None
    path = Segments(Path(cache_dir)).segment_dir() / f"{PART_PREFIX}{uuid.uuid4().hex}.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return rows, str(path)
