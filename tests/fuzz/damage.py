"""Ways a results folder gets damaged, as values hypothesis can draw, shrink and print.

Each damage is a frozen dataclass whose `apply(root)` changes a copy of the demo results in
place and returns the `Harm` it did: which run folder it touched and whether a reader can
tell (then the dashboard must name that run in a warning). Damage that a reader cannot see
(a garbage byte inside a compressed page, a deleted summary.json nobody reads) only has to
leave every page and command working.

`KNOWN_OPEN` lists failures whose fixes live on other branches (the reader and figures
work). While a tag is listed its damage is not drawn (crashes bound to one damage), its
warning is not expected (silent damage), or its exact crash message is tolerated
(`compare-empty-run`, which many damages lead to). Its reproducer in `test_known_open.py`
is a strict xfail: once the fix is merged that test passes, fails as XPASS, and the entry
must be removed here, which turns the class back on in the fuzz.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from rageval_core.errors import ResultsError
from rageval_core.runs.journal import Journal, read_journal
from rageval_core.runs.layout import MANIFEST, SUMMARY
from rageval_core.runs.manifest import manifest_from_dict

COMMITTED = Path(__file__).resolve().parents[2] / "results"
RUN_IDS: tuple[str, ...] = tuple(
    sorted(p.name for p in COMMITTED.iterdir() if p.is_dir() and not p.name.startswith("."))
)
PARQUET = "questions.parquet"
JOURNAL = "questions.jsonl"
FILES = (MANIFEST, PARQUET, SUMMARY)
MB = 1_000_000

KNOWN_OPEN: dict[str, str] = {}
"""Failures whose fixes are on other branches. Remove an entry once merged: its damage is
then drawn again (or its warning expected, or its crash no longer tolerated)."""


@dataclass(frozen=True)
class Harm:
    """What one damage did: the run folder touched (None: only the results root), whether
    a reader can tell, and the text that must appear in a warning when it can."""

    run_id: str | None
    visible: bool
    named_as: str | None = None
    tag: str | None = None  # a KNOWN_OPEN tag: no warning expected while it is listed

    @property
    def name(self) -> str | None:
        return self.named_as or self.run_id


def _run(root: Path, i: int) -> Path:
    return root / RUN_IDS[i % len(RUN_IDS)]


def _clear(path: Path) -> None:
    """Remove whatever is at `path`: a file, a symlink (not its target) or a folder."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _own_file(path: Path) -> bool:
    """A regular file of this run (writing through a symlink would damage another run)."""
    return path.is_file() and not path.is_symlink()


def _read_json(path: Path) -> Any:
    """The JSON in `path`, or None when it is not a readable JSON file of this run."""
    if not _own_file(path):
        return None
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None


def _torn(line: bytes) -> bool:
    if not line.strip():
        return False
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return True
    return False


def _replace_with_bytes(path: Path, data: bytes) -> None:
    _clear(path)
    path.write_bytes(data)


def make_running(folder: Path, keep: int = 1000) -> None:
    """Turn a finished run into one in progress: a journal of its first `keep` rows."""
    manifest = _read_json(folder / MANIFEST)
    if (folder / JOURNAL).exists() or not _own_file(folder / PARQUET) or manifest is None:
        return  # already running, or already damaged: leave it as it is
    try:
        rows = pq.read_table(folder / PARQUET).to_pylist()[:keep]
    except (OSError, pa.ArrowException):
        return
    _clear(folder / PARQUET)
    _clear(folder / SUMMARY)
    with Journal(folder / JOURNAL) as journal:
        for row in rows:
            journal.append(row)
    if isinstance(manifest, dict):
        manifest.update(status="running", finished_at=None)
        (folder / MANIFEST).write_text(json.dumps(manifest))


# ----------------------------------------------------------------------------- bytes


@dataclass(frozen=True)
class Truncate:
    """Cut a file at a fraction of its length (0.0 = empty)."""

    run: int
    file: str
    at: float

    def apply(self, root: Path) -> list[Harm]:
        folder = _run(root, self.run)
        if self.file == JOURNAL:
            make_running(folder)
        path = folder / self.file
        if not _own_file(path):
            return [Harm(folder.name, False)]
        data = path.read_bytes()
        cut = int(len(data) * self.at)
        path.write_bytes(data[:cut])
        if self.file == PARQUET:
            visible = cut < len(data)
        elif self.file == MANIFEST:
            visible = cut < len(data.rstrip())
        elif self.file == JOURNAL:
            # a cut inside a line leaves a torn last line, which is reported
            visible = _torn(data[:cut].rsplit(b"\n", 1)[-1])
        else:
            visible = False  # summary.json: written for users, read by no reader
        return [Harm(folder.name, visible)]


