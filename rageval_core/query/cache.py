"""The derived cache of a results location: one summary row and the narrow rows per run.

The run folders are the source of truth. The cache holds, for every finished run (complete
or failed), one summary row (`run_summary.parquet`: manifest fields + `summarize_run`) and
its narrow per-question rows (`metrics/seg-*.parquet`: ids, metrics, failure type, tags,
latency, cost). Metrics a run declares in its manifest differ from run to run, so they
are not columns of the cache: both files hold them in one `declared MAP(VARCHAR, DOUBLE)`
column (`{name: mean, name_p10: p10}` in a summary row, `{name: value}` in a narrow
row), read as `declared[$name]` with the name a bound parameter. A finished run does not
change, so the cache is keyed by run id plus a fingerprint of its files (names, sizes,
mtimes) and updated run by run (`DerivedCache.update`): new runs go into a new segment
(at most CHUNK_RUNS runs each, so a first build over 10,000 runs holds one chunk in
memory at a time and is kept chunk by chunk if stopped), a segment of CHUNK_RUNS runs is
never merged again, small ones are merged when there are too many, and the summary file
is swapped in with a rename. `runs_index.parquet` keeps what `inspect_run` found in each
cached run's folder (its manifest, file names, problems) under the same fingerprint, so
a restarted process rebuilds its `RunInfo`s without opening 10,000 manifests. Running runs are
summarised from their journals at every refresh and never cached (`summary_row`,
`narrow_rows`). `ResultsStore` decides what to add and drop; this module reads and
writes the files. A damaged run yields its problems, never an exception.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import duckdb
import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rageval_core.catalogue import DEFAULT_KS
from rageval_core.errors import RagevalError
from rageval_core.models import DatasetRef, DeclaredMetric, JudgeRef, RunManifest
from rageval_core.query import sql
from rageval_core.query.source import bind, extra_ks, open_run, projection
from rageval_core.query.summary import (
    COST_COLUMNS,
    LATENCY_COLUMNS,
    QUALITY_METRICS,
    SUMMARY_EXTRA_COLUMNS,
    SUMMARY_KEYS,
    SUMMARY_SELECT,
    below_params,
    declared_select,
    finish_summary,
    no_figures,
    run_thresholds,
    split_declared,
    summarize_run,
)
from rageval_core.query.workers import WorkersUnavailable, in_workers
from rageval_core.runs.atomic import write_parquet
from rageval_core.runs.layout import (
    BACKGROUND_BUILD_RUNS as BACKGROUND_BUILD_RUNS,  # the app's, re-exported
)
from rageval_core.runs.layout import MANIFEST, RUNS_INDEX, filesystem, is_remote, row_file_stem
from rageval_core.runs.manifest import config_name, manifest_from_dict, manifest_to_dict
from rageval_core.runs.reading import RunInfo
from rageval_core.runs.rows import (
    QUESTION_SCHEMA,
    check_columns,
    parquet_run_ids,
    question_schema,
    stray_run_ids,
)

CACHE_VERSION = 10  # 7: segments of at most CHUNK_RUNS runs, and the runs index; 8: span
# figures; 9: the reference-free verdicts and n_reference_free; 10: latency and cost over the
# questions with a value (NULL, not 0, when none has) with their counts, and each run's own
# failure thresholds in the shares below threshold
CHUNK_RUNS = 1024  # runs per segment written by one build step; a full one is never merged
MAX_SEGMENTS = 8  # more small segments than this and the next update merges the smallest
SEGMENT_ROW_GROUP = 16_384
PART_PREFIX = ".part-"
STALE_PART_S = 3600.0
"""A worker's part file lives from its write until the server's next segment (seconds to
minutes); one this old is a killed build's, swept at the next update."""

_log = logging.getLogger(__name__)

BATCH_RUNS = 64  # finished runs summarised by one DuckDB query (8x faster than one by one)
PARALLEL_RUNS = 1000
"""A build of this many runs or more is summarised in worker processes, one per core, a
part of BATCH_RUNS runs at a time (`workers.in_workers`); fewer are summarised here, where
DuckDB's own threads already keep the cores busy and the workers' start-up (about a second
of imports each) costs more than it saves (2 idle cores, 1,000 questions a run: 200 runs
1.5 s here against 2.4 s in workers, 1,000 runs 7.0 s against 6.6 s). A build the caller
does not wait for goes to workers at any size (`update(..., beside_pages=True)`)."""

