"""The results directory (SPEC §4): run ids, paths, atomic writes, manifests, journals.

Layout of one run folder::

    <run_id>/manifest.json            written first (status running), rewritten at the end
    <run_id>/questions.jsonl          append-only journal, flushed per question
    <run_id>/questions.parquet        the final typed rows
    <run_id>/summary.json             the run's aggregates, written at the end
    <run_id>/questions-<k>.jsonl|.parquet, shard-<k>.json   when written in N shards

The reader (`list_runs`) never raises for a broken run: it reports the problem on the run
and moves on, so one corrupt folder cannot take the dashboard down. Locations may be local
paths or fsspec URLs (e.g. ``s3://bucket/prefix``); appending journals needs a local path.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from rageval_core.catalogue import DEFAULT_KS, declared_to_spec, parse_declared, retrieval_columns
from rageval_core.errors import ConfigError, ResultsError
from rageval_core.models import DatasetRef, DeclaredMetric, JudgeRef, RunManifest

SCHEMA_VERSION = 1
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
RESULTS_ENV = "RAGEVAL_RESULTS"
# A running run whose folder has not changed for this long has lost its writer (killed,
# machine gone): writers renew a lease file every few seconds (lease.py), even while one
# question takes minutes, so silence this long is not a slow question.
STALE_AFTER_S = 120.0
STALE_ENV = "RAGEVAL_STALE_AFTER_S"

CLAIM_TYPE = pa.struct(
    [
        ("text", pa.string()),
        ("verdict", pa.string()),
        ("evidence_chunk_id", pa.string()),
        ("evidence", pa.string()),
        ("reason", pa.string()),
    ]
)


def question_schema(
    ks: Iterable[int] = DEFAULT_KS, declared: Iterable[DeclaredMetric] = ()
) -> pa.Schema:
    """The per-question row schema. Pinned names are a public contract: add, never rename.

    A run's declared metrics (validated names, see `catalogue.parse_declared`) are one
    float64 column each, after the pinned ones.
    """
    ks = sorted(set(DEFAULT_KS) | set(ks))
    fields: list[tuple[str, pa.DataType]] = [
        ("run_id", pa.string()),
        ("question_id", pa.string()),
        ("question", pa.string()),
        ("reference_answer", pa.string()),
        ("answerable", pa.bool_()),
        ("tags", pa.list_(pa.string())),
        ("answer", pa.string()),
        ("retrieved_ids", pa.list_(pa.string())),
        ("retrieved_texts", pa.list_(pa.string())),
        ("retrieved_scores", pa.list_(pa.float64())),
        ("gold_ids", pa.list_(pa.string())),
        ("gold_ranks", pa.list_(pa.int32())),
    ]
    fields += [(c, pa.float64()) for c in retrieval_columns(ks)]
    fields += [
        ("faithfulness", pa.float64()),
        ("claims", pa.list_(CLAIM_TYPE)),
        ("unsupported_claims", pa.list_(pa.string())),
        ("answer_correctness", pa.float64()),
        ("refused", pa.bool_()),
        ("failure_type", pa.string()),
        ("retrieval_ms", pa.float64()),
        ("generation_ms", pa.float64()),
        ("ttft_ms", pa.float64()),
        ("total_ms", pa.float64()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("judge_cost_usd", pa.float64()),
        ("error", pa.string()),
        ("judge_error", pa.string()),
    ]
    fields += [(d.name, pa.float64()) for d in declared]
    return pa.schema(fields)


QUESTION_SCHEMA = question_schema()


# ---------------------------------------------------------------------------- ids and paths


def validate_run_id(run_id: object) -> str:
    """Return `run_id` if it is a safe folder name, else raise ResultsError.

    Ids arrive from URLs and command lines; the pattern rules out `..`, slashes and
    anything a shell or a path join would treat specially.
    """
    if not isinstance(run_id, str) or not RUN_ID_RE.fullmatch(run_id) or ".." in run_id:
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


def positive_env_seconds(name: str, default: float) -> float:
    """A duration in seconds from environment variable `name`; `default` unless it is a
    positive finite number."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if 0 < value < math.inf else default


