"""Where a run lives and what its files are called: the one place that spells them.

Layout of one run folder::

    <run_id>/manifest.json            written first (status running), rewritten at the end
    <run_id>/questions.jsonl          append-only journal, flushed per question
    <run_id>/questions.parquet        the final typed rows
    <run_id>/summary.json             the run's aggregates, written at the end
    <run_id>/questions-<k>.jsonl|.parquet, shard-<k>.json   when written in N shards
    <run_id>/.writer[-<k>].lease      the writer's lease (hidden: never uploaded or listed)

A run id is checked by `validate_run_id` alone, wherever it comes from (a URL, a command
line, a folder name in a bucket). Locations may be local paths or fsspec URLs
(``s3://bucket/prefix``).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import fsspec

from rageval_core.errors import ConfigError, ResultsError

RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""The characters of a run id; `is_run_id` adds what a pattern cannot say (no `..`)."""
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
RESULTS_ENV = "RAGEVAL_RESULTS"
MAX_SHARDS = 10_000  # a manifest asking for more is damaged: each shard is a file to open


def is_run_id(name: object) -> bool:
    """Whether `name` is a safe run folder name: the one rule for ids from URLs, command
    lines, manifests and folder names in a location (local or a bucket). It rules out
    `..`, slashes and anything a shell or a path join would treat specially."""
    return isinstance(name, str) and bool(RUN_ID_RE.fullmatch(name)) and ".." not in name


def validate_run_id(run_id: object) -> str:
    """Return `run_id` if it is a safe folder name (`is_run_id`), else raise ResultsError."""
    if not is_run_id(run_id):
        raise ResultsError(f"invalid run id {str(run_id)[:80]!r}: use letters, digits, . _ -")
    return run_id


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(ts: datetime) -> str:
    return ts.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def default_run_id(config_name: str, now: datetime | None = None) -> str:
    """`<UTC yyyymmdd-hhmmss>-<config name>` with unsafe characters replaced."""
    stamp = (now or utc_now()).astimezone(UTC).strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", config_name).strip("-.") or "run"
    return validate_run_id(f"{stamp}-{safe}"[:128])


def results_location(explicit: str | os.PathLike[str] | None = None) -> str:
    """The results location: the argument, else $RAGEVAL_RESULTS, else `results/`."""
    return str(explicit or os.environ.get(RESULTS_ENV) or "results")


LABELS_ENV = "RAGEVAL_LABELS"
"""Where human labels are read and saved (`labels_location`); beside the results location
by default. Here, not in `labels/`, so `rageval dashboard` finds it without importing the
labels package (pandas)."""

READ_ONLY_ENV = "RAGEVAL_READ_ONLY"


def read_only_env() -> bool:
    """True when $RAGEVAL_READ_ONLY asks for a dashboard that never writes labels (set by
    `rageval dashboard --read-only`, read by the app)."""
    return os.environ.get(READ_ONLY_ENV, "").strip().lower() in ("1", "true", "yes")


def labels_location(results_loc: str | None = None, explicit: str | None = None) -> str:
    """`explicit`, else $RAGEVAL_LABELS, else `labels` beside the results location
    (`/x/results` -> `/x/labels`, `s3://b/p/results` -> `s3://b/p/labels`)."""
    if explicit:
        return str(explicit)
    if os.environ.get(LABELS_ENV):
        return os.environ[LABELS_ENV]
    loc = results_location(results_loc).rstrip("/")
    if is_remote(loc):
        head, sep, _ = loc.rpartition("/")
        return f"{head}/labels" if sep and "://" in head else f"{loc}/labels"
    return str(Path(filesystem(loc)[1]).parent / "labels")  # file:// URLs too


