"""`ResultsStore`: a results location, its DuckDB connection, its runs and their problems.

A refresh scans the run folders (the source of truth), keeps the `RunInfo` of each, and
brings the derived cache (`cache.DerivedCache`: one summary row and the narrow rows per
finished run) up to date; views read through the sources here: `summary_source`,
`metrics_source` (the cache plus running runs) and `run_source` (one run's own files),
each a `RunSource`. Any broken run becomes a `RunProblem`; nothing here raises for one.

The cache lives in `<results>/.rageval/` for a local, writable location (unless
`read_only=True`), else under `$XDG_CACHE_HOME/rageval/<hash of location>/`. In read-only
mode nothing is ever written into the results location.
"""

from __future__ import annotations

import gc
import hashlib
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb
import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from rageval_core.catalogue import BUILTIN, Catalogue
from rageval_core.errors import ResultsError
from rageval_core.query.cache import (
    SUMMARY_SCHEMA,
    DerivedCache,
    Progress,
    declared_of,
    empty_metrics,
    empty_summary,
)
from rageval_core.query.source import RunSource, open_run
from rageval_core.results import (
    SCHEMA_VERSION,
    IgnoredFolder,
    RunInfo,
    describe,
    display_name,
    filesystem,
    folder_kind,
    inspect_run,
    is_remote,
    results_location,
    run_folders,
    user_cache_dir,
    write_parquet,
)


@dataclass(frozen=True)
class RunProblem:
    """Something wrong with one run. `run_id` is the run's id; for a folder that is not a
    run, its display-safe name (`results.display_name`); empty for the results location
    or the cache as a whole."""

    run_id: str
    message: str


@dataclass(frozen=True)
class _State:
    summary_path: str | None
    segments: tuple[str, ...]
    live_summary: pa.Table
    live_metrics: pa.Table
    runs: tuple[RunInfo, ...]
    problems: tuple[RunProblem, ...]
    refreshed_at: float
    fingerprint: str = ""
    # every run folder's file fingerprint, the RunInfo read for it, and the cache summary
    # file's stat, so a refresh that finds nothing new costs one listing (one `scandir`
    # per run folder locally, a paginated listing of the bucket) and no manifest parsing
    scan: tuple[tuple[str, str], ...] = ()
    ignored: tuple[IgnoredFolder, ...] = ()
    infos: dict[str, tuple[str, RunInfo]] = field(default_factory=dict)
    cache_stamp: tuple[int, int, int] | None = None
    catalogue: Catalogue = BUILTIN
    by_id: dict[str, RunInfo] = field(default_factory=dict)
    listed: bool = True  # False while the state is the runs index only (`open_indexed`)


def run_catalogue(*infos: RunInfo) -> tuple[Catalogue, tuple[str, ...]]:
    """The built-in catalogue plus these runs' declarations, and the conflicts found
    (a metric declared higher-is-better by one run and lower by another: first wins)."""
    cat, problems = BUILTIN.with_runs((i.run_id, declared_of(i)) for i in infos)
    return cat, tuple(f"{rid}: {msg}" for rid, msg in problems)