def stale_after_s() -> float:
    """How long a running run may show no sign of life before it reads as stale:
    `$RAGEVAL_STALE_AFTER_S`, else 120 seconds."""
    return positive_env_seconds(STALE_ENV, STALE_AFTER_S)


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


def shard_suffix(shard: int | None) -> str:
    return "" if shard is None else f"-{shard}"


def journal_name(shard: int | None = None) -> str:
    return f"questions{shard_suffix(shard)}.jsonl"


def parquet_name(shard: int | None = None) -> str:
    return f"questions{shard_suffix(shard)}.parquet"


# ---------------------------------------------------------------------------- atomic writes


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


# ---------------------------------------------------------------------------- manifests


def manifest_to_dict(m: RunManifest) -> dict[str, Any]:
    d = asdict(m)
    d["tags"] = list(m.tags)
    d["config"] = dict(m.config)
    d["totals"] = dict(m.totals)
    # only a run with declarations has the key: other manifests stay as they were written
    d.pop("metrics")
    if m.metrics:
        d["metrics"] = {x.name: declared_to_spec(x) for x in m.metrics}
    return d


def manifest_from_dict(
    d: Mapping[str, Any], source: str = "manifest.json", problems: list[str] | None = None
) -> RunManifest:
    """Parse a manifest; raise ResultsError naming the file and the bad field.

    Invalid declared metrics (`metrics:`) do not make the manifest invalid: the run is
    still a run. With a `problems` list they are dropped and the reason appended there
    (the reader lists the run with that problem); without one they raise ResultsError.
    """
    try:
        declared = parse_declared(d.get("metrics") if isinstance(d, Mapping) else None, source)
    except ConfigError as exc:
        if problems is None:
            raise ResultsError(exc.message) from None
        problems.append(f"{exc.message}; the run's declared metrics are ignored")
        declared = ()
    try:
        ds = d.get("dataset") or {}
        jd = d.get("judge") or {}
        status = d["status"]
        if status not in ("running", "complete", "failed"):
            raise ValueError(f"status {status!r}")
        return RunManifest(
            run_id=validate_run_id(d["run_id"]),
            status=status,
            created_at=str(d["created_at"]),
            config=dict(d.get("config") or {}),
            dataset=DatasetRef(
                name=str(ds.get("name", "")),
                version=str(ds.get("version", "")),
                sha256=str(ds.get("sha256", "")),
                n_questions=int(ds.get("n_questions", 0)),
                path=str(ds.get("path", "")),
            ),
            judge=JudgeRef(
                kind=str(jd.get("kind", "")),
                model=jd.get("model"),
                version=jd.get("version"),
                prompt_hash=jd.get("prompt_hash"),
            ),
            schema_version=int(d.get("schema_version", 0)),
            finished_at=d.get("finished_at"),
            git_commit=d.get("git_commit"),
            tags=tuple(str(t) for t in d.get("tags") or ()),
            totals=dict(d.get("totals") or {}),
            shards=int(d.get("shards", 1)),
            metrics=declared,
        )
    except ResultsError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ResultsError(f"{source}: invalid manifest ({type(exc).__name__}: {exc})") from exc


# ---------------------------------------------------------------------------- journal


