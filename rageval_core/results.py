"""The results directory (SPEC §4): run ids, paths, atomic writes, manifests, journals.

Layout of one run folder::

    <run_id>/manifest.json            written first (status running), rewritten at the end
    <run_id>/questions.jsonl          append-only journal, flushed per question
    <run_id>/questions.parquet        the final typed rows
    <run_id>/summary.json             the run's aggregates, written at the end
    <run_id>/questions-<k>.jsonl|.parquet, shard-<k>.json   when written in N shards

The reader (`scan_runs`, `list_runs`, `read_run_rows`) never raises for a broken run: it
reports the problem on the run (naming the file, and the line and column where there is
one) and moves on, so one corrupt folder cannot take the dashboard down. Locations may be local
paths or fsspec URLs (e.g. ``s3://bucket/prefix``); appending journals needs a local path.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rageval_core.catalogue import DEFAULT_KS, declared_to_spec, parse_declared, retrieval_columns
from rageval_core.errors import ConfigError, ResultsError, one_line
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
MAX_SHARDS = 10_000  # a manifest asking for more is damaged: each shard is a file to open

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

PINNED_COLUMNS: tuple[str, ...] = tuple(
    n for n in QUESTION_SCHEMA.names if n not in ("retrieved_scores", "total_ms", "judge_error")
)
"""The per-question columns SPEC §4 names as a public contract; every writer fills them."""

_COLUMN_TYPES = {f.name: f.type for f in QUESTION_SCHEMA}
_K_COLUMN = re.compile(r"^(?:recall|precision|hit)_at_\d+$")


def column_type(name: str, declared: Collection[str] = ()) -> pa.DataType | None:
    """The Arrow type a row column must have: schema columns, any `*_at_K` and the run's
    `declared` metric names (float64, like a pinned score); None for a column rageval does
    not know (kept as the file has it)."""
    t = _COLUMN_TYPES.get(name)
    if t is None and (_K_COLUMN.match(name) or name in declared):
        return pa.float64()
    return t


def _declared_names(declared: Iterable[DeclaredMetric]) -> frozenset[str]:
    return frozenset(d.name for d in declared)


def _wrong_type(name: str, have: str, want: str, declared: Collection[str]) -> str:
    """How a column of the wrong type is named in a problem (`where` inside it appended)."""
    if name in declared:
        return f"declared metric {one_line(name, 60)!r} is {have}, not numeric"
    return f"column {name} is {have}, expected {want}"


def missing_declared(
    present: Collection[str], declared: Iterable[DeclaredMetric], source: str
) -> list[str]:
    """A problem per declared metric a file (Parquet schema or journal rows) lacks."""
    return [
        f"{source}: declared metric {d.name!r} is missing (read as NULL)"
        for d in declared
        if d.name not in present
    ]


def describe(exc: BaseException) -> str:
    """`Type: message` of an exception, on one bounded line."""
    return one_line(f"{type(exc).__name__}: {exc}", 160)


def display_name(name: str) -> str:
    """A folder or id that failed validation, safe to show anywhere: its repr (newlines and
    control characters escaped), backticks escaped so it cannot end a Markdown code span,
    cut to 80 characters."""
    shown = repr(name).replace("`", "\\x60")
    return shown if len(shown) <= 80 else shown[:79] + "…"


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


def user_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/rageval`, else `~/.cache/rageval`: what rageval keeps per user, not
    per results location (derived caches of read-only locations, the judge's replies).
    A relative XDG_CACHE_HOME is ignored, as the XDG spec says."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "rageval"


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
    # only a run with declarations has `metrics`, only a rescored run `source_run`: other
    # manifests stay as they were written
    d.pop("metrics")
    if m.metrics:
        d["metrics"] = {x.name: declared_to_spec(x) for x in m.metrics}
    if m.source_run is None:
        d.pop("source_run")
    return d


def _opt_str(value: object, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{name} must be a string, not {type(value).__name__}")


def manifest_from_dict(
    d: Mapping[str, Any], source: str = "manifest.json", problems: list[str] | None = None
) -> RunManifest:
    """Parse a manifest; raise ResultsError naming the file and the bad field.

    Every field that reaches a table or a page is type-checked here, so a hand-edited or
    damaged manifest is one problem on its run instead of an error deep in a view.

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
        if not isinstance(d, Mapping):
            raise TypeError(f"expected an object, not {type(d).__name__}")
        ds = d.get("dataset") or {}
        jd = d.get("judge") or {}
        status = d["status"]
        if status not in ("running", "complete", "failed"):
            raise ValueError(f"status {one_line(repr(status), 40)}")
        shards = int(d.get("shards", 1))
        if not 1 <= shards <= MAX_SHARDS:
            raise ValueError(f"shards {shards} not in 1..{MAX_SHARDS}")
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
                model=_opt_str(jd.get("model"), "judge.model"),
                version=_opt_str(jd.get("version"), "judge.version"),
                prompt_hash=_opt_str(jd.get("prompt_hash"), "judge.prompt_hash"),
            ),
            schema_version=int(d.get("schema_version", 0)),
            finished_at=_opt_str(d.get("finished_at"), "finished_at"),
            git_commit=_opt_str(d.get("git_commit"), "git_commit"),
            tags=tuple(str(t) for t in d.get("tags") or ()),
            totals=dict(d.get("totals") or {}),
            shards=shards,
            metrics=declared,
            source_run=_opt_str(d.get("source_run"), "source_run"),
        )
    except ResultsError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise ResultsError(f"{source}: invalid manifest ({describe(exc)})") from exc


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


