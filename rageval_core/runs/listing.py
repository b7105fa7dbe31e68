"""Listing a results location: its run folders (with a fingerprint of each folder's files)
and the folders that are not runs, in one pass locally or one `find` on an object store."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import fsspec

from rageval_core.errors import ResultsError, shown
from rageval_core.runs.layout import (
    filesystem,
    folder_kind,
    is_remote,
)


@dataclass(frozen=True)
class IgnoredFolder:
    """A folder of the results location that is not a run; `name` is safe to display."""

    name: str
    message: str = "folder name is not a valid run id (letters, digits, . _ -): ignored"


Scan = tuple[tuple[str, str], ...]
"""(run id, fingerprint of the folder's files) of every run folder, sorted by run id."""


def run_folders(location: str) -> tuple[list[str], list[IgnoredFolder]]:
    """Names of the run folders directly under the location, sorted, and the folders that
    are not runs ([] and [] when the location does not exist); see `scan_folders`."""
    if is_remote(location):
        fs, root = filesystem(location)
        runs, ignored = _classify(_remote_parts(fs, root))
        return runs, ignored
    return _classify(_local_folders(location))


def scan_folders(location: str) -> tuple[Scan, list[IgnoredFolder]]:
    """The run folders of a location with a fingerprint of each folder's files (names,
    sizes, mtimes), and the folders that are not runs.

    Local folders are listed with one `scandir` (no stat of each entry, so a run deleted
    meanwhile cannot fail the listing; one deleted before its fingerprint is left out);
    a symlink to a folder counts as a folder. An object store is listed with one `find`
    (a request per 1,000 objects, not one per run), grouped by run folder. A location that
    exists but cannot be listed is a ResultsError.
    """
    fs, root = filesystem(location)
    if is_remote(location):
        parts = _remote_parts(fs, root)
        runs, ignored = _classify(parts)
        return tuple((name, _digest(parts[name])) for name in runs), ignored
    runs, ignored = _classify(_local_folders(location))
    scan = ((name, local_fingerprint(f"{root}/{name}")) for name in runs)
    return tuple((name, fp) for name, fp in scan if fp is not None), ignored


def _classify(names: Iterable[str]) -> tuple[list[str], list[IgnoredFolder]]:
    """Run folder names, sorted, and the folders that are not runs (dot folders: silent)."""
    kinds = {name: folder_kind(name) for name in names}
    runs = sorted(n for n, k in kinds.items() if k == "run")
    ignored = [IgnoredFolder(shown(n)) for n, k in kinds.items() if k == "invalid"]
    return runs, sorted(ignored, key=lambda f: f.name)


def _local_folders(location: str) -> list[str]:
    _, root = filesystem(location)
    try:
        with os.scandir(root) as it:
            return [e.name for e in it if _is_dir(e)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise ResultsError(f"{root}: unreadable results location ({shown(exc)})") from exc


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _remote_parts(fs: fsspec.AbstractFileSystem, root: str) -> dict[str, list[str]]:
    """Every object under the location in one listing, as fingerprint parts by folder."""
    try:
        entries = fs.find(root, detail=True)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ResultsError(f"{root}: unreadable results location ({shown(exc)})") from exc
    parts: dict[str, list[str]] = {}
    prefix = root.rstrip("/") + "/"
    for path, e in entries.items():
        folder, _, rest = path.removeprefix(prefix).partition("/")
        if rest and path.startswith(prefix):  # a file directly under the location is no run
            parts.setdefault(folder, []).append(_object_part(rest, e))
    return parts


def local_fingerprint(path: str) -> str | None:
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


def remote_fingerprint(fs: fsspec.AbstractFileSystem, path: str) -> str:
    """One run folder's fingerprint in an object store, as `scan_folders` gives it, from
    a listing of that folder only; "" when it cannot be listed."""
    try:
        entries = fs.find(path, detail=True)
    except OSError:
        return ""
    prefix = path.rstrip("/") + "/"
    inside = {p.removeprefix(prefix): e for p, e in entries.items() if p.startswith(prefix)}
    return _digest([_object_part(name, e) for name, e in inside.items()])


def _stamp(entry: dict[str, Any]) -> str:
    return str(entry.get("mtime") or entry.get("LastModified") or entry.get("ETag") or "")


def _object_part(name: str, entry: dict[str, Any]) -> str:
    """An object's share of its run folder's fingerprint: path in the folder, size, stamp."""
    return f"{name}:{entry.get('size')}:{_stamp(entry)}"


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("|".join(sorted(parts)).encode()).hexdigest()[:20]