class Journal:
    """Append-only JSONL of finished questions: one line per question, flushed and fsynced.

    `kill -9` can at worst truncate the line being written; `read_journal` drops such a
    tail, so every question whose line completed is kept.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        if self._ends_torn():
            # A killed writer left half a line: end it, so the next row is not glued onto it.
            self._fh.write("\n")
            self._fh.flush()

    def _ends_torn(self) -> bool:
        with open(self.path, "rb") as fh:
            if fh.seek(0, os.SEEK_END) == 0:
                return False
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) != b"\n"

    def append(self, row: Mapping[str, Any]) -> None:
        self._fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_journal_text(text: str, source: str) -> Iterator[tuple[dict[str, Any] | None, str | None]]:
    """Yield (row, problem) per line; a torn last line is a problem, not an exception."""
    lines = text.split("\n")
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict) or "question_id" not in row:
                raise ValueError("not a question row")
            yield row, None
        except ValueError as exc:
            torn = n == len(lines) and not text.endswith("\n")
            what = "truncated last line (interrupted write)" if torn else f"bad line ({exc})"
            yield None, f"{source}:{n}: {what}"


def read_journal(
    path: str, fs: fsspec.AbstractFileSystem | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of a journal (last write of a question id wins) and the problems found."""
    fs = fs or fsspec.filesystem("file")
    try:
        with fs.open(path, "rb") as fh:
            text = fh.read().decode("utf-8", errors="replace")
    except OSError as exc:
        return [], [f"{path}: unreadable journal ({exc})"]
    rows: dict[str, dict[str, Any]] = {}
    problems = []
    for row, problem in iter_journal_text(text, path):
        if row is not None:
            rows[str(row["question_id"])] = row
        if problem:
            problems.append(problem)
    return list(rows.values()), problems


def rows_to_table(
    rows: Iterable[Mapping[str, Any]],
    schema: pa.Schema | None = None,
    declared: Iterable[DeclaredMetric] = (),
) -> pa.Table:
    """Build a typed table; columns a row lacks (older schemas) become NULL.

    Keys that are neither pinned columns nor `declared` metrics are dropped.
    """
    rows = list(rows)
    if schema is None:
        extra_ks = {
            int(k.removeprefix("recall_at_"))
            for r in rows
            for k in r
            if k.startswith("recall_at_") and k.removeprefix("recall_at_").isdigit()
        }
        schema = question_schema(extra_ks, declared)
    cols = {name: [r.get(name) for r in rows] for name in schema.names}
    return pa.Table.from_pydict(cols, schema=schema)


def _is_score(v: Any) -> bool:
    return v is None or (isinstance(v, int | float) and not isinstance(v, bool))


def clean_declared(
    rows: list[dict[str, Any]], declared: Iterable[DeclaredMetric], source: str
) -> list[str]:
    """Make `rows`' declared metric values numbers or None, in place; the problems found.

    A declared column absent from every row, or holding something not a number, is a
    problem naming `source`; its values read as NULL rather than failing the whole run.
    """
    problems = []
    for d in declared:
        if rows and not any(d.name in r for r in rows):
            problems.append(f"{source}: declared metric {d.name!r} is missing (read as NULL)")
            continue
        bad = [r for r in rows if not _is_score(r.get(d.name))]
        for r in bad:
            r[d.name] = None
        if bad:
            problems.append(
                f"{source}: declared metric {d.name!r} is not numeric in {len(bad)} row(s) "
                "(read as NULL)"
            )
    return problems


def declared_schema_problems(
    schema: pa.Schema, declared: Iterable[DeclaredMetric], source: str
) -> list[str]:
    """Declared metrics a Parquet file lacks or holds as non-numbers (they read as NULL)."""
    problems = []
    for d in declared:
        if d.name not in schema.names:
            problems.append(f"{source}: declared metric {d.name!r} is missing (read as NULL)")
        else:
            t = schema.field(d.name).type
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t)):
                problems.append(
                    f"{source}: declared metric {d.name!r} is {t}, not numeric (read as NULL)"
                )
    return problems


# ---------------------------------------------------------------------------- reader


@dataclass
class RunInfo:
    """What the reader found for one run folder; `problems` is empty for a healthy run."""

    run_id: str
    path: str
    status: str  # running | complete | failed | corrupt
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
    def readable(self) -> bool:
        """True when the run has rows to read (final Parquet or a journal)."""
        return bool(self.parquet_files or self.journal_files)


def _shard_status(
    fs: fsspec.AbstractFileSystem, run_path: str, shards: int
) -> tuple[str, list[str]]:
    """Status of a sharded run: complete when every shard reported complete."""
    states, problems = [], []
    for k in range(shards):
        p = f"{run_path}/shard-{k}.json"
        try:
            with fs.open(p, "rb") as fh:
                states.append(json.loads(fh.read())["status"])
        except FileNotFoundError:
            states.append("running")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            problems.append(f"{p}: unreadable shard status ({exc})")
            states.append("running")
    if "failed" in states:
        return "failed", problems
    return ("complete" if all(s == "complete" for s in states) else "running"), problems