class _WrongType(Exception):
    """A JSON value that does not fit a column: `where` (e.g. `[0].verdict`) and what it is."""

    def __init__(self, what: str, expected: str, where: str = ""):
        super().__init__(what)
        self.what, self.expected, self.where = what, expected, where


_JSON_TYPES = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "string",
    list: "list",
    dict: "object",
}


def _type_label(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return "list"
    return "object" if pa.types.is_struct(t) else str(t)


def _spec(t: pa.DataType) -> tuple:
    """The JSON shape of Arrow type `t` as plain tuples, so checking a value makes no
    Arrow call: (kind, label, detail) with detail the item spec of a list, the field
    specs of an object, or the bit width of an int."""
    label = _type_label(t)
    if pa.types.is_list(t):
        return ("list", label, _spec(t.value_type))
    if pa.types.is_struct(t):
        return ("object", label, tuple((f.name, _spec(f.type)) for f in t))
    for kind, test in (
        ("string", pa.types.is_string),
        ("bool", pa.types.is_boolean),
        ("float", pa.types.is_floating),
        ("int", pa.types.is_integer),
    ):
        if test(t):
            return (kind, label, t.bit_width if kind == "int" else None)
    raise TypeError(f"no JSON shape for {t}")


def _conform(value: Any, spec: tuple) -> Any:
    """`value` (parsed JSON) as a value of the column `spec` describes, or _WrongType.

    Lossless changes only: an int where a double belongs (up to 2**53, beyond which a
    double cannot hold it exactly), an integral float where an int belongs.
    """
    if value is None:
        return None
    kind, label, detail = spec
    what = _JSON_TYPES.get(type(value), type(value).__name__)
    if kind == what == "string":
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _WrongType("text that is not valid Unicode", label) from None
        return value
    if kind == what and kind in ("bool", "float"):
        return value
    if kind == "float" and what == "int":
        if abs(value) <= 2**53:
            return float(value)
        what = "an int too large for a double"
    if kind == "int" and what in ("int", "float"):
        if what == "float" and value.is_integer():
            value = int(value)
        if isinstance(value, int):
            if -(2 ** (detail - 1)) <= value < 2 ** (detail - 1):
                return value
            what = "an int out of range"
    if kind == what == "list":
        out = []
        for i, item in enumerate(value):
            try:
                out.append(_conform(item, detail))
            except _WrongType as exc:
                exc.where = f"[{i}]{exc.where}"
                raise
        return out
    if kind == what == "object":
        fields = {}
        for name, field_spec in detail:
            try:
                fields[name] = _conform(value.get(name), field_spec)
            except _WrongType as exc:
                exc.where = f".{name}{exc.where}"
                raise
        return fields
    raise _WrongType(what, label)


_COLUMN_SPECS = {f.name: _spec(f.type) for f in QUESTION_SCHEMA}
_K_SPEC = _spec(pa.float64())


def conform_row(row: Mapping[str, Any], declared: Collection[str] = ()) -> dict[str, Any]:
    """A journal row with every known column checked against its type; ValueError naming
    the question and the column when one does not fit (a missing question id included).

    `declared` names the run's declared metrics: float64 columns, checked like `*_at_K`.
    """
    qid = row.get("question_id")
    out = dict(row)
    for name in ["question_id", *(n for n in row if n != "question_id")]:
        spec = _COLUMN_SPECS.get(name) or (
            _K_SPEC if _K_COLUMN.match(name) or name in declared else None
        )
        if spec is None:
            continue
        try:
            if name == "question_id" and qid is None:
                raise _WrongType("null", "string")
            out[name] = _conform(row.get(name), spec)
        except _WrongType as exc:
            who = "" if name == "question_id" else f"question {display_name(qid)}: "
            column = f"{name}{one_line(exc.where, 40)}"
            raise ValueError(
                f"{who}{_wrong_type(column, exc.what, exc.expected, declared)}"
            ) from None
    return out


def iter_journal_text(
    text: str, source: str, declared: Collection[str] = ()
) -> Iterator[tuple[dict[str, Any] | None, str | None]]:
    """Yield (row, problem) per line; a damaged line is a problem, not an exception.

    A line whose field has the wrong type (`"answer": 42`, `"error": NaN`, a list where a
    string belongs) is dropped whole, not coerced: a resumed run then asks that question
    again instead of writing a made-up NULL into its final Parquet, and the dashboard
    names the line (file:line, question id, column) until it does.
    """
    lines = text.split("\n")
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            torn = n == len(lines) and not text.endswith("\n")
            what = (
                "truncated last line (interrupted write)" if torn else f"bad line ({describe(exc)})"
            )
            yield None, f"{source}:{n}: {what}"
            continue
        if not isinstance(row, dict) or "question_id" not in row:
            yield None, f"{source}:{n}: bad line (not a question row)"
            continue
        try:
            yield conform_row(row, declared), None
        except ValueError as exc:
            yield None, f"{source}:{n}: {exc}: line ignored"


def read_journal(
    path: str,
    fs: fsspec.AbstractFileSystem | None = None,
    declared: Iterable[DeclaredMetric] = (),
) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of a journal (last write of a question id wins) and the problems found.

    The run's `declared` metrics are checked like pinned float64 columns (a line holding a
    non-number is dropped and named); one no row has is a problem too (read as NULL).
    """
    declared = tuple(declared)
    fs = fs or fsspec.filesystem("file")
    try:
        with fs.open(path, "rb") as fh:
            text = fh.read().decode("utf-8", errors="replace")
    except OSError as exc:
        return [], [f"{path}: unreadable journal ({describe(exc)})"]
    rows: dict[str, dict[str, Any]] = {}
    problems = []
    for row, problem in iter_journal_text(text, path, _declared_names(declared)):
        if row is not None:
            rows[str(row["question_id"])] = row
        if problem:
            problems.append(problem)
    if rows:
        problems += missing_declared({k for r in rows.values() for k in r}, declared, path)
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


# ---------------------------------------------------------------------------- reader


@dataclass
class RunInfo:
    """What the reader found for one run folder; `problems` is empty for a healthy run."""

    run_id: str
    path: str
    status: str  # running | complete | failed | corrupt | missing (the folder is gone)
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
    fs: fsspec.AbstractFileSystem, run_path: str, shards: int, names: set[str]
) -> tuple[str, list[str]]:
    """Status of a sharded run: complete when every shard reported complete.

    `names` (the folder's listing) spares a request per shard that has not reported yet.
    """
    states, problems = [], []
    for k in range(shards):
        p = f"{run_path}/shard-{k}.json"
        if p.rsplit("/", 1)[-1] not in names:
            states.append("running")
            continue
        try:
            with fs.open(p, "rb") as fh:
                states.append(json.loads(fh.read())["status"])
        except FileNotFoundError:
            states.append("running")
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
            problems.append(f"{p}: unreadable shard status ({describe(exc)})")
            states.append("running")
    if "failed" in states:
        return "failed", problems
    return ("complete" if all(s == "complete" for s in states) else "running"), problems


def inspect_run(location: str, run_id: str) -> RunInfo:
    """Look at one run folder without reading its rows; never raises for a broken run.

    Whatever cannot be read (a manifest that is a dangling symlink or a folder, a file
    deleted meanwhile, hostile JSON) is a problem naming the file. A folder that no longer
    exists gives status `missing`: listings leave such a run out.
    """
    validate_run_id(run_id)
    fs, root = filesystem(location)
    path = f"{root}/{run_id}"
    info = RunInfo(run_id=run_id, path=path, status="corrupt")
    try:
        names = {p.rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)}
    except (FileNotFoundError, NotADirectoryError):
        info.status = "missing"
        info.problems.append(f"{path}: no such run")
        return info
    except OSError as exc:
        info.problems.append(f"{path}: unreadable run folder ({describe(exc)})")
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
            data = fh.read()
    except OSError as exc:
        info.problems.append(f"{path}/{MANIFEST}: unreadable manifest ({describe(exc)})")
        return info
    try:
        info.manifest = manifest_from_dict(json.loads(data), f"{path}/{MANIFEST}", info.problems)
    except RecursionError:
        info.problems.append(f"{path}/{MANIFEST}: not valid JSON (nested too deeply)")
        return info
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        info.problems.append(f"{path}/{MANIFEST}: not valid JSON ({describe(exc)})")
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
        info.status, shard_problems = _shard_status(fs, path, info.manifest.shards, names)
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


def folder_kind(name: str) -> str:
    """`run` for a folder named like a run, `hidden` for a dot folder (the cache, `.git`:
    silently not runs), `invalid` for any other name (reported, then ignored)."""
    if name.startswith("."):
        return "hidden"
    return "run" if RUN_ID_RE.fullmatch(name) and ".." not in name else "invalid"


@dataclass(frozen=True)
class IgnoredFolder:
    """A folder of the results location that is not a run; `name` is safe to display."""

    name: str
    message: str = "folder name is not a valid run id (letters, digits, . _ -): ignored"


def run_folders(location: str) -> tuple[list[str], list[IgnoredFolder]]:
    """Names of the run folders directly under the location, sorted, and the folders that
    are not runs ([] and [] when the location does not exist).

    Local folders are listed with one `scandir` (no stat of each entry, so a run deleted
    meanwhile cannot fail the listing); a symlink to a folder counts as a folder. A
    location that exists but cannot be listed is a ResultsError.
    """
    fs, root = filesystem(location)
    if is_remote(location):
        try:
            entries = fs.ls(root, detail=True)
        except FileNotFoundError:
            return [], []
        except OSError as exc:
            raise ResultsError(f"{root}: unreadable results location ({describe(exc)})") from exc
        names = [
            e["name"].rstrip("/").rsplit("/", 1)[-1]
            for e in entries
            if e.get("type") == "directory"
        ]
    else:
        try:
            with os.scandir(root) as it:
                names = [e.name for e in it if _is_dir(e)]
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        except OSError as exc:
            raise ResultsError(f"{root}: unreadable results location ({describe(exc)})") from exc
    kinds = {name: folder_kind(name) for name in names}
    runs = sorted(n for n, k in kinds.items() if k == "run")
    ignored = [IgnoredFolder(display_name(n)) for n, k in kinds.items() if k == "invalid"]
    return runs, sorted(ignored, key=lambda f: f.name)


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def scan_runs(location: str | None = None) -> tuple[list[RunInfo], list[IgnoredFolder]]:
    """Every run folder under the results location sorted by run id, and the folders that
    are not runs; never raises on a run.

    Hidden folders (`.rageval/`, `.git/`) are silently not runs; other folders whose names
    are not valid run ids are returned so a reader can say they were ignored. A run
    deleted while it is being listed is left out.
    """
    location = results_location(location)
    names, ignored = run_folders(location)
    infos = (inspect_run(location, name) for name in names)
    return [i for i in infos if i.status != "missing"], ignored


def list_runs(location: str | None = None) -> list[RunInfo]:
    """Every run folder under the results location, sorted by run id (see `scan_runs`)."""
    return scan_runs(location)[0]


def _compatible(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether a file column of type `have` reads as `want` without losing its meaning."""
    if have == want or pa.types.is_null(have):
        return True
    if pa.types.is_dictionary(have):
        return _compatible(have.value_type, want)
    if pa.types.is_string(want):
        return pa.types.is_string(have) or pa.types.is_large_string(have)
    if pa.types.is_floating(want) or pa.types.is_integer(want):
        return pa.types.is_floating(have) or pa.types.is_integer(have)
    if pa.types.is_list(want):
        lists = pa.types.is_list(have) or pa.types.is_large_list(have)
        return lists and _compatible(have.value_type, want.value_type)
    if pa.types.is_struct(want) and pa.types.is_struct(have):
        names = {f.name for f in have}
        return all(_compatible(have.field(f.name).type, f.type) for f in want if f.name in names)
    return False


def check_columns(
    schema: pa.Schema, source: str, declared: Iterable[DeclaredMetric] = ()
) -> tuple[set[str], list[str]]:
    """The columns of a Parquet file that read as the row schema says, and the problems.

    A known column of another type (`faithfulness` stored as strings) is ignored (read as
    NULL) rather than cast, since what its values mean is unknown; a pinned column the
    file lacks is read as NULL. Both are reported, naming the file and the column. The
    run's `declared` metrics are float64 columns checked the same way.
    """
    declared = tuple(declared)
    names = _declared_names(declared)
    usable, problems = set(), []
    for f in schema:
        want = column_type(f.name, names)
        if want is None or _compatible(f.type, want):
            usable.add(f.name)
        else:
            have, name = one_line(_type_label(f.type), 60), one_line(f.name, 60)
            problems.append(
                f"{source}: {_wrong_type(name, have, _type_label(want), names)}: values ignored"
            )
    missing = [c for c in PINNED_COLUMNS if c not in schema.names]
    if missing:
        more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        problems.append(
            f"{source}: missing pinned column(s) {', '.join(missing[:8])}{more}: shown as empty"
        )
    problems += missing_declared(schema.names, declared, source)
    return usable, problems


def stray_run_ids(found: Iterable[object], run_id: str, source: str) -> list[str]:
    """A problem when rows of `source` name a run other than the folder they are in (a
    shard copied between runs, a hand edit). Rows are shown under the folder's run id,
    since the folder is what every link and listing names."""
    other = sorted({str(v) for v in found if v is not None and v != run_id})
    if not other:
        return []
    names = ", ".join(display_name(v) for v in other[:3]) + (" …" if len(other) > 3 else "")
    return [f"{source}: rows name run(s) {names}, not {run_id}: shown under {run_id}"]


def parquet_run_ids(pf: pq.ParquetFile) -> list[object]:
    """The distinct `run_id` values of a Parquet file, from its row-group statistics when
    every group has them (a footer read), else from the column itself."""
    field_ = pf.schema_arrow.field("run_id") if "run_id" in pf.schema_arrow.names else None
    if field_ is None or not _compatible(field_.type, pa.string()):
        return []  # absent or of the wrong type: `check_columns` reports it
    col = pf.schema_arrow.get_field_index("run_id")
    seen: list[object] = []
    for g in range(pf.metadata.num_row_groups):
        stats = pf.metadata.row_group(g).column(col).statistics
        if stats is None or not (stats.has_min_max or stats.null_count == stats.num_values):
            return pc.unique(pf.read(columns=["run_id"]).column(0)).to_pylist()
        if stats.has_min_max:
            seen += [stats.min, stats.max]
    return seen


def read_run_rows(
    info: RunInfo, fs: fsspec.AbstractFileSystem | None = None
) -> tuple[pa.Table, list[str]]:
    """All rows of a run: the union of its Parquet shards, or its journal(s) while running.

    `fs` is the filesystem of the run's location (`filesystem(location)`; an object
    store's `RunInfo.path` has no protocol), default the local one. Problems (a corrupt
    Parquet file, a torn journal line, a column of the wrong type) are returned, not
    raised; a shard whose Parquet is unreadable falls back to its journal when one is there.
    """
    fs = fs or filesystem(info.path if is_remote(info.path) else "file://")[0]
    declared = info.manifest.metrics if info.manifest else ()
    tables, problems = [], []
    done_shards = set()
    for p in info.parquet_files:
        try:
            with fs.open(p, "rb") as fh:
                pf = pq.ParquetFile(fh)
                usable, column_problems = check_columns(pf.schema_arrow, p, declared)
                column_problems += stray_run_ids(parquet_run_ids(pf), info.run_id, p)
                t = pf.read(columns=[n for n in pf.schema_arrow.names if n in usable])
            tables.append(rows_to_table(t.to_pylist(), declared=declared))
            problems += column_problems
            done_shards.add(p.rsplit("/", 1)[-1].removesuffix(".parquet"))
        except Exception as exc:  # pyarrow raises several types for a corrupt file
            problems.append(f"{p}: unreadable Parquet ({describe(exc)})")
    for j in info.journal_files:
        if j.rsplit("/", 1)[-1].removesuffix(".jsonl") in done_shards:
            continue
        rows, jp = read_journal(j, fs, declared)
        problems += jp + stray_run_ids((r.get("run_id") for r in rows), info.run_id, j)
        tables.append(rows_to_table(rows, declared=declared))
    if not tables:
        return rows_to_table([], declared=declared), problems
    table = pa.concat_tables(tables, promote_options="default")
    owner = pa.array([info.run_id] * table.num_rows, pa.string())
    return table.set_column(table.schema.get_field_index("run_id"), "run_id", owner), problems
