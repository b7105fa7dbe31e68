"""Atomic, durable writes of run files: a reader sees the old file or the new one."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


@contextmanager
def _atomic_target(path: str | os.PathLike[str]) -> Iterator[str]:
    """Yield a temporary path beside `path`; on success publish it with one rename.

    A reader therefore sees the old file or the new one, never half of either. The file is
    made world-readable (mkstemp creates 0600) so a dashboard running as another user on a
    shared host can read what a run wrote.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` durably (fsync before the rename) and atomically."""
    with _atomic_target(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def atomic_write_json(path: str | os.PathLike[str], value: Any) -> None:
    data = json.dumps(value, indent=2, sort_keys=True, default=str).encode()
    atomic_write_bytes(path, data + b"\n")


def write_parquet(path: str | os.PathLike[str], table: pa.Table) -> None:
    """Write a Parquet file atomically (zstd: smaller than snappy at the same speed)."""
    with _atomic_target(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def write_parquet_batches(
    path: str | os.PathLike[str], schema: pa.Schema, batches: Iterable[pa.Table]
) -> None:
    """Write tables of `schema` one after another as one Parquet file, atomically: a run
    too large to hold is written as it is read."""
    with _atomic_target(path) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as out:
        for table in batches:
            out.write_table(table)


def create_json_if_absent(path: Path, value: Any) -> bool:
    """Write `value` to `path` atomically unless it exists; False when another won.

    A hard link of a complete temporary file is atomic and fails if the name is taken, so
    two shard workers starting together cannot both write (or half-write) the manifest.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    atomic_write_json(tmp, value)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