@dataclass(frozen=True)
class Garbage:
    """Overwrite bytes at a fraction of the file (same length), or replace the whole file."""

    run: int
    file: str
    at: float
    data: bytes
    whole: bool

    def apply(self, root: Path) -> list[Harm]:
        folder = _run(root, self.run)
        if self.file == JOURNAL:
            make_running(folder)
        path = folder / self.file
        if not _own_file(path):
            return [Harm(folder.name, False)]
        old = path.read_bytes()
        if self.whole:
            new = self.data
        else:
            start = int(len(old) * self.at)
            new = old[:start] + self.data + old[start + len(self.data) :]
            new = new[: max(len(old), start + len(self.data))]
        path.write_bytes(new)
        return [Harm(folder.name, self._visible(old, new))]

    def _visible(self, old: bytes, new: bytes) -> bool:
        if new == old:
            return False
        if self.file == MANIFEST:
            try:
                json.loads(new)
            except ValueError:
                return True
            return False  # valid JSON with other values: the reader may accept it
        if self.file == PARQUET:
            # the magic number at either end is checked on open; a byte in a page may not be
            return new[:4] != b"PAR1" or new[-4:] != b"PAR1"
        return False


@dataclass(frozen=True)
class NestedJson:
    """A JSON file (or one journal line) nested deeper than a parser recurses."""

    run: int
    file: str  # manifest.json | questions.jsonl | shard-0.json

    def apply(self, root: Path) -> list[Harm]:
        folder = _run(root, self.run)
        deep = "[" * 100_000
        if self.file == JOURNAL:
            make_running(folder)
            if not (folder / JOURNAL).is_file():
                return [Harm(folder.name, False)]
            with open(folder / JOURNAL, "a") as fh:
                fh.write(deep + "\n")
        else:
            _replace_with_bytes(folder / self.file, deep.encode())
        # a status file of a run that is not sharded is never read
        return [Harm(folder.name, self.file != "shard-0.json")]


# ----------------------------------------------------------------------------- files


@dataclass(frozen=True)
class Missing:
    """Delete one file of a run."""

    run: int
    file: str

    def apply(self, root: Path) -> list[Harm]:
        folder = _run(root, self.run)
        _clear(folder / self.file)
        # without its Parquet a complete run has no rows: the reader must say so
        return [Harm(folder.name, self.file in (MANIFEST, PARQUET))]


EXTRA_NAMES = (
    "notes.txt",
    "questions.parquet.bak",
    ".questions.parquet.a1b2.tmp",
    ".manifest.json.x.tmp",
    "questions-7.parquet",
    "questions-7.jsonl",
    "shard-0.json",
    "summary.json.old",
    "run.log",
)


@dataclass(frozen=True)
class Extra:
    """An unknown (or unexpected shard) file in a run folder or in the results root."""

    run: int | None
    name: str
    data: bytes

    def apply(self, root: Path) -> list[Harm]:
        folder = root if self.run is None else _run(root, self.run)
        _replace_with_bytes(folder / self.name, self.data)
        if self.run is None:
            return [Harm(None, False)]
        # a shard file is read as rows of the run: garbage there is damage the reader sees
        shard = self.name in ("questions-7.parquet",)
        return [Harm(folder.name, shard and not self.data.startswith(b"PAR1"))]


@dataclass(frozen=True)
class DuplicateShard:
    """A second copy of the run's Parquet as shard 2: every question id twice."""

    run: int

    def apply(self, root: Path) -> list[Harm]:
        folder = _run(root, self.run)
        if (folder / PARQUET).is_file():
            shutil.copyfile(folder / PARQUET, folder / "questions-2.parquet")
        return [Harm(folder.name, False)]


@dataclass(frozen=True)
class Symlink:
    """Replace a file of a run with a symlink: dangling, to a folder, or a loop."""

    run: int
    file: str
    kind: str  # dangling | folder | loop | other-run

    def apply(self, root: Path) -> list[Harm]:
        folder = _run(root, self.run)
        path = folder / self.file
        _clear(path)
        if self.kind == "dangling":
            path.symlink_to(folder / "no-such-file")
        elif self.kind == "folder":
            path.symlink_to(folder)
        elif self.kind == "loop":
            path.symlink_to(path)
        else:  # the same file of another run: readable, but it belongs to someone else
            other = _run(root, self.run + 1)
            path.symlink_to(other / self.file)
        # a manifest of another run names that run: a mismatch the reader reports
        visible = self.kind != "other-run" or self.file == MANIFEST
        if self.file == SUMMARY or (self.file == PARQUET and self.kind == "other-run"):
            visible = False
        return [Harm(folder.name, visible)]


