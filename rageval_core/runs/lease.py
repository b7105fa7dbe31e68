"""One writer per run: a lease on a run (or one shard of it), and the heartbeat readers see.

Two `rageval run --resume X` started together used to both run every remaining question,
and four `--run-id X` started together could all pass the "run exists?" check. A writer
now takes the run's lease before it reads or writes anything of the run, and holds it
until the run's last file is written (uploaded, for object storage); a second writer is
told who holds it and stops.

- Local folder: `<run>/.writer.lease` (`.writer-<k>.lease` for shard k), locked with
  `fcntl.flock` (Linux emulates it with POSIX locks on NFS, so it holds across machines
  sharing the folder). The kernel drops the lock when its process dies, `kill -9`
  included, so a dead writer's lease is free at once. The file names its holder (host,
  pid, start time) for the refusal, and is removed when the run ends.
- Object storage (`s3://`): the run is written in a staging folder private to one process,
  so a local lock proves nothing; the lease is the object `<run>/.writer[-k].lease`,
  created only if absent (`If-None-Match: *`), renewed at every heartbeat with
  `If-Match` on its last ETag, deleted at the end. A lease whose last renewal is older
  than the stale bound (server time against server time) belonged to a dead writer: it is
  taken over with `If-Match` on that ETag, so of two writers taking it over one wins. A
  writer whose renewal fails has lost the lease (it stalled past the bound and was taken
  over): it must stop and upload nothing.

The heartbeat (every `$RAGEVAL_HEARTBEAT_S` seconds, default 10) touches the lease: its
modification time is the writer's sign of life, which readers compare with the stale bound
(`stale_after_s`) to show a run whose writer died as stale instead of running.
Lease files are hidden (dot names), so uploads, downloads and run listings skip them.
"""

from __future__ import annotations

import email.utils
import errno
import fcntl
import json
import os
import secrets
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from rageval_core.errors import shown
from rageval_core.runs.layout import (
    filesystem,
    iso,
    lease_name,
    positive_env_seconds,
    utc_now,
    validate_run_id,
)

HEARTBEAT_ENV = "RAGEVAL_HEARTBEAT_S"
HEARTBEAT_S = 10.0
_OWNER_MAX = 4096  # bytes of a lease file read back: it is a few hundred
# A running run whose folder has not changed for this long has lost its writer (killed,
# machine gone): writers renew a lease file every few seconds (below), even while one
# question takes minutes, so silence this long is not a slow question.
STALE_AFTER_S = 120.0
STALE_ENV = "RAGEVAL_STALE_AFTER_S"


def stale_after_s() -> float:
    """How long a running run may show no sign of life before it reads as stale:
    `$RAGEVAL_STALE_AFTER_S`, else 120 seconds."""
    return positive_env_seconds(STALE_ENV, STALE_AFTER_S)


def heartbeat_s() -> float:
    """Seconds between heartbeats: `$RAGEVAL_HEARTBEAT_S`, else 10."""
    return positive_env_seconds(HEARTBEAT_ENV, HEARTBEAT_S)


@dataclass(frozen=True)
class Owner:
    """Who holds a lease. `token` makes every holder's lease bytes unique, and so its
    ETag: two writers with the same host, pid and start second (containers) must not be
    able to renew each other's lease."""

    host: str
    pid: int
    since: str
    token: str

    @classmethod
    def me(cls) -> Owner:
        return cls(socket.gethostname(), os.getpid(), iso(utc_now()), secrets.token_hex(8))

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def describe(cls, data: bytes) -> str:
        """`host pid N since T` from a lease's bytes; they may be torn or hostile."""
        try:
            d = json.loads(data.decode("utf-8"))
            host, pid, since = (
                shown(d["host"], 80, bare=True),
                d["pid"],
                shown(d["since"], 40, bare=True),
            )
        except (ValueError, KeyError, TypeError):
            return "another process"
        if type(pid) is not int or not 0 < pid < 2**32:
            return "another process"
        return f"{host} pid {pid} since {since}"


class Lease(Protocol):
    """`acquire` once, `beat` from the heartbeat thread, `release` at the end."""

    lost: bool

    def acquire(self) -> str | None:
        """Take the lease: None when taken, else a description of its holder."""

    def beat(self) -> None:
        """Renew; set `lost` when another writer holds the lease now."""

    def release(self) -> None: ...


