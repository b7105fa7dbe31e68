"""Reading run folders: what one holds (`inspect_run`), every run of a location
(`scan_runs`), and its rows (`usable_files`, `read_run_rows`).

The reader never raises for a broken run: it reports the problem on the run (naming the
file, and the line and column where there is one) and moves on, so one corrupt folder cannot
take the dashboard down. Which files of a run hold usable rows (and which columns of them)
is decided once, in `usable_files`, for rescore and the query layer alike.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from rageval_core.catalogue import BUILTIN, Catalogue
from rageval_core.errors import ResultsError, shown
from rageval_core.models import DeclaredMetric, RunManifest
from rageval_core.runs.journal import read_journal
from rageval_core.runs.layout import (
    MANIFEST,
    SUMMARY,
    filesystem,
    is_journal_name,
    is_parquet_name,
    is_remote,
    results_location,
    row_file_stem,
    shard_status_name,
    validate_run_id,
)
from rageval_core.runs.lease import stale_after_s
from rageval_core.runs.listing import IgnoredFolder, run_folders
from rageval_core.runs.manifest import SCHEMA_VERSION, manifest_from_bytes
from rageval_core.runs.rows import (
    check_columns,
    parquet_run_ids,
    rows_to_table,
    stray_run_ids,
)


@dataclass
class RunInfo:
    """What the reader found for one run folder; `problems` is empty for a healthy run."""

    run_id: str
    path: str
    status: str  # running | complete | failed | corrupt | missing (the folder is gone)
    manifest: RunManifest | None = None
    parquet_files: list[str] = field(default_factory=list)
    journal_files: list[str] = field(default_factory=list)
    summary_file: str | None = None
    problems: list[str] = field(default_factory=list)
    # POSIX time of the newest file in a running run's folder (lease heartbeat, journal
    # line, manifest): the writer's last sign of life. None when not running or unknown.
    last_active: float | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def stale(self) -> bool:
        """Running, but without a sign of life for `stale_after_s()`: its writer died
        (`kill -9`, a lost machine) and the run will not finish unless resumed. Judged
        at each call, so a folder inspected once turns stale as time passes."""
        return (
            self.status == "running"
            and self.last_active is not None
            and time.time() - self.last_active > stale_after_s()
        )

    @property
    def stale_questions(self) -> Mapping[str, str]:
        """The dataset's stale questions the run left out, id -> why (its manifest's);
        not `stale`, which is about the run's writer."""
        return self.manifest.stale_questions if self.manifest is not None else {}

    @property
    def readable(self) -> bool:
        """True when the run has rows to read (final Parquet or a journal)."""
        return bool(self.parquet_files or self.journal_files)


@dataclass(frozen=True)
class ShardStatus:
    """What a shard's status marker says: `complete` or `failed` once the shard ended;
    `running` while it has not reported (`found` False) or when the marker cannot be
    read (`problem` says why)."""

    status: str
    totals: Mapping[str, Any] = field(default_factory=dict)
    found: bool = True
    problem: str | None = None


def read_shard_status(fs: fsspec.AbstractFileSystem, path: str) -> ShardStatus:
    """The status marker at `path` (`shard_status_name`); never raises for a bad one."""
    try:
        with fs.open(path, "rb") as fh:
            data = json.loads(fh.read())
    except FileNotFoundError:
        return ShardStatus("running", found=False)
    except (OSError, ValueError, RecursionError) as exc:
        return ShardStatus("running", problem=f"{path}: unreadable shard status ({shown(exc)})")
    status = data.get("status") if isinstance(data, dict) else None
    if status not in ("running", "complete", "failed"):
        quoted = shown(status, 40)
        return ShardStatus("running", problem=f"{path}: unreadable shard status (status {quoted})")
    totals = data.get("totals")
    return ShardStatus(status, dict(totals) if isinstance(totals, Mapping) else {})


def shard_statuses(
    fs: fsspec.AbstractFileSystem, run_path: str, shards: int, names: Collection[str] | None = None
) -> list[ShardStatus]:
    """Every shard's status in order. `names` (the folder's listing, when the caller has
    it) spares a request per shard that has not reported yet."""
    out = []
    for k in range(shards):
        name = shard_status_name(k)
        if names is not None and name not in names:
            out.append(ShardStatus("running", found=False))
        else:
            out.append(read_shard_status(fs, f"{run_path}/{name}"))
    return out