NARROW_COLUMNS: tuple[str, ...] = (
    "question_id",
    "answerable",
    "tags",
    "failure_type",
    "refused",
    *QUALITY_METRICS,
    *LATENCY_COLUMNS,
    *COST_COLUMNS,
)

_MANIFEST_FIELDS: list[tuple[str, pa.DataType]] = [
    ("run_id", pa.string()),
    ("created_at", pa.string()),
    ("finished_at", pa.string()),
    ("status", pa.string()),
    ("config_name", pa.string()),
    ("params", pa.string()),  # JSON of the pipeline parameters
    ("config", pa.string()),  # JSON of the whole config
    ("dataset_name", pa.string()),
    ("dataset_version", pa.string()),
    ("dataset_sha256", pa.string()),
    ("dataset_n_questions", pa.int64()),
    ("judge_kind", pa.string()),
    ("judge_model", pa.string()),
    ("judge_version", pa.string()),
    ("git_commit", pa.string()),
    ("tags", pa.list_(pa.string())),
    ("schema_version", pa.int64()),
]
DECLARED_TYPE = pa.map_(pa.string(), pa.float64())
"""Declared metrics of a run in the cache: name -> value (figures: name and name_p10)."""

SUMMARY_SCHEMA = pa.schema(
    _MANIFEST_FIELDS
    + [(k, pa.int64() if k.startswith(("n_", "failure_")) else pa.float64()) for k in SUMMARY_KEYS]
    + [
        ("declared", DECLARED_TYPE),
        ("problems", pa.list_(pa.string())),
        ("fingerprint", pa.string()),
        ("segment", pa.string()),
    ]
)
"""One row per run in `run_summary.parquet` (and the runs overview)."""


INDEX_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("fingerprint", pa.string()),
        ("status", pa.string()),
        ("manifest", pa.string()),  # JSON of the parsed manifest (`manifest_to_dict`)
        ("parquet_files", pa.list_(pa.string())),  # names in the run folder
        ("journal_files", pa.list_(pa.string())),
        ("summary_file", pa.string()),
        ("problems", pa.list_(pa.string())),  # the folder's own (`RunInfo.problems`)
    ]
)
"""One row per cached run in `runs_index.parquet`: its `RunInfo` at that fingerprint."""

Progress = Callable[[str, int, int], None]
"""`progress(what, done, total)`: how far a refresh is (see `ResultsStore.refresh`)."""

SUMMARISING = "summarising runs into the cache"


def _shifted(progress: Progress | None, start: int, total: int) -> Progress | None:
    """`progress` for one chunk of a build: counts from `start` of `total` runs."""
    if progress is None:
        return None
    return lambda what, done, _: progress(what, start + done, total)


def declared_of(info: RunInfo) -> tuple[DeclaredMetric, ...]:
    """The run's validated declared metrics (none when its manifest is unreadable)."""
    return info.manifest.metrics if info.manifest else ()


def pack_declared(table: pa.Table, declared: tuple[DeclaredMetric, ...]) -> pa.Table:
    """`table` with its declared metric columns folded into one `declared` MAP column.

    Built in Arrow (keys from the validated declarations, values from the columns) so no
    declared name is ever spliced into the SQL that reads the cache.
    """
    names = [d.name for d in declared if d.name in table.column_names]
    n = table.num_rows
    if not names:
        return table.append_column("declared", pa.nulls(n, DECLARED_TYPE))
    values = np.column_stack(
        [table.column(c).to_numpy(zero_copy_only=False).astype(float) for c in names]
    )
    column = pa.MapArray.from_arrays(
        pa.array(np.arange(0, n * len(names) + 1, len(names), dtype=np.int32)),
        pa.array(names * n, pa.string()),
        pa.array(values.ravel(), pa.float64(), from_pandas=True),
    )
    return table.drop_columns(names).append_column("declared", column)


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