def inspect_run(location: str, run_id: str) -> RunInfo:
    """Look at one run folder without reading its rows; never raises for a broken run."""
    validate_run_id(run_id)
    fs, root = filesystem(location)
    path = f"{root}/{run_id}"
    info = RunInfo(run_id=run_id, path=path, status="corrupt")
    try:
        names = {p.rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)}
    except (FileNotFoundError, NotADirectoryError):
        info.problems.append(f"{path}: no such run")
        return info
    info.parquet_files = sorted(
        f"{path}/{n}" for n in names if re.fullmatch(r"questions(-\d+)?\.parquet", n)
    )
    info.journal_files = sorted(
        f"{path}/{n}" for n in names if re.fullmatch(r"questions(-\d+)?\.jsonl", n)
    )
    if SUMMARY in names:
        info.summary_file = f"{path}/{SUMMARY}"
    if MANIFEST not in names:
        info.problems.append(f"{path}/{MANIFEST}: missing manifest")
        return info
    try:
        with fs.open(f"{path}/{MANIFEST}", "rb") as fh:
            info.manifest = manifest_from_dict(
                json.loads(fh.read()), f"{path}/{MANIFEST}", info.problems
            )
    except ValueError as exc:  # JSONDecodeError is a ValueError
        info.problems.append(f"{path}/{MANIFEST}: not valid JSON ({exc})")
        return info
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
        info.status, shard_problems = _shard_status(fs, path, info.manifest.shards)
        info.problems += shard_problems
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


def list_runs(location: str | None = None) -> list[RunInfo]:
    """Every run folder under the results location, sorted by run id; never raises on a run.

    Folders whose names are not valid run ids (and hidden ones such as `.rageval/`) are
    skipped silently: they are not runs.
    """
    location = results_location(location)
    fs, root = filesystem(location)
    try:
        entries = fs.ls(root, detail=True)
    except FileNotFoundError:
        return []
    runs = []
    for e in entries:
        name = e["name"].rstrip("/").rsplit("/", 1)[-1]
        if e.get("type") != "directory" or not RUN_ID_RE.fullmatch(name) or name.startswith("."):
            continue
        runs.append(inspect_run(location, name))
    return sorted(runs, key=lambda r: r.run_id)


def read_run_rows(info: RunInfo) -> tuple[pa.Table, list[str]]:
    """All rows of a run: the union of its Parquet shards, or its journal(s) while running.

    Problems (a corrupt Parquet file, a torn journal line) are returned, not raised; a
    shard whose Parquet is unreadable falls back to its journal when one is there.
    """
    fs, _ = filesystem(info.path if is_remote(info.path) else "file://")
    declared = info.manifest.metrics if info.manifest else ()
    tables, problems = [], []
    done_shards = set()
    for p in info.parquet_files:
        try:
            with fs.open(p, "rb") as fh:
                t = pq.read_table(fh)
            problems += declared_schema_problems(t.schema, declared, p)
            rows = t.to_pylist()
            clean_declared(rows, declared, p)  # the schema problems above say why
            tables.append(rows_to_table(rows, declared=declared))
            done_shards.add(p.rsplit("/", 1)[-1].removesuffix(".parquet"))
        except Exception as exc:  # pyarrow raises several types for a corrupt file
            problems.append(f"{p}: unreadable Parquet ({type(exc).__name__}: {exc})")
    for j in info.journal_files:
        if j.rsplit("/", 1)[-1].removesuffix(".jsonl") in done_shards:
            continue
        rows, jp = read_journal(j, fs)
        problems += jp + clean_declared(rows, declared, j)
        tables.append(rows_to_table(rows, declared=declared))
    if not tables:
        return rows_to_table([], declared=declared), problems
    return pa.concat_tables(tables, promote_options="default"), problems
