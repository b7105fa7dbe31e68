"""Runs on object storage: stage a run in a local folder, then upload it, manifest last.

The runner's journal is appended and fsynced line by line, which object stores cannot do,
so `rageval run --results s3://…` writes the run to a local staging folder and uploads the
folder when the run ends. Readers decide what a run is from its manifest, so the manifest
goes up last: a reader listing the bucket mid-upload sees no run or a run still
"running", never a complete run with files missing. Each object PUT is atomic, so no
reader sees half a file either.

Only one process may write a run (or a shard of one): the staging folder is private to its
process, so the run's lease lives in the bucket (`runs/lease.py`), taken before the run is
copied down and let go after its upload.

Endpoint and credentials come from the standard variables (`AWS_ENDPOINT_URL`,
`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_DEFAULT_REGION`), which s3fs passes to
botocore; nothing here reads or stores them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory

import fsspec

from rageval_core.runs.layout import (
    MANIFEST,
    filesystem,
    is_run_id,
    parquet_name,
    shard_status_name,
    upload_order,
    validate_run_id,
)
from rageval_core.runs.lease import BucketLease, bucket_lease
from rageval_core.runs.reading import read_shard_status


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class StagedRun:
    """A local folder standing in for `location` while a run is written."""

    location: str
    local_root: Path
    downloaded: dict[str, str] = field(default_factory=dict)  # "<run>/<file>" -> sha256

    def lease(self, run_id: str, shard: int | None) -> BucketLease | None:
        """The run's (or shard's) lease object in the bucket, not yet taken."""
        return bucket_lease(self.location, run_id, shard)

    def download(self, run_id: str) -> None:
        """Copy the remote run folder down (for --resume or another shard), if there is one."""
        fs, root = filesystem(self.location)
        remote = f"{root}/{validate_run_id(run_id)}"
        try:
            names = fs.ls(remote, detail=False)
        except FileNotFoundError:
            return
        folder = self.local_root / run_id
        folder.mkdir(parents=True, exist_ok=True)
        for path in names:
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if name.startswith("."):
                continue
            local = folder / name
            fs.get_file(path, str(local))
            self.downloaded[f"{run_id}/{name}"] = _digest(local)

    def sync_shard(self, folder: Path, index: int, count: int) -> None:
        """Publish finished shard `index` of the run in `folder`, then fetch every other
        shard's status (and, when complete, its Parquet) from the bucket into `folder`.

        Shard workers run on different machines: what one downloaded at start says nothing
        about shards that finished since, so the last to finish would never see the run
        complete. Each worker puts its status up *before* reading the others', so of two
        finishing together at least one sees both. The manifest goes up before the status
        (and only if the bucket has none): a worker that finalises has seen every status,
        so its complete manifest always lands after any worker's "running" one.
        """
        fs, root = filesystem(self.location)
        run_id = validate_run_id(folder.name)
        remote = f"{root}/{run_id}"

        def put(name: str) -> None:
            fs.put_file(str(folder / name), f"{remote}/{name}")
            self.downloaded[f"{run_id}/{name}"] = _digest(folder / name)  # the bucket's now

        if (folder / parquet_name(index)).exists():
            put(parquet_name(index))
        fs.invalidate_cache(remote)
        if not fs.exists(f"{remote}/{MANIFEST}"):
            put(MANIFEST)
        else:  # ours must never replace the bucket's (possibly already final) manifest
            self.downloaded[f"{run_id}/{MANIFEST}"] = _digest(folder / MANIFEST)
        put(shard_status_name(index))
        for k in range(count):
            if k != index:
                self._fetch_shard(fs, remote, folder, k)

    def _fetch_shard(self, fs, remote: str, folder: Path, k: int) -> None:
        """Shard `k`'s status from the bucket (removed here when it has none), and its
        Parquet when complete. A status whose Parquet is missing is dropped: not complete."""
        status = folder / shard_status_name(k)
        parquet = folder / parquet_name(k)
        try:
            fs.get_file(f"{remote}/{status.name}", str(status))
            marker = read_shard_status(fsspec.filesystem("file"), str(status))
            if marker.problem:
                return  # unreadable status: the runner sees it as not complete
            complete = marker.status == "complete"
            if complete:
                fs.get_file(f"{remote}/{parquet.name}", str(parquet))
        except FileNotFoundError:
            status.unlink(missing_ok=True)
            return
        for path in (status, parquet) if complete else (status,):
            self.downloaded[f"{folder.name}/{path.name}"] = _digest(path)

    def upload(self) -> list[str]:
        """Upload every run folder written here (finished or failed); return their URLs.

        Called even when the run raised, so a failed run lands in the bucket and can be
        resumed from there.
        """
        urls = []
        for folder in sorted(self.local_root.iterdir()):
            if not folder.is_dir() or not is_run_id(folder.name):
                continue  # .rageval/ and other non-run folders stay local
            prefix = f"{folder.name}/"
            unchanged = {
                k.removeprefix(prefix): v
                for k, v in self.downloaded.items()
                if k.startswith(prefix)
            }
            urls.append(upload_run(folder, self.location, folder.name, unchanged))
        return urls


def upload_run(
    local_dir: str | Path,
    location: str,
    run_id: str,
    unchanged: Mapping[str, str] | None = None,
) -> str:
    """Upload the files of a finished (or failed) run folder, manifest last; return its URL.

    Files named in `unchanged` with the same sha256 are skipped: they came from the bucket
    (another shard's files) and uploading them back could overwrite a newer version.
    Temporary and hidden files (interrupted atomic writes) are never uploaded.
    """
    local_dir = Path(local_dir)
    validate_run_id(run_id)
    fs, root = filesystem(location)
    remote = f"{root}/{run_id}"
    unchanged = unchanged or {}
    files = sorted(
        (p for p in local_dir.iterdir() if p.is_file() and not p.name.startswith(".")),
        key=lambda p: upload_order(p.name),
    )
    for path in files:
        if unchanged.get(path.name) == _digest(path):
            continue
        fs.put_file(str(path), f"{remote}/{path.name}")
    fs.invalidate_cache(remote)
    return f"{location.rstrip('/')}/{run_id}"


@contextmanager
def staged(location: str) -> Iterator[StagedRun]:
    """A temporary local results folder standing in for `location`."""
    with TemporaryDirectory(prefix="rageval-stage-") as tmp:
        yield StagedRun(location, Path(tmp))