class DerivedCache:
    """The cache files of one results location under `cache_dir` (see the module doc).

    `fs`/`to_url` read the run folders (an object store included); the cache itself is
    always a local folder.
    """

    def __init__(
        self,
        cache_dir: Path,
        fs: fsspec.AbstractFileSystem,
        to_url: Callable[[str], str],
        remote: bool,
        location: str,
    ):
        self.cache_dir = cache_dir
        self.fs = fs
        self.to_url = to_url
        self.remote = remote
        self.location = location  # what a worker process opens again (`summarise_part`)

    def summary_file(self) -> Path:
        return self.cache_dir / "run_summary.parquet"

    def load(self) -> pa.Table:
        path = self.summary_file()
        try:
            t = pq.read_table(path)
            meta = t.schema.metadata or {}
            if meta.get(b"rageval_cache_version") != str(CACHE_VERSION).encode():
                return empty_summary()
            for seg in {s for s in t.column("segment").to_pylist() if s}:
                # A segment gone or cut short (full disk, bad copy) raises here and the
                # cache is rebuilt, instead of failing every query that reads it.
                pq.read_metadata(self.cache_dir / "metrics" / seg)
            return t.cast(SUMMARY_SCHEMA)
        except (OSError, pa.ArrowException, KeyError):
            return empty_summary()

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

    def stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.summary_file())
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def index_file(self) -> Path:
        return self.cache_dir / RUNS_INDEX

    def _read_index(self) -> pa.Table:
        """The runs index as written, or an empty one (missing, damaged, older version)."""
        try:
            t = pq.read_table(self.index_file())
            meta = t.schema.metadata or {}
            if meta.get(b"rageval_cache_version") == str(CACHE_VERSION).encode():
                return t.cast(INDEX_SCHEMA)
        except (OSError, pa.ArrowException, ValueError, KeyError):
            pass
        return INDEX_SCHEMA.empty_table()

    def run_infos(self, root: str) -> dict[str, tuple[str, RunInfo]]:
        """(fingerprint, RunInfo) of every run in the runs index, its folder under `root`:
        what `inspect_run` found there when the run was cached. A row that does not parse
        is left out (that folder is then inspected)."""
        t = self._read_index()
        out = {}
        # column by column: a row dict per run cost a third of a 10,000-run restart
        for rid, fp, status, text, parquet, journal, summary, problems in zip(
            *(t.column(c).to_pylist() for c in INDEX_SCHEMA.names), strict=True
        ):
            path = f"{root}/{rid}"
            try:
                # validated when cached: its problems then are kept, not found again
                manifest = _indexed_manifest(json.loads(text), f"{path}/{MANIFEST}")
            except (ValueError, TypeError, KeyError, RecursionError, RagevalError):
                continue
            info = RunInfo(
                run_id=rid,
                path=path,
                status=status,
                manifest=manifest,
                parquet_files=[f"{path}/{n}" for n in parquet],
                journal_files=[f"{path}/{n}" for n in journal],
                summary_file=f"{path}/{summary}" if summary else None,
                problems=list(problems),
            )
            out[rid] = (fp, info)
        return out

    def _write_index(
        self, summary: pa.Table, finished: dict[str, tuple[RunInfo, str]], added: set[str]
    ) -> None:
        """The runs index of the runs in `summary`: the rows already there for runs not
        re-read (`added`), a new row for the others. An optimisation: failures ignored."""

        def name(p: str) -> str:
            return p.rsplit("/", 1)[-1]

        old = self._read_index()
        keys = pc.binary_join_element_wise(summary["run_id"], summary["fingerprint"], "\0")
        old_keys = pc.binary_join_element_wise(old["run_id"], old["fingerprint"], "\0")
        old = old.filter(
            pc.and_(
                pc.is_in(old_keys, keys),
                pc.invert(pc.is_in(old["run_id"], pa.array(sorted(added), pa.string()))),
            )
        )
        have = set(old.column("run_id").to_pylist())
        rows = []
        for rid, fp in zip(
            summary.column("run_id").to_pylist(),
            summary.column("fingerprint").to_pylist(),
            strict=True,
        ):
            info, seen = finished.get(rid, (None, None))
            if rid in have or info is None or info.manifest is None or seen != fp:
                continue
            rows.append(
                {
                    "run_id": rid,
                    "fingerprint": fp,
                    "status": info.status,
                    "manifest": json.dumps(manifest_to_dict(info.manifest), default=str),
                    "parquet_files": [name(p) for p in info.parquet_files],
                    "journal_files": [name(p) for p in info.journal_files],
                    "summary_file": name(info.summary_file) if info.summary_file else None,
                    "problems": list(info.problems),
                }
            )
        table = pa.concat_tables([old, pa.Table.from_pylist(rows, schema=INDEX_SCHEMA)])
        try:
            write_parquet(self.index_file(), _versioned(table))
        except OSError:
            pass

    def update(
        self,
        cur: duckdb.DuckDBPyConnection,
        cached: pa.Table,
        finished: dict[str, tuple[RunInfo, str]],
        progress: Progress | None = None,
        work: Callable[..., tuple[list[dict[str, Any]], str | None]] | None = None,
        *,
        beside_pages: bool = False,
    ) -> pa.Table:
        """Bring the cache to `finished` (run id -> RunInfo, fingerprint); the new summary.

        Runs whose fingerprint changed or that are gone leave the segments holding them;
        runs new or changed are summarised CHUNK_RUNS at a time, each chunk written as a
        segment and the summary file swapped in before the next chunk is read. From
        PARALLEL_RUNS runs on, worker processes summarise them (`work(location,
        cache_dir, part)`, `summarise_part` unless given); `beside_pages` (a server's
        build on a thread of its own, while pages are drawn) sends any number to workers:
        on a thread of the server the build holds the GIL the pages need.
        """
        self._sweep_parts()
        cached_fp = _fingerprints(cached)
        keep = _kept(cached_fp, finished)
        drop = [r for r in cached_fp if r not in keep]
        add = [v for r, v in finished.items() if r not in keep]
        summary = cached
        if drop:
            summary = self._drop(summary, drop)
        in_here = not add or (len(add) < PARALLEL_RUNS and not beside_pages)
        if not in_here:
            try:
                summary = self._update_in_workers(summary, add, progress, work)
            except WorkersUnavailable:  # before any run was summarised
                _log.warning("no worker process starts in this program: building here")
                in_here = True
        for start in range(0, len(add) if in_here else 0, CHUNK_RUNS):
            chunk = add[start : start + CHUNK_RUNS]
            rows, tables = self.compute(cur, chunk, _shifted(progress, start, len(add)))
            summary = self._append(summary, rows, tables)
        if add or drop or (summary.num_rows and not self.index_file().exists()):
            self._write_index(summary, finished, {info.run_id for info, _ in add})
        return summary

    def _update_in_workers(
        self,
        summary: pa.Table,
        add: list[tuple[RunInfo, str]],
        progress: Progress | None,
        work: Callable[..., tuple[list[dict[str, Any]], str | None]] | None,
    ) -> pa.Table:
        """`summary` plus the runs `add`, summarised by worker processes (`in_workers`);
        their rows are written here as they come, a segment of at most CHUNK_RUNS runs
        at a time. A run whose worker failed gets a row with its manifest fields and
        that failure as its problem (kept like any damaged run's until its files
        change), and the build goes on."""
        rows: list[dict[str, Any]] = []
        files: list[str] = []
        done = 0

        def flush() -> None:
            nonlocal summary
            tables = [pa.ipc.open_file(pa.memory_map(f)).read_all() for f in files]
            summary = self._append(summary, sorted(rows, key=lambda r: r["run_id"]), tables)
            for f in files:
                os.unlink(f)
            rows.clear()
            files.clear()

        def counted(n: int) -> None:
            nonlocal done
            done += n
            if progress:
                progress(SUMMARISING, done, len(add))

        def on_done(part: list[tuple[RunInfo, str]], result: tuple) -> None:
            got, path = result
            if len(rows) + len(got) > CHUNK_RUNS:
                flush()
            rows.extend(got)
            files.extend([path] if path else [])
            counted(len(part))

        def on_failed(item: tuple[RunInfo, str], exc: BaseException) -> None:
            info, fp = item
            problem = (
                f"{info.path}: not summarised, its worker failed ({type(exc).__name__}: {exc})"
            )
            problems = [*info.problems, problem]
            rows.append(
                {**manifest_row(info), **no_figures(), "problems": problems, "fingerprint": fp}
            )
            counted(1)

        if progress:
            progress(SUMMARISING, 0, len(add))
        parts = [add[i : i + BATCH_RUNS] for i in range(0, len(add), BATCH_RUNS)]
        task = functools.partial(work or summarise_part, self.location, str(self.cache_dir))
        try:
            in_workers(parts, task, on_done, on_failed)
            if rows:
                flush()
        finally:  # a build stopped midway: the parts not written are dropped
            for f in files:
                Path(f).unlink(missing_ok=True)
        return summary

    @staticmethod
    def to_summarise(cached: pa.Table, finished: dict[str, tuple[RunInfo, str]]) -> int:
        """How many of `finished` `update` would summarise over the summary `cached`."""
        return len(finished) - len(_kept(_fingerprints(cached), finished))

    def _sweep_parts(self) -> None:
        """Remove the workers' part files (`summarise_part`) a build killed midway left:
        those older than STALE_PART_S, so a build another process runs on this cache
        folder meanwhile keeps its own."""
        cutoff = time.time() - STALE_PART_S
        try:
            with os.scandir(self.cache_dir / "metrics") as entries:
                stale = [e.path for e in entries if e.name.startswith(PART_PREFIX)]
        except FileNotFoundError:
            return
        for path in stale:
            try:
                if os.stat(path).st_mtime < cutoff:
                    os.unlink(path)
            except FileNotFoundError:  # swept by another process meanwhile
                pass

    def _segment_dir(self) -> Path:
        seg_dir = self.cache_dir / "metrics"
        seg_dir.mkdir(parents=True, exist_ok=True)
        return seg_dir

    def _drop(self, summary: pa.Table, drop: list[str]) -> pa.Table:
        """`summary` without the runs `drop`; each segment holding one is rewritten
        without them (on its own: segments stay the size they were)."""
        seg_dir = self._segment_dir()
        gone = pa.array(drop, pa.string())
        dropped = pc.is_in(summary.column("run_id"), gone)
        dirty = {s for s in summary.filter(dropped).column("segment").to_pylist() if s}
        kept = summary.filter(pc.invert(dropped))
        still = set(kept.column("segment").to_pylist())
        renamed: dict[str, str] = {}
        try:
            for seg in sorted(dirty & still):
                renamed[seg] = f"seg-{uuid.uuid4().hex}.parquet"
                _merge_segments([seg_dir / seg], seg_dir / renamed[seg], drop)
            return self._swap(_renamed(kept, renamed), dirty, list(renamed.values()))
        except BaseException:
            for name in renamed.values():
                (seg_dir / name).unlink(missing_ok=True)
            raise

    def _append(
        self, summary: pa.Table, rows: list[dict[str, Any]], tables: list[pa.Table]
    ) -> pa.Table:
        """`summary` plus `rows`, their narrow rows written as one new segment; then, when
        there are more than MAX_SEGMENTS segments of fewer than CHUNK_RUNS runs, the
        smallest of them merged (as many as fit in CHUNK_RUNS runs)."""
        if not rows:
            return summary
        seg_dir = self._segment_dir()
        written: list[str] = []
        try:
            name = f"seg-{uuid.uuid4().hex}.parquet"
            _write_segment(seg_dir / name, pa.concat_tables([empty_metrics(), *tables]))
            written.append(name)
            for r in rows:
                r["segment"] = name
            new = pa.Table.from_pylist(rows, schema=SUMMARY_SCHEMA)
            table = pa.concat_tables([summary.cast(SUMMARY_SCHEMA), new])
            merge = _to_merge(table.column("segment").to_pylist())
            if merge:
                merged = f"seg-{uuid.uuid4().hex}.parquet"
                _merge_segments([seg_dir / s for s in merge], seg_dir / merged, [])
                written.append(merged)
                table = _renamed(table, dict.fromkeys(merge, merged))
            return self._swap(table, set(merge), written)
        except BaseException:
            for name in written:
                (seg_dir / name).unlink(missing_ok=True)
            raise

    def _swap(self, table: pa.Table, replaced: set[str], written: list[str]) -> pa.Table:
        """Write `table` as the summary file, then remove the segments it no longer names
        (`replaced`, and any of `written` merged away); a reader holding the old summary
        retries (`views._cache_retry`)."""
        table = _versioned(table.cast(SUMMARY_SCHEMA))
        write_parquet(self.summary_file(), table)
        live = set(table.column("segment").to_pylist())
        seg_dir = self.cache_dir / "metrics"
        for s in (replaced | set(written)) - live:
            (seg_dir / s).unlink(missing_ok=True)
        return table


