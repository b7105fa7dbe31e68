"""`ResultsStore`: a results location, its DuckDB connection, its runs and their problems.

A refresh scans the run folders (the source of truth), keeps the `RunInfo` of each, and
brings the derived cache (`update.DerivedCache`: one summary row and the narrow rows per
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
import pyarrow as pa
import pyarrow.parquet as pq

from rageval_core.catalogue import BUILTIN, Catalogue
from rageval_core.errors import ResultsError
from rageval_core.runs.atomic import write_parquet
from rageval_core.runs.layout import (
    filesystem,
    is_remote,
    results_location,
    shared_cache_dir,
)
from rageval_core.runs.listing import (
    IgnoredFolder,
    Scan,
    local_fingerprint,
    remote_fingerprint,
    scan_folders,
)
from rageval_core.runs.manifest import SCHEMA_VERSION
from rageval_core.runs.reading import RunInfo, declared_of, inspect_run
from rageval_core.runs.source import RunSource, open_run
from rageval_core.store.schemas import SUMMARY_SCHEMA, empty_metrics, empty_summary
from rageval_core.store.summarising import Progress, manifest_row
from rageval_core.store.update import DerivedCache


@dataclass(frozen=True)
class RunProblem:
    """Something wrong with one run. `run_id` is the run's id; for a folder that is not a
    run, its display-safe name (`errors.shown`); empty for the results location
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
    scan: Scan = ()
    ignored: tuple[IgnoredFolder, ...] = ()
    infos: dict[str, tuple[str, RunInfo]] = field(default_factory=dict)
    cache_stamp: tuple[int, int, int] | None = None
    catalogue: Catalogue = BUILTIN
    by_id: dict[str, RunInfo] = field(default_factory=dict)
    listed: bool = True  # False while the state is the runs index only (`open_indexed`)
    pending: int = 0  # finished runs shown without figures (`open_listed`): the build to do


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
        self.cache = DerivedCache(self.cache_dir, self.fs, self.to_url, self.remote, self.location)
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
        path = shared_cache_dir(key)
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
        held = self.find(run)
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
        """Refresh when the last refresh is older than `max_age_s`; True if it ran. A
        refresh already under way (another session's, the first build on its thread) is
        not waited for: its caller gets the state it finds, the news with a later call."""
        if time.time() - self._state.refreshed_at < max_age_s:
            return False
        if not self._lock.acquire(blocking=False):
            return False
        try:
            self._state = self._refresh()
        finally:
            self._lock.release()
        return True

    # ------------------------------------------------------------------ cache

    def run_fingerprint(self, info: RunInfo) -> str:
        """The run's file fingerprint as the last refresh saw it (names, sizes, mtimes),
        else a fresh look: the key of anything derived from one run's files."""
        held = self._state.infos.get(info.run_id)
        if held:
            return held[0]
        if not self.remote:
            return local_fingerprint(info.path) or ""
        return remote_fingerprint(self.fs, info.path)

    def refresh(self, progress: Progress | None = None, *, beside_pages: bool = False) -> None:
        """Re-list runs, bring the cache up to date, re-read running runs' journals.

        `progress(what, done, total)` is called as run folders are read and runs are
        summarised (the first build over a large location takes seconds). `beside_pages`:
        nobody waits for this refresh while pages are drawn (a server's build on a thread
        of its own), so the runs are summarised in worker processes at any number."""
        with self._lock:
            self._state = self._refresh(progress, beside_pages=beside_pages)

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
                known = self.cache.index.run_infos(self.root)
                if not known:
                    return False
                scan = tuple(sorted((rid, fp) for rid, (fp, _) in known.items()))
                state = self._refresh(listing=(scan, []), known=known)
                self._state = replace(state, listed=False)
            return True

    def open_listed(self, progress: Progress | None = None) -> int | None:
        """List the location and take its runs as the state, their figures not yet
        summarised: every run's manifest fields, with NULL figures and no per-question
        rows. What a first start over a large location shows while `refresh()` builds
        the cache (12 s at 1,000 runs of 1,000 questions): the run list, each run's own
        views (they read its folder) and how far the build is. The number of finished
        runs the build has to summarise; None (nothing done) when already refreshed."""
        with self._lock:
            if self._state.refreshed_at:
                return None
            self._state = self._refresh(progress, summarise=False)
            return self._state.pending

    @property
    def pending(self) -> int:
        """Finished runs whose figures the state lacks (`open_listed`); 0 once built."""
        return self._state.pending

    @property
    def listed(self) -> bool:
        """False while the state is the runs index only: the location not listed yet."""
        return self._state.listed

    def find(self, run_id: str) -> RunInfo | None:
        """The run of that id as the last refresh saw it, None when it saw none: the one
        way the app asks whether a run exists (no folder is looked at; `run` opens it)."""
        return self._state.by_id.get(run_id)

    def listed_runs(self) -> list[RunInfo]:
        """The runs of the last refresh; before any, the location's runs as a refresh
        would list them, without summarising a run or writing a cache: what a command
        that needs to know which runs exist, not their figures, reads (the previous run
        of `rageval run`'s headline and `rageval check --baseline latest`). A manifest is
        read only for a folder the cache's runs index does not hold as it is now.
        ResultsError when the location cannot be listed."""
        if self._state.refreshed_at:
            return self.runs()
        scan, _ = scan_folders(self.location)
        return self._read_folders(scan, self.cache.index.run_infos(self.root))

    def _read_folders(
        self,
        scan: Scan,
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
        listing: tuple[Scan, list[IgnoredFolder]] | None = None,
        known: dict[str, tuple[str, RunInfo]] | None = None,
        *,
        summarise: bool = True,
        beside_pages: bool = False,
    ) -> _State:
        """The store's next state: list the location (or take `listing`), and when any
        folder or the cache changed, inspect what changed, summarise and index (or, not
        `summarise`, give every run its manifest fields only: `open_listed`)."""
        prev = self._state
        scan, ignored, problems = self._list(listing)
        if (
            prev.refreshed_at
            and (scan, ignored) == (prev.scan, list(prev.ignored))
            and self.cache.segments.stamp() == prev.cache_stamp
        ):
            # Nothing on disk changed (every run folder's names, sizes and mtimes, and the
            # cache, which another process may have rewritten): same state, new time, and
            # listed now if it was opened on the runs index.
            return replace(prev, refreshed_at=time.time(), listed=True)
        fps = dict(scan)
        runs = self._read_folders(
            scan, known or prev.infos or self.cache.index.run_infos(self.root), progress
        )
        problems += [RunProblem(f.name, f.message) for f in ignored]
        catalogue, conflicts = BUILTIN.with_runs((i.run_id, declared_of(i)) for i in runs)
        problems += [RunProblem(rid, msg) for rid, msg in conflicts]
        problems += [RunProblem(i.run_id, p) for i in runs for p in i.problems]
        finished, running = _by_status(runs, fps)
        fingerprint = _state_fingerprint(
            finished, {i.run_id: fps[i.run_id] for i in running}, problems
        )
        pending = 0
        if summarise:
            summary, live_rows, live_tables = self._summarise(
                finished, running, progress, beside_pages
            )
        else:
            summary, live_tables = empty_summary(), []
            live_rows = [_unsummarised(i) for i in [*(v[0] for v in finished.values()), *running]]
            pending = self.cache.to_summarise(self.cache.segments.load(), finished)
            fingerprint += "-unsummarised"  # not the key of the built state's results
        problems = _with_new(problems, summary.select(["run_id", "problems"]).to_pylist())
        problems = _with_new(problems, live_rows)
        segs = sorted({s for s in summary.column("segment").to_pylist() if s})
        summary_file = self.cache.segments.summary_file()
        return _State(
            summary_path=str(summary_file) if summary_file.exists() else None,
            segments=tuple(str(self.cache_dir / "metrics" / s) for s in segs),
            live_summary=pa.Table.from_pylist(live_rows, schema=SUMMARY_SCHEMA),
            live_metrics=pa.concat_tables([empty_metrics(), *live_tables]),
            runs=tuple(runs),
            problems=tuple(problems),
            refreshed_at=time.time(),
            fingerprint=fingerprint,
            scan=scan,
            ignored=tuple(ignored),
            infos={r.run_id: (fps[r.run_id], r) for r in runs},
            # never the cache's own stamp while unsummarised: the next refresh summarises
            cache_stamp=self.cache.segments.stamp() if summarise else (-1, -1, -1),
            catalogue=catalogue,
            by_id={r.run_id: r for r in runs},
            pending=pending,
        )

    def _list(
        self, listing: tuple[Scan, list[IgnoredFolder]] | None
    ) -> tuple[Scan, list[IgnoredFolder], list[RunProblem]]:
        """The run folders (with fingerprints) and the folders that are not runs; a
        location that cannot be listed has no runs and one problem."""
        if listing is not None:
            return *listing, []
        try:
            return *scan_folders(self.location), []
        except ResultsError as exc:
            return (), [], [RunProblem("", str(exc))]

    def _summarise(
        self,
        finished: dict[str, tuple[RunInfo, str]],
        running: list[RunInfo],
        progress: Progress | None,
        beside_pages: bool,
    ) -> tuple[pa.Table, list[dict[str, Any]], list[pa.Table]]:
        """The cache brought up to date with the finished runs (its summary table), and
        the summary rows and narrow rows of the running ones, read afresh."""
        with self.cursor() as cur:
            summary = self.cache.update(
                cur, self.cache.segments.load(), finished, progress, beside_pages=beside_pages
            )
            live_rows, live_tables = [], []
            summariser = self.cache.summariser
            for info in running:
                live_rows.append(
                    {**summariser.summary_row(cur, info), "fingerprint": "", "segment": ""}
                )
                live_tables.append(summariser.narrow_rows(cur, info))
        return summary, live_rows, live_tables

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