class ResultsStore:
    """A results location opened for queries; share one per process, a cursor per query.

    `refresh()` re-lists the runs, updates the cache for finished runs whose files changed
    and re-reads running runs' journals. Query functions never refresh by themselves;
    call `refresh()` (or `maybe_refresh(max_age)`) when new runs should appear.
    """

    def __init__(
        self,
        location: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        cache_dir: str | os.PathLike[str] | None = None,
        refresh: bool = True,
    ):
        self.location = results_location(location)
        self.read_only = read_only
        self.fs, self.root = filesystem(self.location)
        self.remote = is_remote(self.location)
        self.con = duckdb.connect(":memory:")
        if self.remote:
            self.con.register_filesystem(self.fs)
        self.cache_dir = Path(cache_dir) if cache_dir else self._pick_cache_dir()
        self.cache = DerivedCache(self.cache_dir, self.fs, self.to_url, self.remote)
        self._lock = threading.Lock()
        self._state = _State(None, (), empty_summary(), empty_metrics(), (), (), 0.0)
        self._memo: dict[tuple, Any] = {}
        self._memo_lock = threading.Lock()
        if refresh:
            self.refresh()

    # ------------------------------------------------------------------ plumbing

    def _pick_cache_dir(self) -> Path:
        if not self.remote and not self.read_only:
            local = Path(self.root) / ".rageval"
            try:
                local.mkdir(parents=True, exist_ok=True)
                if os.access(local, os.W_OK):
                    return local
            except OSError:
                pass
        # realpath, not Path.resolve(): it never raises (a symlink loop included)
        key = self.location if self.remote else os.path.realpath(self.root)
        path = user_cache_dir() / hashlib.sha256(key.encode()).hexdigest()[:16]
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            path = Path(tempfile.mkdtemp(prefix="rageval-cache-"))
        return path

    def to_url(self, path: str) -> str:
        """The path DuckDB opens for a file of the location (a URL for object stores)."""
        return self.fs.unstrip_protocol(path) if self.remote else path

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A fresh cursor: one per query, so dashboard sessions can share the store. Use it
        as `with store.cursor() as cur:`: closing it drops what was registered on it."""
        return self.con.cursor()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ runs

    @property
    def problems(self) -> list[RunProblem]:
        """Every problem found at the last refresh, one per run and message."""
        return list(self._state.problems)

    def runs(self) -> list[RunInfo]:
        """The runs seen at the last refresh, sorted by run id."""
        return list(self._state.runs)

    def catalogue(self) -> Catalogue:
        """The built-in catalogue plus every run's declared metrics (last refresh): the
        whitelist of cross-run views. Conflicting declarations are problems of the run."""
        return self._state.catalogue

    def run(self, run: str | RunInfo) -> RunInfo:
        """The run a view reads: a `RunInfo` as given; an id as the last refresh saw it,
        without touching its folder (the id was validated where it came in: the URL, the
        command line). A run that was running then, or is newer than the refresh, is
        looked at now (`inspect_run` validates the id). Lenient: a damaged run is a
        `RunInfo` with problems; `run_info` is the strict check for commands."""
        if isinstance(run, RunInfo):
            return run
        held = self._state.by_id.get(run)
        if held is not None and held.status != "running":
            return held
        return inspect_run(self.location, run)

    def run_info(self, run_id: str) -> RunInfo:
        """A fresh look at one run folder (constant time); ResultsError when unreadable."""
        return require_readable(inspect_run(self.location, run_id))

    def fingerprint(self) -> str:
        """Key of what the last refresh saw (every run's files: names, sizes, mtimes).

        Unchanged while nothing changed on disk, so it can key memoised query results.
        """
        return self._state.fingerprint

    @property
    def refreshed_at(self) -> float:
        return self._state.refreshed_at

    def memo(self, key: tuple, compute: Any, *, persist: bool = False) -> Any:
        """`compute()` once per key and store state (the fingerprint); small LRU in memory.

        `persist=True` (DataFrame values, `key[0]` a plain name) also keeps the value as a
        small Parquet file in the cache directory, so a new process over unchanged results
        reads it instead of computing it; files of an older store state are removed.
        """
        full = (self._state.fingerprint, *key)
        cached = self._memo.get(full)
        if cached is not None:
            return cached.copy()
        value = self._memo_load(full) if persist else None
        if value is None:
            value = compute()
            if persist:
                self._memo_save(full, value)
        with self._memo_lock:  # sessions run on threads; eviction must not race
            if len(self._memo) >= 32:
                self._memo.pop(next(iter(self._memo)), None)
            self._memo[full] = value
        return value.copy()

    def _memo_path(self, full: tuple) -> Path | None:
        fingerprint, name = full[0], str(full[1])
        if not fingerprint or not self._state.runs or not name.isidentifier():
            return None
        digest = hashlib.sha256(repr(full).encode()).hexdigest()[:16]
        return self.cache_dir / "memo" / f"{name}-{fingerprint}-{digest}.parquet"

    def _memo_load(self, full: tuple) -> Any:
        path = self._memo_path(full)
        if path is None or not path.exists():
            return None
        try:
            return pq.read_table(path).to_pandas()
        except (OSError, pa.ArrowException):
            return None

    def _memo_save(self, full: tuple, value: Any) -> None:
        path = self._memo_path(full)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_parquet(path, pa.Table.from_pandas(value, preserve_index=False))
            current = f"{full[1]}-{full[0]}-"
            for old in path.parent.glob(f"{full[1]}-*.parquet"):
                if not old.name.startswith(current):
                    old.unlink(missing_ok=True)
        except (OSError, pa.ArrowException):
            pass  # a memo is an optimisation; an unwritable cache only costs time

    def maybe_refresh(self, max_age_s: float = 10.0) -> bool:
        """Refresh when the last refresh is older than `max_age_s`; True if it ran."""
        if time.time() - self._state.refreshed_at < max_age_s:
            return False
        self.refresh()
        return True

    # ------------------------------------------------------------------ cache

    def run_fingerprint(self, info: RunInfo) -> str:
        """The run's file fingerprint as the last refresh saw it (names, sizes, mtimes),
        else a fresh look: the key of anything derived from one run's files."""
        held = self._state.infos.get(info.run_id)
        if held:
            return held[0]
        if not self.remote:
            return _local_fingerprint(info.path) or ""
        return _remote_fingerprint(self.fs, info.path)

    def refresh(self, progress: Progress | None = None) -> None:
        """Re-list runs, bring the cache up to date, re-read running runs' journals.

        `progress(what, done, total)` is called as run folders are read and runs are
        summarised (the first build over a large location takes seconds)."""
        with self._lock:
            self._state = self._refresh(progress)

    def open_indexed(self) -> bool:
        """Take the finished runs of the cache's runs index as the state, without listing
        the location; False (nothing done) when there is no index or the store was
        refreshed already. What a restarted dashboard shows first: at 10,000 runs the
        listing is a third of its first page, and the state is what the last refresh
        found. Runs started, changed or removed since, running runs and folders that are
        not runs appear with the next `refresh()`, which the caller starts soon after."""
        with self._lock:
            if self._state.refreshed_at:
                return False
            with gc_paused():
                known = self.cache.run_infos(self.root)
                if not known:
                    return False
                scan = tuple(sorted((rid, fp) for rid, (fp, _) in known.items()))
                state = self._refresh(listing=(scan, []), known=known)
                self._state = replace(state, listed=False)
            return True

    @property
    def listed(self) -> bool:
        """False while the state is the runs index only: the location not listed yet."""
        return self._state.listed

    def knows(self, run_id: str) -> bool:
        """Whether the last refresh saw a run of that id (no folder is looked at)."""
        return run_id in self._state.by_id

    def listed_runs(self) -> list[RunInfo]:
        """The runs of the last refresh; before any, the location's runs as a refresh
        would list them, without summarising a run or writing a cache: what a command
        that needs to know which runs exist, not their figures, reads (the previous run
        of `rageval run`'s headline and `rageval check --baseline latest`). A manifest is
        read only for a folder the cache's runs index does not hold as it is now.
        ResultsError when the location cannot be listed."""
        if self._state.refreshed_at:
            return self.runs()
        scan, _ = self._scan()
        return self._read_folders(scan, self.cache.run_infos(self.root))

    def _scan(self) -> tuple[tuple[tuple[str, str], ...], list[IgnoredFolder]]:
        """(run id, fingerprint) of every run folder, and the folders that are not runs."""
        if self.remote:
            return _scan_remote(self.fs, self.root)
        return _scan_local(self.location)

    def _read_folders(
        self,
        scan: tuple[tuple[str, str], ...],
        known: dict[str, tuple[str, RunInfo]],
        progress: Progress | None = None,
    ) -> list[RunInfo]:
        """The `RunInfo` of each scanned folder: `known`'s when its fingerprint is the
        same, else a fresh look; a folder deleted since the scan is left out."""
        runs: list[RunInfo] = []
        for n, (rid, fp) in enumerate(scan):
            if progress and n % 256 == 0:
                progress("reading run folders", n, len(scan))
            old = known.get(rid)
            info = old[1] if old and old[0] == fp else inspect_run(self.location, rid)
            if info.status != "missing":
                runs.append(info)
        return runs

    def _refresh(
        self,
        progress: Progress | None = None,
        listing: tuple[tuple[tuple[str, str], ...], list[IgnoredFolder]] | None = None,
        known: dict[str, tuple[str, RunInfo]] | None = None,
    ) -> _State:
        prev = self._state
        unlisted: list[RunProblem] = []
        try:
            scan, ignored = listing if listing is not None else self._scan()
        except ResultsError as exc:  # the location itself cannot be listed: no runs
            scan, ignored = (), []
            unlisted.append(RunProblem("", str(exc)))
        if (
            prev.refreshed_at
            and (scan, ignored) == (prev.scan, list(prev.ignored))
            and self.cache.stamp() == prev.cache_stamp
        ):
            # Nothing on disk changed (every run folder's names, sizes and mtimes, and the
            # cache, which another process may have rewritten): same state, new time.
            return replace(prev, refreshed_at=time.time())
        # Only folders whose files changed are inspected again (manifest parsing was most
        # of a refresh at 1,000 runs, and on a bucket it is a request per run); a new
        # process starts from the cache's runs index, so a restart over unchanged runs
        # opens no manifest either. A folder deleted since the scan is left out.
        fps = dict(scan)
        runs = self._read_folders(
            scan, known or prev.infos or self.cache.run_infos(self.root), progress
        )
        problems = unlisted + [RunProblem(f.name, f.message) for f in ignored]
        finished: dict[str, tuple[RunInfo, str]] = {}
        running: list[RunInfo] = []
        catalogue, conflicts = BUILTIN.with_runs((i.run_id, declared_of(i)) for i in runs)
        problems += [RunProblem(rid, msg) for rid, msg in conflicts]
        for info in runs:
            problems += [RunProblem(info.run_id, p) for p in info.problems]
            m = info.manifest
            if m is None or m.schema_version > SCHEMA_VERSION:
                continue  # not a run we can describe; reported above
            if info.status == "running":
                running.append(info)
            else:
                finished[info.run_id] = (info, fps[info.run_id])

        live_fps = {info.run_id: fps[info.run_id] for info in running}
        h = hashlib.sha256()
        for rid, fp in sorted({**{r: v[1] for r, v in finished.items()}, **live_fps}.items()):
            h.update(f"{rid}:{fp};".encode())
        h.update(";".join(sorted(p.run_id + p.message for p in problems)).encode())
        with self.cursor() as cur:
            summary = self.cache.update(cur, self.cache.load(), finished, progress)
            live_rows, live_tables = [], []
            for info in running:
                live_rows.append(
                    {**self.cache.summary_row(cur, info), "fingerprint": "", "segment": ""}
                )
                live_tables.append(self.cache.narrow_rows(cur, info))

        for r in summary.select(["run_id", "problems"]).to_pylist():
            problems += [
                RunProblem(r["run_id"], p)
                for p in r["problems"] or ()
                if p not in {q.message for q in problems if q.run_id == r["run_id"]}
            ]
        segs = sorted({s for s in summary.column("segment").to_pylist() if s})
        live_summary = pa.Table.from_pylist(live_rows, schema=SUMMARY_SCHEMA)
        for r in live_rows:
            problems += [
                RunProblem(r["run_id"], p)
                for p in r["problems"]
                if p not in {q.message for q in problems if q.run_id == r["run_id"]}
            ]
        return _State(
            summary_path=str(self.cache.summary_file())
            if self.cache.summary_file().exists()
            else None,
            segments=tuple(str(self.cache_dir / "metrics" / s) for s in segs),
            live_summary=live_summary,
            live_metrics=pa.concat_tables([empty_metrics(), *live_tables]),
            runs=tuple(runs),
            problems=tuple(problems),
            refreshed_at=time.time(),
            fingerprint=h.hexdigest()[:16],
            scan=scan,
            ignored=tuple(ignored),
            infos={r.run_id: (fps[r.run_id], r) for r in runs},
            cache_stamp=self.cache.stamp(),
            catalogue=catalogue,
            by_id={r.run_id: r for r in runs},
        )

    # ------------------------------------------------------------------ sources for views

    def summary_source(self, cur: duckdb.DuckDBPyConnection) -> AbstractContextManager[RunSource]:
        """FROM text over every run's summary row (cached finished runs + live running)."""
        st = self._state
        return self._union_source(cur, "summary", [st.summary_path], st.live_summary)

    def metrics_source(self, cur: duckdb.DuckDBPyConnection) -> AbstractContextManager[RunSource]:
        """FROM text over the narrow per-question rows of every run."""
        st = self._state
        return self._union_source(cur, "metrics", list(st.segments), st.live_metrics)

    @staticmethod
    @contextmanager
    def _union_source(
        cur: duckdb.DuckDBPyConnection, kind: str, paths: list[str | None], live: Any
    ) -> Iterator[RunSource]:
        """`(cached Parquet files UNION ALL BY NAME live rows)` as FROM text and its params.

        The live table is registered under a unique name on this cursor only, so sessions
        querying at the same time never see each other's registrations.
        """
        paths = [p for p in paths if p]
        parts, params = [], {}
        if paths:
            parts.append(f"SELECT * FROM read_parquet(${kind}_paths)")
            params[f"{kind}_paths"] = paths
        name = f"live_{kind}_{uuid.uuid4().hex}"
        cur.register(name, live)
        parts.append(f"SELECT * FROM {name}")
        try:
            yield RunSource("(" + " UNION ALL BY NAME ".join(parts) + ")", params)
        finally:
            cur.unregister(name)

    @contextmanager
    def run_source(
        self, cur: duckdb.DuckDBPyConnection, run: str | RunInfo, alias: str = "run"
    ) -> Iterator[RunSource]:
        """FROM text over one run's rows, read from its own files by path; `run` is an id,
        or the `RunInfo` a caller already holds (its folder is then not looked at again).

        The run's own problems come first in the source's. A run with nothing to read (a
        complete manifest without its Parquet, a folder deleted since the listing) gives
        an empty source rather than an error: a page over it shows no rows and the
        problem, like any other damage. `run_info` is the strict check for commands.
        """
        info = self.run(run)
        with open_run(cur, info, fs=self.fs, to_url=self.to_url, alias=alias) as src:
            src.problems[:0] = info.problems
            yield src


def require_readable(info: RunInfo) -> RunInfo:
    """`info`, or a ResultsError naming the run when it is gone or has nothing to read."""
    if info.status == "missing":
        raise ResultsError(f"run {info.run_id!r} not found: {info.path}: no such run")
    if not info.readable:
        detail = "; ".join(info.problems) or "no questions file or journal"
        raise ResultsError(f"run {info.run_id!r} cannot be read: {detail}")
    return info


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection meanwhile, for code that builds many objects none of
    which is cyclic garbage: each batch of new objects set the collector off again, each
    time walking the whole heap of a server (a third of reading 10,000 runs' index rows,
    a fifth of the Judge page's 78,000 label pairs). Process-wide, so two threads may
    overlap; it is only ever turned back on by whoever turned it off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _local_fingerprint(path: str) -> str | None:
    """Fingerprint of a local run folder's files (names, sizes, mtimes); None if it is gone.

    The same text `fsspec`'s local `ls(detail=True)` gives (lstat mtime, a symlink's
    target size), so caches written through either path agree.
    """
    parts = []
    try:
        with os.scandir(path) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return None
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        size = st.st_size
        if e.is_symlink():
            try:
                size = e.stat(follow_symlinks=True).st_size
            except OSError:
                size = 0
        parts.append(f"{e.name}:{size}:{st.st_mtime or ''}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:20]


def _scan_local(location: str) -> tuple[tuple[tuple[str, str], ...], list[IgnoredFolder]]:
    """(run id, fingerprint) of every run folder of a local location, sorted by run id
    (the folders `scan_runs` looks at; one deleted meanwhile is left out), and the
    folders that are not runs."""
    _, root = filesystem(location)
    names, ignored = run_folders(location)
    out = []
    for name in names:
        fp = _local_fingerprint(f"{root}/{name}")
        if fp is not None:
            out.append((name, fp))
    return tuple(out), ignored


def _stamp(entry: dict[str, Any]) -> str:
    return str(entry.get("mtime") or entry.get("LastModified") or entry.get("ETag") or "")


def _scan_remote(
    fs: fsspec.AbstractFileSystem, root: str
) -> tuple[tuple[tuple[str, str], ...], list[IgnoredFolder]]:
    """`_scan_local` for an object store: every object under the location in one listing
    (`find`: a request per 1,000 objects, not one per run), grouped by run folder into
    fingerprints of (path in the folder, size, LastModified)."""
    try:
        entries = fs.find(root, detail=True)
    except FileNotFoundError:
        return (), []
    except OSError as exc:
        raise ResultsError(f"{root}: unreadable results location ({describe(exc)})") from exc
    parts: dict[str, list[str]] = {}
    prefix = root.rstrip("/") + "/"
    for path, e in entries.items():
        folder, _, rest = path.removeprefix(prefix).partition("/")
        if rest and path.startswith(prefix):  # a file directly under the location is no run
            parts.setdefault(folder, []).append(_object_part(rest, e))
    kinds = {name: folder_kind(name) for name in parts}
    scan = tuple(
        (name, _digest(parts[name])) for name in sorted(n for n, k in kinds.items() if k == "run")
    )
    ignored = [IgnoredFolder(display_name(n)) for n, k in kinds.items() if k == "invalid"]
    return scan, sorted(ignored, key=lambda f: f.name)


def _remote_fingerprint(fs: fsspec.AbstractFileSystem, path: str) -> str:
    """One run folder's fingerprint in an object store, as `_scan_remote` gives it, from
    a listing of that folder only; "" when it cannot be listed."""
    try:
        entries = fs.find(path, detail=True)
    except OSError:
        return ""
    prefix = path.rstrip("/") + "/"
    inside = {p.removeprefix(prefix): e for p, e in entries.items() if p.startswith(prefix)}
    return _digest([_object_part(name, e) for name, e in inside.items()])


def _object_part(name: str, entry: dict[str, Any]) -> str:
    """An object's share of its run folder's fingerprint: path in the folder, size, stamp."""
    return f"{name}:{entry.get('size')}:{_stamp(entry)}"


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("|".join(sorted(parts)).encode()).hexdigest()[:20]