def summarise_part(
    location: str, cache_dir: str, part: list[tuple[RunInfo, str]]
) -> tuple[list[dict[str, Any]], str | None]:
    """A worker process's share of a build (`DerivedCache._update_in_workers`): the
    summary rows of `part`, and its narrow rows written to an Arrow file in the cache
    folder, for the caller to map rather than receive through a pipe (a million rows
    over 1,000 runs of 1,000 questions); that file's path, None without rows."""
    fs, _ = filesystem(location)
    remote = is_remote(location)
    cache = DerivedCache(
        Path(cache_dir), fs, fs.unstrip_protocol if remote else str, remote, location
    )
    con = duckdb.connect(":memory:")
    try:
        if remote:
            con.register_filesystem(fs)
        with con.cursor() as cur:
            rows, tables = cache.compute(cur, part)
    finally:
        con.close()
    table = pa.concat_tables([empty_metrics(), *tables])
    if not table.num_rows:
        return rows, None
    path = cache._segment_dir() / f"{PART_PREFIX}{uuid.uuid4().hex}.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return rows, str(path)


def _fingerprints(summary: pa.Table) -> dict[str, str]:
    """Run id -> fingerprint of the runs a summary table holds."""
    return dict(
        zip(
            summary.column("run_id").to_pylist(),
            summary.column("fingerprint").to_pylist(),
            strict=True,
        )
    )