def _by_status(
    runs: list[RunInfo], fps: dict[str, str]
) -> tuple[dict[str, tuple[RunInfo, str]], list[RunInfo]]:
    """The finished runs (with their fingerprints, for the cache) and the running ones;
    a run without a manifest this rageval can read is neither (its problem says why)."""
    finished: dict[str, tuple[RunInfo, str]] = {}
    running: list[RunInfo] = []
    for info in runs:
        m = info.manifest
        if m is None or m.schema_version > SCHEMA_VERSION:
            continue
        if info.status == "running":
            running.append(info)
        else:
            finished[info.run_id] = (info, fps[info.run_id])
    return finished, running


def _state_fingerprint(
    finished: dict[str, tuple[RunInfo, str]], live: dict[str, str], problems: list[RunProblem]
) -> str:
    """What memoised query results are keyed by: every described run's files, and the
    problems (a run that turns unreadable changes what pages say)."""
    h = hashlib.sha256()
    for rid, fp in sorted({**{r: v[1] for r, v in finished.items()}, **live}.items()):
        h.update(f"{rid}:{fp};".encode())
    h.update(";".join(sorted(p.run_id + p.message for p in problems)).encode())
    return h.hexdigest()[:16]


def _unsummarised(info: RunInfo) -> dict[str, Any]:
    """A summary row of `info`'s manifest fields only: its figures NULL until summarised."""
    return {**manifest_row(info), "problems": [], "fingerprint": "", "segment": ""}


def _with_new(problems: list[RunProblem], rows: list[dict[str, Any]]) -> list[RunProblem]:
    """`problems` and those of summary `rows` (`run_id`, `problems`) not already there."""
    out = list(problems)
    for r in rows:
        seen = {q.message for q in out if q.run_id == r["run_id"]}
        out += [RunProblem(r["run_id"], p) for p in r["problems"] or () if p not in seen]
    return out


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