class LocalLease:
    """`fcntl.flock` on a lease file in a local run folder (module docstring)."""

    def __init__(self, path: Path):
        self.path = path
        self.lost = False  # a held flock cannot be taken away while its process lives
        self._fd: int | None = None
        self._made_folder = False

    def acquire(self) -> str | None:
        for _ in range(100):
            if not self.path.parent.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._made_folder = True
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except FileNotFoundError:
                continue  # a writer that gave up removed the empty folder meanwhile
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = Owner.describe(os.pread(fd, _OWNER_MAX, 0))
                os.close(fd)
                return holder
            if self._still_at_path(fd):
                os.ftruncate(fd, 0)
                os.pwrite(fd, Owner.me().encode(), 0)
                self._fd = fd
                return None
            os.close(fd)  # its last holder removed it between our open and our lock
        raise OSError(errno.EAGAIN, f"{self.path}: the lease file keeps disappearing")

    def _still_at_path(self, fd: int) -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        own = os.fstat(fd)
        return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)

    def beat(self) -> None:
        if self._fd is not None:
            try:
                os.utime(self._fd)
            except OSError:
                pass  # a full or read-only disk: the lock still holds; readers may see it stale

    def release(self) -> None:
        if self._fd is None:
            return
        # Removed while still locked: whoever opens the old file next sees it unlinked
        # (`_still_at_path`) and retries on a new one.
        self.path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None
        if self._made_folder:
            try:
                self.path.parent.rmdir()  # nothing was written (the pipeline failed to load)
            except OSError:
                pass


def _precondition_failed(exc: OSError) -> bool:
    response = getattr(exc.__cause__, "response", None) or {}
    return isinstance(exc, FileExistsError) or response.get("Error", {}).get("Code") in (
        "PreconditionFailed",
        "412",
    )


def _server_now(response: dict[str, Any]) -> datetime:
    """The store's clock from its reply's Date header (this machine's may be off)."""
    date = response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    try:
        return email.utils.parsedate_to_datetime(date)
    except (TypeError, ValueError):
        return utc_now()


class BucketLease:
    """A lease object in an S3 bucket, kept with conditional writes (module docstring)."""

    def __init__(self, fs: Any, path: str, stale_after: float):
        self.fs = fs
        self.bucket, _, self.key = path.partition("/")
        self.stale_after = stale_after
        self.lost = False
        self._body = Owner.me().encode()
        self._etag: str | None = None

    def _put(self, **condition: str) -> str:
        reply = self.fs.call_s3(
            "put_object", Bucket=self.bucket, Key=self.key, Body=self._body, **condition
        )
        return reply["ETag"]

    def _holder(self) -> str:
        try:
            return Owner.describe(self.fs.cat_file(f"{self.bucket}/{self.key}", end=_OWNER_MAX))
        except OSError:
            return "another process"

    def acquire(self) -> str | None:
        for _ in range(10):
            try:
                self._etag = self._put(IfNoneMatch="*")
                return None
            except OSError as exc:
                if not _precondition_failed(exc):
                    raise
            try:
                head = self.fs.call_s3("head_object", Bucket=self.bucket, Key=self.key)
            except FileNotFoundError:
                continue  # released meanwhile: try to create it again
            age = (_server_now(head) - head["LastModified"].astimezone(UTC)).total_seconds()
            if age <= self.stale_after:
                # A crashed job cannot be stopped: say when its lease frees itself.
                return (
                    f"{self._holder()}, last heartbeat {max(age, 0):.0f} s ago (taken over "
                    f"once silent for {self.stale_after:g} s)"
                )
            try:  # its writer died: take it over, unless another writer just did
                self._etag = self._put(IfMatch=head["ETag"])
                return None
            except FileNotFoundError:
                continue
            except OSError as exc:
                if not _precondition_failed(exc):
                    raise
                return self._holder()
        raise OSError(errno.EAGAIN, f"s3://{self.bucket}/{self.key}: the lease keeps changing")

    def beat(self) -> None:
        if self.lost:
            return
        try:
            self._etag = self._put(IfMatch=self._etag or "")
        except FileNotFoundError:
            self.lost = True
        except OSError as exc:
            if _precondition_failed(exc):
                self.lost = True
            # else a network blip: the next beat tries again, well within the stale bound

    def release(self) -> None:
        if self.lost or self._etag is None:
            return  # never delete the lease of the writer that took over
        try:
            self.fs.call_s3("delete_object", Bucket=self.bucket, Key=self.key, IfMatch=self._etag)
        except OSError:
            pass  # it goes stale on its own


def bucket_lease(location: str, run_id: str, shard: int | None) -> BucketLease | None:
    """The lease of a run on object storage; None where the store has no conditional
    writes this code knows (only S3's are used)."""
    fs, root = filesystem(location)
    if not hasattr(fs, "call_s3"):
        return None
    path = f"{root}/{validate_run_id(run_id)}/{lease_name(shard)}"
    return BucketLease(fs, path, stale_after_s())


@contextmanager
def heartbeat(leases: list[Lease], interval: float) -> Iterator[None]:
    """Renew `leases` (already acquired) every `interval` seconds while the block runs."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(interval):
            for lease in leases:
                try:
                    lease.beat()
                except Exception:  # a connection error botocore raises as its own type:
                    pass  # this beat is missed, the next one tries again

    thread = threading.Thread(target=beat, name="rageval-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