def _kept(cached_fp: dict[str, str], finished: dict[str, tuple[RunInfo, str]]) -> set[str]:
    """The cached runs still as they were cached: in `finished` with the same fingerprint."""
    return {r for r, fp in cached_fp.items() if r in finished and finished[r][1] == fp}


def _indexed_manifest(d: dict[str, Any], source: str) -> RunManifest:
    """The manifest `_write_index` stored (`manifest_to_dict` of one validated when its run
        was cached), rebuilt without validating it again: that was a quarter of a 10,000-run
        restart. Declared metrics are specs to parse (and a judge's metrics a list to make a
    tuple), so such a manifest is parsed in full; a
        row whose keys are not the manifest's fields raises TypeError (its folder is read)."""
    if "metrics" in d or "metrics" in d["judge"]:
        return manifest_from_dict(d, source, [])
    return RunManifest(
        **{
            **d,
            "dataset": DatasetRef(**d["dataset"]),
            "judge": JudgeRef(**d["judge"]),
            "tags": tuple(d["tags"]),
        }
    )


def _versioned(table: pa.Table) -> pa.Table:
    return table.replace_schema_metadata({"rageval_cache_version": str(CACHE_VERSION)})


def _renamed(table: pa.Table, names: dict[str, str]) -> pa.Table:
    """`table` with its `segment` column renamed through `names`."""
    if not names:
        return table
    col = [names.get(s, s) for s in table.column("segment").to_pylist()]
    i = table.schema.get_field_index("segment")
    return table.set_column(i, "segment", pa.array(col, pa.string()))