@dataclass(frozen=True)
class FolderForFile:
    """A folder where a run's file belongs (e.g. manifest.json/)."""

    run: int
    file: str

    def apply(self, root: Path) -> list[Harm]:
        folder = _run(root, self.run)
        path = folder / self.file
        _clear(path)
        path.mkdir()
        (path / "inner.txt").write_text("not a file")
        return [Harm(folder.name, self.file in (MANIFEST, PARQUET))]


@dataclass(frozen=True)
class RootEntry:
    """Something at the results root that is not a run folder."""

    kind: str  # symlink-to-run | dangling-symlink | loop | file-named-like-a-run | empty-run

    def apply(self, root: Path) -> list[Harm]:
        name = "20990101-000000-entry"
        path = root / name
        _clear(path)
        if self.kind == "symlink-to-run":
            path.symlink_to(root / RUN_IDS[0])
        elif self.kind == "dangling-symlink":
            path.symlink_to(root / "nowhere")
        elif self.kind == "loop":
            path.symlink_to(path)
        elif self.kind == "file-named-like-a-run":
            path.write_text("not a folder")
        else:  # an empty run folder, as `mkdir` before anything was written
            path.mkdir()
            return [Harm(name, True)]
        return [Harm(None, False)]


# ----------------------------------------------------------------------------- values


def _rewrite(folder: Path, change) -> bool:
    path = folder / PARQUET
    if not _own_file(path):
        return False
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException):
        return False
    pq.write_table(change(table), path)
    return True


WRONG_VALUES: dict[str, Any] = {
    "string": lambda n: pa.array(["n/a"] * n, pa.string()),
    "int": lambda n: pa.array(list(range(n)), pa.int64()),
    "double": lambda n: pa.array([0.5] * n, pa.float64()),
    "bool": lambda n: pa.array([True] * n, pa.bool_()),
    "list-string": lambda n: pa.array([["x"]] * n, pa.list_(pa.string())),
    "list-int": lambda n: pa.array([[1, 2]] * n, pa.list_(pa.int64())),
    "struct": lambda n: pa.array([{"a": 1}] * n, pa.struct([("a", pa.int64())])),
    "null": lambda n: pa.nulls(n),
    "claims-no-verdict": lambda n: pa.array(
        [[{"text": "t", "reason": "r"}]] * n,
        pa.list_(pa.struct([("text", pa.string()), ("reason", pa.string())])),
    ),
}
PINNED = (
    "run_id",
    "question_id",
    "question",
    "answerable",
    "tags",
    "answer",
    "retrieved_ids",
    "retrieved_texts",
    "retrieved_scores",
    "gold_ids",
    "gold_ranks",
    "recall_at_5",
    "recall_at_20",
    "mrr",
    "faithfulness",
    "claims",
    "answer_correctness",
    "refused",
    "failure_type",
    "total_ms",
    "input_tokens",
    "cost_usd",
    "error",
)


@dataclass(frozen=True)
class WrongColumnType:
    """questions.parquet rewritten with one pinned column of another Arrow type."""

    run: int
    column: str
    as_type: str

    def apply(self, root: Path) -> list[Harm]:
        folder = _run(root, self.run)
        same_type = False

        def change(t: pa.Table) -> pa.Table:
            nonlocal same_type
            i = t.schema.get_field_index(self.column)
            col = WRONG_VALUES[self.as_type](t.num_rows)
            if i < 0:
                return t.append_column(self.column, col)
            # the column's own type (`refused` as bool) only changes values: no reader
            # can tell, so no page is expected to name the run
            same_type = t.schema.field(i).type == col.type
            return t.set_column(i, self.column, col)

        done = _rewrite(folder, change)
        return [Harm(folder.name, done and not same_type)]


@dataclass(frozen=True)
class DropColumn:
    """questions.parquet rewritten without one pinned column."""

    run: int
    column: str

    def apply(self, root: Path) -> list[Harm]:
        folder = _run(root, self.run)
        # an earlier damage may have dropped it already
        done = _rewrite(
            folder, lambda t: t.drop_columns([self.column] if self.column in t.column_names else [])
        )
        return [Harm(folder.name, done)]


JSON_VALUES: tuple[Any, ...] = (
    42,
    -1,
    1.5,
    "NaN",
    True,
    None,
    "",
    "x",
    [1, "a"],
    {"k": [1]},
    [],
    {},
    "![t](http://127.0.0.1:9/t.png) <b>x</b> $x$",
)


