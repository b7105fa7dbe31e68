"""The derived cache's tables on disk: `run_summary.parquet` and the `metrics/` segments.

A finished run does not change, so its narrow rows are written once into a segment of at
most CHUNK_RUNS runs (a first build over 10,000 runs holds one chunk in memory at a time
and is kept chunk by chunk if stopped); a full segment is never merged again, small ones
are merged when there are more than MAX_SEGMENTS, and the summary file is swapped in with a
rename after every change, so a reader sees the old tables or the new, never half.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rageval_core.runs.atomic import write_parquet
from rageval_core.store import sql
from rageval_core.store.schemas import (
    METRICS_SCHEMA,
    SUMMARY_SCHEMA,
    empty_metrics,
    empty_summary,
    is_current,
    versioned,
)

CHUNK_RUNS = 1024  # runs per segment written by one build step; a full one is never merged
MAX_SEGMENTS = 8  # more small segments than this and the next update merges the smallest
SEGMENT_ROW_GROUP = 16_384
PART_PREFIX = ".part-"
STALE_PART_S = 3600.0
"""A worker's part file lives from its write until the server's next segment (seconds to
minutes); one this old is a killed build's, swept at the next update."""


class Segments:
    """The summary file and the segments under one cache folder."""

    def __init__(self, cache_dir: Path):
        self.cache_dir = cache_dir

    def summary_file(self) -> Path:
        return self.cache_dir / "run_summary.parquet"

    def load(self) -> pa.Table:
        path = self.summary_file()
        try:
            t = pq.read_table(path)
            if not is_current(t):
                return empty_summary()
            for seg in {s for s in t.column("segment").to_pylist() if s}:
                # A segment gone or cut short (full disk, bad copy) raises here and the
                # cache is rebuilt, instead of failing every query that reads it.
                pq.read_metadata(self.cache_dir / "metrics" / seg)
            return t.cast(SUMMARY_SCHEMA)
        except (OSError, pa.ArrowException, KeyError):
            return empty_summary()

    def stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.summary_file())
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def segment_dir(self) -> Path:
        seg_dir = self.cache_dir / "metrics"
        seg_dir.mkdir(parents=True, exist_ok=True)
        return seg_dir

    def sweep_parts(self) -> None:
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

    def drop(self, summary: pa.Table, drop: list[str]) -> pa.Table:
        """`summary` without the runs `drop`; each segment holding one is rewritten
        without them (on its own: segments stay the size they were)."""
        seg_dir = self.segment_dir()
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

    def append(
        self, summary: pa.Table, rows: list[dict[str, Any]], tables: list[pa.Table]
    ) -> pa.Table:
        """`summary` plus `rows`, their narrow rows written as one new segment; then, when
        there are more than MAX_SEGMENTS segments of fewer than CHUNK_RUNS runs, the
        smallest of them merged (as many as fit in CHUNK_RUNS runs)."""
        if not rows:
            return summary
        seg_dir = self.segment_dir()
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
        reads again (the views retry once)."""
        table = versioned(table.cast(SUMMARY_SCHEMA))
        write_parquet(self.summary_file(), table)
        live = set(table.column("segment").to_pylist())
        seg_dir = self.cache_dir / "metrics"
        for s in (replaced | set(written)) - live:
            (seg_dir / s).unlink(missing_ok=True)
        return table


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
    only the row group whose min/max statistics cover that id. DuckDB sorts and writes,
    in parallel (faster and smaller than Arrow's sort and writer: docs/scale.md)."""
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