def _to_merge(segments: list[str | None]) -> list[str]:
    """The small segments to merge into one, given each summary row's segment: none
    while there are at most MAX_SEGMENTS segments of fewer than CHUNK_RUNS runs; else
    the smallest of them, as many as hold at most CHUNK_RUNS runs together (2 or more)."""
    counts: dict[str, int] = {}
    for s in segments:
        if s:
            counts[s] = counts.get(s, 0) + 1
    small = sorted((n, s) for s, n in counts.items() if n < CHUNK_RUNS)
    if len(small) <= MAX_SEGMENTS:
        return []
    picked, total = [], 0
    for n, s in small:
        if total + n > CHUNK_RUNS:
            break
        picked.append(s)
        total += n
    return picked if len(picked) > 1 else []


METRICS_SCHEMA = pa.schema(
    [("run_id", pa.string())]
    + [QUESTION_SCHEMA.field(c) for c in NARROW_COLUMNS]
    + [("declared", DECLARED_TYPE)]
)
"""Columns of the narrow cross-run table (`metrics/seg-*.parquet`)."""


def _merge_segments(paths: list[Path], out: Path, drop: list[str]) -> None:
    """Write the rows of `paths` minus the runs in `drop` into one new segment."""
    table = pa.concat_tables(
        [empty_metrics(), *(pq.read_table(p).cast(METRICS_SCHEMA) for p in paths)]
    )
    if drop:
        table = table.filter(pc.invert(pc.is_in(table.column("run_id"), pa.array(drop))))
    _write_segment(out, table)


def _write_segment(path: Path, table: pa.Table) -> None:
    """Sorted by question id in small row groups: a one-question lookup (history) reads
    only the row group whose min/max statistics cover that id. DuckDB sorts and writes
    (in parallel: 1.5x faster than Arrow's sort + writer at 1M rows, 17% smaller)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    con = duckdb.connect(":memory:")
    try:
        con.register("segment_rows", table)
        con.execute(sql.WRITE_SEGMENT.format(row_group=int(SEGMENT_ROW_GROUP)), {"path": tmp})
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        con.close()


def empty_summary() -> pa.Table:
    return SUMMARY_SCHEMA.empty_table()


def empty_metrics() -> pa.Table:
    return METRICS_SCHEMA.empty_table()