@dataclass(frozen=True)
class Huge:
    """A 1 MB string or a 10,000-element list, expanded when applied (short to print)."""

    kind: str  # string | list

    def value(self) -> Any:
        return "A" * MB if self.kind == "string" else [f"x{i}" for i in range(10_000)]


def _value(v: Any) -> Any:
    return v.value() if isinstance(v, Huge) else v


@dataclass(frozen=True)
class JournalValue:
    """A running run whose journal has one row with a field set to another JSON value."""

    run: int
    row: int
    column: str
    value: Any

    def apply(self, root: Path) -> list[Harm]:
        folder = _run(root, self.run)
        make_running(folder)
        path = folder / JOURNAL
        rows = []
        if _own_file(path):
            for line in path.read_bytes().splitlines():
                try:
                    rows.append(json.loads(line))
                except (ValueError, RecursionError):
                    rows.append(None)  # a line an earlier damage broke: kept as it was
        lines = path.read_bytes().splitlines() if rows else []
        i = self.row % len(rows) if rows else 0
        if not rows or not isinstance(rows[i], dict):
            return [Harm(folder.name, False)]
        row = rows[i]
        row[self.column] = _value(self.value)
        lines[i] = json.dumps(row).encode()  # NaN is written as bare NaN, as json.dumps does
        path.write_bytes(b"\n".join(lines) + b"\n")
        # What the reader accepts is its own contract (42 is a fine total_ms); what it
        # rejects it must report.
        return [Harm(folder.name, bool(read_journal(str(path))[1]))]


@dataclass(frozen=True)
class ManifestValue:
    """manifest.json with one field set to another JSON value (a dotted path for nested)."""

    run: int
    field: str
    value: Any

    def apply(self, root: Path) -> list[Harm]:
        folder = _run(root, self.run)
        path = folder / MANIFEST
        manifest = _read_json(path)
        if not isinstance(manifest, dict):
            return [Harm(folder.name, False)]
        node = manifest
        *parents, last = self.field.split(".")
        for p in parents:
            if not isinstance(node.get(p), dict):
                node[p] = {}
            node = node[p]
        node[last] = _value(self.value)
        path.write_text(json.dumps(manifest))
        # What the reader accepts is its own contract; what it rejects it must report.
        try:
            visible = manifest_from_dict(manifest).run_id != folder.name
        except ResultsError:
            visible = True
        return [Harm(folder.name, visible)]


@dataclass(frozen=True)
class HugeValue:
    """A 1 MB string or a 10,000-element list in one row of questions.parquet."""

    run: int
    column: str
    kind: str  # string | list

    def apply(self, root: Path) -> list[Harm]:
        folder = _run(root, self.run)

        def change(t: pa.Table) -> pa.Table:
            i = t.schema.get_field_index(self.column)
            values = t.column(i).to_pylist()
            values[0] = Huge(self.kind).value()
            return t.set_column(i, self.column, pa.array(values, t.schema.field(i).type))

        _rewrite(folder, change)
        return [Harm(folder.name, False)]


# ----------------------------------------------------------------------------- names

HOSTILE_NAMES = (
    "new\nline",
    "<b>markup</b>",
    "..",
    "a..b",
    "ünïcödé-run",
    "-leading-dash",
    "x" * 129,
    "has space",
    "semi;colon",
    "`tick`",
    "[link](javascript:alert(1))",
    "\u202eevil",
)


@dataclass(frozen=True)
class HostileFolder:
    """A copy of a run in a folder whose name is not a valid run id (or a tricky valid one)."""

    run: int
    name: str

    def apply(self, root: Path) -> list[Harm]:
        src = _run(root, self.run)
        dest = root / self.name
        if dest.exists() or self.name in ("..",):
            dest = root / "sub" / self.name
            dest.parent.mkdir(exist_ok=True)
        if dest.resolve().parent not in (root.resolve(), (root / "sub").resolve()):
            return [Harm(None, False)]
        if not dest.exists():
            shutil.copytree(src, dest, symlinks=True)
        return [Harm(None, dest.parent == root, named_as=self.name, tag="invalid-folder-names")]


# ----------------------------------------------------------------------------- strategies

RUN = st.integers(0, len(RUN_IDS) - 1)
FRACTION = st.floats(0.0, 1.0, exclude_max=True, allow_nan=False)


def _open(tag: str, strategy: st.SearchStrategy) -> st.SearchStrategy | None:
    return None if tag in KNOWN_OPEN else strategy


