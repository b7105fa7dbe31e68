"""The derived cache of a results location, and when it changes.

The run folders are the source of truth. The cache holds, for every finished run
(complete or failed), one summary row and its narrow per-question rows (`segments.py`),
keyed by run id plus a fingerprint of its files (names, sizes, mtimes): a finished run does
not change, so the cache is updated run by run (`DerivedCache.update`) — runs gone or
changed leave their segments, runs new or changed are summarised (`summarising.py`) a
chunk at a time, in worker processes when there are many (`workers.py`), and the runs
index (`runs_index.py`) is rewritten. Running runs are summarised from their journals at
every refresh and never cached. `ResultsStore` decides when to update.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import fsspec
import pyarrow as pa

from rageval_core.runs.reading import RunInfo
from rageval_core.runs.summary import no_figures
from rageval_core.store import segments, summarising
from rageval_core.store.runs_index import RunsIndex
from rageval_core.store.segments import Segments
from rageval_core.store.summarising import (
    SUMMARISING,
    Progress,
    Summariser,
    manifest_row,
    summarise_part,
)
from rageval_core.store.workers import WorkersUnavailable, in_workers

_log = logging.getLogger(__name__)

PARALLEL_RUNS = 1000
"""A build of this many runs or more is summarised in worker processes, one per core, a
part of BATCH_RUNS runs at a time (`workers.in_workers`); fewer are summarised here, where
DuckDB's own threads already keep the cores busy and the workers' start-up costs more than
it saves (measured in docs/scale.md). A build the caller does not wait for goes to workers
at any size (`update(..., beside_pages=True)`)."""


def _shifted(progress: Progress | None, start: int, total: int) -> Progress | None:
    """`progress` for one chunk of a build: counts from `start` of `total` runs."""
    if progress is None:
        return None
    return lambda what, done, _: progress(what, start + done, total)


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
        self.location = location  # what a worker process opens again (`summarise_part`)
        self.segments = Segments(cache_dir)
        self.index = RunsIndex(cache_dir)
        self.summariser = Summariser(fs, to_url, remote)

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
        self.segments.sweep_parts()
        cached_fp = _fingerprints(cached)
        keep = _kept(cached_fp, finished)
        drop = [r for r in cached_fp if r not in keep]
        add = [v for r, v in finished.items() if r not in keep]
        summary = cached
        if drop:
            summary = self.segments.drop(summary, drop)
        in_here = not add or (len(add) < PARALLEL_RUNS and not beside_pages)
        if not in_here:
            try:
                summary = self._update_in_workers(summary, add, progress, work)
            except WorkersUnavailable:  # before any run was summarised
                _log.warning("no worker process starts in this program: building here")
                in_here = True
        for start in range(0, len(add) if in_here else 0, segments.CHUNK_RUNS):
            chunk = add[start : start + segments.CHUNK_RUNS]
            rows, tables = self.summariser.compute(cur, chunk, _shifted(progress, start, len(add)))
            summary = self.segments.append(summary, rows, tables)
        if add or drop or (summary.num_rows and not self.index.file().exists()):
            self.index.write(summary, finished, {info.run_id for info, _ in add})
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
            summary = self.segments.append(summary, sorted(rows, key=lambda r: r["run_id"]), tables)
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
            if len(rows) + len(got) > segments.CHUNK_RUNS:
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
        n = summarising.BATCH_RUNS
        parts = [add[i : i + n] for i in range(0, len(add), n)]
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