def user_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/rageval`, else `~/.cache/rageval`: what rageval keeps per user, not
    per results location (derived caches of read-only locations, the judge's replies).
    A relative XDG_CACHE_HOME is ignored, as the XDG spec says."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "rageval"


RUNS_INDEX = "runs_index.parquet"
"""The derived cache's runs index (`store/update.py`): a cache folder holding it was built
once, so a start over it is a restart, not a first build."""


BACKGROUND_BUILD_RUNS = 100
"""A first build over this many runs or more is not waited for: `rageval dashboard` starts
the server at once and the app opens on the runs' manifests while it builds (in worker
processes: `store/results.py`'s `refresh(beside_pages=True)`); a smaller one takes about 3 s
at most. Here, not in `query/`, so the command
decides without importing the query layer."""


def shared_cache_dir(key: str) -> Path:
    """The derived cache of a location the store does not write into (read-only or a
    bucket), under `user_cache_dir`: `key` is the bucket URL or the folder's real path."""
    return user_cache_dir() / hashlib.sha256(key.encode()).hexdigest()[:16]


def positive_env_seconds(name: str, default: float) -> float:
    """A duration in seconds from environment variable `name`; `default` unless it is a
    positive finite number."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if 0 < value < math.inf else default


def is_remote(location: str) -> bool:
    return "://" in location and not location.startswith("file://")


def filesystem(location: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """The fsspec filesystem and root path of a results location (local path or URL).

    Object-store listings are not cached: CI jobs add runs and rewrite manifests under a
    long-running dashboard, and a stale listing (or ETag) hides new runs or fails reads.
    """
    options = {"use_listings_cache": False} if is_remote(location) else {}
    fs, root = fsspec.core.url_to_fs(location, **options)
    return fs, root.rstrip("/")


@dataclass(frozen=True)
class Shard:
    """Worker `index` of `count`: owns the questions whose stable id hash lands on it.

    Users number shards 1..N (`--shard 1/3` … `3/3`, as Playwright, Jest and a CI matrix
    do); `index` is that number minus one, which is also the number in the shard's file
    names (`questions-0.parquet` is shard 1/N), so runs written before stay readable.
    """

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`K/N` with 1 <= K <= N, e.g. `1/2`; ConfigError naming the value otherwise."""
        k, sep, n = text.partition("/")
        short = sep and k.isdigit() and n.isdigit() and len(k) <= 6 and len(n) <= 6
        if not (short and 1 <= int(n) <= MAX_SHARDS):
            raise ConfigError(
                f"--shard must be K/N with 1 <= K <= N <= {MAX_SHARDS} (e.g. 1/2), "
                f"got {text[:40]!r}"
            )
        if not 1 <= int(k) <= int(n):
            raise ConfigError(
                f"--shard {text}: shards are numbered from 1 to {int(n)}, "
                f"so K = {int(k)} is not one of them"
            )
        return cls(int(k) - 1, int(n))

    @property
    def label(self) -> str:
        """`K/N` as the user typed it (1-based)."""
        return f"{self.index + 1}/{self.count}"

    def owns(self, question_id: str) -> bool:
        # sha256, not hash(): Python salts str hashes per process, workers must agree.
        digest = hashlib.sha256(question_id.encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index


def shard_suffix(shard: int | None) -> str:
    return "" if shard is None else f"-{shard}"


def journal_name(shard: int | None = None) -> str:
    return f"questions{shard_suffix(shard)}.jsonl"


def parquet_name(shard: int | None = None) -> str:
    return f"questions{shard_suffix(shard)}.parquet"


def shard_status_name(shard: int) -> str:
    """The marker a shard writes when it ends (`{"status", "finished_at", "totals"}`)."""
    return f"shard-{shard}.json"


def lease_name(shard: int | None = None) -> str:
    return f".writer{shard_suffix(shard)}.lease"


_PARQUET = re.compile(r"questions(-\d+)?\.parquet")
_JOURNAL = re.compile(r"questions(-\d+)?\.jsonl")


def is_parquet_name(name: str) -> bool:
    """Whether a file name in a run folder is one of its Parquet row files."""
    return bool(_PARQUET.fullmatch(name))


def is_journal_name(name: str) -> bool:
    """Whether a file name in a run folder is one of its journals."""
    return bool(_JOURNAL.fullmatch(name))


def row_file_stem(path: str) -> str:
    """`questions` or `questions-<k>` of a row file's path: a shard's Parquet and journal
    share it, so a reader takes one and passes over the other."""
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def upload_order(name: str) -> tuple[int, str]:
    """Data first, then shard status markers, the summary, and the manifest last of all:
    readers decide what a run is from its manifest, so it goes up when the rest is there."""
    if name == MANIFEST:
        return 3, name
    if name == SUMMARY:
        return 2, name
    if name.startswith("shard-"):
        return 1, name
    return 0, name


CANDIDATES_FOLDER = "candidates"
"""The folder of candidate batches in a results location (`candidates/batches.py`): not
a run, so listings pass over it as they do a dot folder."""
CANDIDATES_ENV = "RAGEVAL_CANDIDATES"
"""Where the dashboard looks for candidate batches instead (`rageval dashboard
--candidates DIR` sets it)."""


def folder_kind(name: str) -> str:
    """`run` for a folder named like a run, `hidden` for a dot folder (the cache, `.git`:
    silently not runs) or the candidates folder, `invalid` for any other name (reported,
    then ignored)."""
    if name.startswith(".") or name == CANDIDATES_FOLDER:
        return "hidden"
    return "run" if is_run_id(name) else "invalid"