def damage_strategies() -> list[st.SearchStrategy]:
    """One strategy per damage class, minus the classes listed in KNOWN_OPEN."""
    out = [
        st.builds(Truncate, RUN, st.sampled_from((*FILES, JOURNAL)), FRACTION),
        st.builds(
            Garbage,
            RUN,
            st.sampled_from((*FILES, JOURNAL)),
            FRACTION,
            st.binary(min_size=1, max_size=64),
            st.booleans(),
        ),
        st.builds(NestedJson, RUN, st.sampled_from((MANIFEST, JOURNAL, "shard-0.json"))),
        st.builds(Missing, RUN, st.sampled_from(FILES)),
        st.builds(
            Extra,
            st.none() | RUN,
            st.sampled_from(EXTRA_NAMES),
            st.binary(max_size=64) | st.just(b"PAR1garbagePAR1"),
        ),
        st.builds(DuplicateShard, RUN),
        st.builds(
            Symlink,
            RUN,
            st.sampled_from((PARQUET, SUMMARY)),
            st.sampled_from(("dangling", "folder", "loop", "other-run")),
        ),
        st.builds(Symlink, RUN, st.just(MANIFEST), st.just("other-run")),
        _open(
            "manifest-not-a-file",
            st.builds(
                Symlink, RUN, st.just(MANIFEST), st.sampled_from(("dangling", "folder", "loop"))
            ),
        ),
        st.builds(FolderForFile, RUN, st.sampled_from((PARQUET, SUMMARY))),
        _open("manifest-not-a-file", st.builds(FolderForFile, RUN, st.just(MANIFEST))),
        st.builds(
            RootEntry,
            st.sampled_from(
                (
                    "symlink-to-run",
                    "dangling-symlink",
                    "loop",
                    "file-named-like-a-run",
                    "empty-run",
                )
            ),
        ),
        _open(
            "parquet-types",
            st.builds(
                WrongColumnType, RUN, st.sampled_from(PINNED), st.sampled_from(list(WRONG_VALUES))
            ),
        ),
        _open("parquet-types", st.builds(DropColumn, RUN, st.sampled_from(PINNED))),
        _open(
            "journal-types",
            st.builds(
                JournalValue,
                RUN,
                st.integers(0, 200),
                st.sampled_from(PINNED),
                st.sampled_from(JSON_VALUES) | st.just(float("nan")),
            ),
        ),
        st.builds(
            ManifestValue,
            RUN,
            st.sampled_from(
                (
                    "status",
                    "run_id",
                    "created_at",
                    "finished_at",
                    "config",
                    "config.name",
                    "config.pipeline",
                    "config.pipeline.params",
                    "config.thresholds",
                    "dataset",
                    "dataset.name",
                    "dataset.version",
                    "dataset.n_questions",
                    "judge",
                    "judge.model",
                    "git_commit",
                    "tags",
                    "totals",
                    "schema_version",
                    "shards",
                )
            ),
            st.sampled_from(JSON_VALUES) | st.builds(Huge, st.sampled_from(("string", "list"))),
        ),
        st.builds(
            HugeValue,
            RUN,
            st.sampled_from(("question", "answer", "error", "reference_answer", "failure_type")),
            st.just("string"),
        ),
        st.builds(
            HugeValue,
            RUN,
            st.sampled_from(("retrieved_ids", "retrieved_texts", "tags", "unsupported_claims")),
            st.just("list"),
        ),
        st.builds(HostileFolder, RUN, st.sampled_from([n for n in HOSTILE_NAMES if n != "a..b"])),
        _open("invalid-folder-names", st.builds(HostileFolder, RUN, st.just("a..b"))),
    ]
    return [s for s in out if s is not None]


def damages(max_size: int = 3) -> st.SearchStrategy:
    """One to `max_size` damages, applied in order to one copy of the results."""
    return st.lists(st.one_of(damage_strategies()), min_size=1, max_size=max_size)


def apply_all(root: Path, items) -> list[Harm]:
    harms: list[Harm] = []
    for d in items:
        harms += d.apply(root)
    return harms


def healthy(harms: list[Harm]) -> list[str]:
    """Runs no damage touched: they must look exactly as before."""
    touched = {h.run_id for h in harms}
    return [r for r in RUN_IDS if r not in touched]


def fresh_copy(dest: Path) -> Path:
    out = dest / "results"
    shutil.copytree(COMMITTED, out, ignore=shutil.ignore_patterns(".rageval"))
    os.chmod(out, 0o755)
    return out