def _sharded_status(statuses: list[ShardStatus]) -> str:
    """A sharded run is failed when a shard failed, complete when every shard completed."""
    states = [s.status for s in statuses]
    if "failed" in states:
        return "failed"
    return "complete" if all(s == "complete" for s in states) else "running"


def inspect_run(location: str, run_id: str) -> RunInfo:
    """Look at one run folder without reading its rows; never raises for a broken run.

    Whatever cannot be read (a manifest that is a dangling symlink or a folder, a file
    deleted meanwhile, hostile JSON) is a problem naming the file. A folder that no longer
    exists gives status `missing`: listings leave such a run out.
    """
    validate_run_id(run_id)
    fs, root = filesystem(location)
    path = f"{root}/{run_id}"
    info = RunInfo(run_id=run_id, path=path, status="corrupt")
    try:
        names = {p.rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)}
    except (FileNotFoundError, NotADirectoryError):
        info.status = "missing"
        info.problems.append(f"{path}: no such run")
        return info
    except OSError as exc:
        info.problems.append(f"{path}: unreadable run folder ({shown(exc)})")
        return info
    info.parquet_files = sorted(f"{path}/{n}" for n in names if is_parquet_name(n))
    info.journal_files = sorted(f"{path}/{n}" for n in names if is_journal_name(n))
    if SUMMARY in names:
        info.summary_file = f"{path}/{SUMMARY}"
    if MANIFEST not in names:
        info.problems.append(f"{path}/{MANIFEST}: missing manifest")
        return info
    try:
        with fs.open(f"{path}/{MANIFEST}", "rb") as fh:
            data = fh.read()
    except OSError as exc:
        info.problems.append(f"{path}/{MANIFEST}: unreadable manifest ({shown(exc)})")
        return info
    try:
        info.manifest = manifest_from_bytes(data, f"{path}/{MANIFEST}", info.problems)
    except ResultsError as exc:
        info.problems.append(str(exc))
        return info
    if info.manifest.run_id != run_id:
        info.problems.append(
            f"{path}/{MANIFEST}: run_id {info.manifest.run_id!r} does not match folder"
        )
    if info.manifest.schema_version > SCHEMA_VERSION:
        info.problems.append(
            f"{path}/{MANIFEST}: schema_version {info.manifest.schema_version} is newer than "
            f"this rageval ({SCHEMA_VERSION}); upgrade rageval"
        )
    info.status = info.manifest.status
    if info.manifest.shards > 1:
        statuses = shard_statuses(fs, path, info.manifest.shards, names)
        info.status = _sharded_status(statuses)
        info.problems += [s.problem for s in statuses if s.problem]
    if info.status == "complete" and not info.parquet_files:
        info.problems.append(f"{path}: status complete but no questions.parquet")
    if info.status == "running":
        info.last_active = _last_active(fs, path)
    return info


def _last_active(fs: fsspec.AbstractFileSystem, run_path: str) -> float | None:
    """Modification time of the newest file in a run folder (an object's LastModified on
    object storage). Runs written before writers had a heartbeat have their journal's."""
    try:
        entries = fs.ls(run_path, detail=True)
    except (OSError, ValueError):
        return None
    times = []
    for e in entries:
        t = e.get("mtime", e.get("LastModified"))
        if isinstance(t, datetime):
            t = t.timestamp()
        if isinstance(t, int | float) and math.isfinite(t):
            times.append(float(t))
    return max(times, default=None)


def scan_runs(location: str | None = None) -> tuple[list[RunInfo], list[IgnoredFolder]]:
    """Every run folder under the results location sorted by run id, and the folders that
    are not runs; never raises on a run.

    Hidden folders (`.rageval/`, `.git/`) are silently not runs; other folders whose names
    are not valid run ids are returned so a reader can say they were ignored. A run
    deleted while it is being listed is left out.
    """
    location = results_location(location)
    names, ignored = run_folders(location)
    infos = (inspect_run(location, name) for name in names)
    return [i for i in infos if i.status != "missing"], ignored


def list_runs(location: str | None = None) -> list[RunInfo]:
    """Every run folder under the results location, sorted by run id (see `scan_runs`)."""
    return scan_runs(location)[0]


@dataclass(frozen=True)
class RowFiles:
    """Which files of a run every reader reads its rows from, and how.

    `parquet` are the Parquet files whose footer reads; `journals` the journals of the
    shards without one (still running, or whose Parquet is damaged); `columns` the
    Parquet columns that read as the row schema says in every one of those files: a
    column of the wrong type in one shard is NULL in all, since the files are one union.
    """

    parquet: tuple[str, ...]
    journals: tuple[str, ...]
    columns: frozenset[str]
    problems: tuple[str, ...]


def usable_files(info: RunInfo, fs: fsspec.AbstractFileSystem) -> RowFiles:
    """The row files of `info` and their usable columns (see `RowFiles`); reads footers
    only. Problems name the file: an unreadable footer, a column of the wrong type, a
    pinned or declared column missing, rows that name another run."""
    declared = info.manifest.metrics if info.manifest else ()
    problems: list[str] = []
    good: list[str] = []
    present: set[str] = set()
    ignored: set[str] = set()
    for p in info.parquet_files:
        try:
            with fs.open(p, "rb") as fh:
                pf = pq.ParquetFile(fh)
                schema = pf.schema_arrow
                strays = stray_run_ids(parquet_run_ids(pf), info.run_id, p)
        except Exception as exc:  # pyarrow raises several types for a damaged footer
            problems.append(f"{p}: unreadable Parquet ({shown(exc)})")
            continue
        usable, column_problems = check_columns(schema, p, declared)
        good.append(p)
        present |= usable
        ignored |= set(schema.names) - usable
        problems += column_problems + strays
    done = {row_file_stem(p) for p in good}
    journals = tuple(j for j in info.journal_files if row_file_stem(j) not in done)
    return RowFiles(tuple(good), journals, frozenset(present - ignored), tuple(problems))


def journal_tables(
    info: RunInfo, journals: Iterable[str], fs: fsspec.AbstractFileSystem
) -> tuple[list[pa.Table], list[str]]:
    """The typed rows of each journal that has any, and the problems of every journal."""
    declared = info.manifest.metrics if info.manifest else ()
    tables, problems = [], []
    for j in journals:
        rows, jp = read_journal(j, fs, declared)
        problems += jp + stray_run_ids((r.get("run_id") for r in rows), info.run_id, j)
        if rows:
            tables.append(rows_to_table(rows, declared=declared))
    return tables, problems


def read_run_rows(
    info: RunInfo, fs: fsspec.AbstractFileSystem | None = None
) -> tuple[pa.Table, list[str]]:
    """All rows of a run as one Arrow table, from the files `usable_files` chooses (the
    rows the query layer's `open_run` reads too), and the problems found.

    `fs` is the filesystem of the run's location (`filesystem(location)`; an object
    store's `RunInfo.path` has no protocol), default the local one. Problems (a corrupt
    Parquet file, a torn journal line, a column of the wrong type) are returned, not
    raised.
    """
    fs = fs or filesystem(info.path if is_remote(info.path) else "file://")[0]
    declared = info.manifest.metrics if info.manifest else ()
    files = usable_files(info, fs)
    tables, problems = [], list(files.problems)
    for p in files.parquet:
        try:
            with fs.open(p, "rb") as fh:
                pf = pq.ParquetFile(fh)
                t = pf.read(columns=[n for n in pf.schema_arrow.names if n in files.columns])
            tables.append(rows_to_table(t.to_pylist(), declared=declared))
        except Exception as exc:  # pyarrow raises several types for a corrupt data page
            problems.append(f"{p}: unreadable Parquet ({shown(exc)})")
    journal_rows, journal_problems = journal_tables(info, files.journals, fs)
    tables += journal_rows
    problems += journal_problems
    if not tables:
        return rows_to_table([], declared=declared), problems
    table = pa.concat_tables(tables, promote_options="default")
    owner = pa.array([info.run_id] * table.num_rows, pa.string())
    return table.set_column(table.schema.get_field_index("run_id"), "run_id", owner), problems


def declared_of(info: RunInfo) -> tuple[DeclaredMetric, ...]:
    """The run's validated declared metrics (none when its manifest is unreadable)."""
    return info.manifest.metrics if info.manifest else ()


def run_catalogue(*infos: RunInfo) -> tuple[Catalogue, tuple[str, ...]]:
    """The built-in catalogue plus these runs' declarations, and the conflicts found
    (a metric declared higher-is-better by one run and lower by another: first wins)."""
    cat, problems = BUILTIN.with_runs((i.run_id, declared_of(i)) for i in infos)
    return cat, tuple(f"{rid}: {msg}" for rid, msg in problems)
