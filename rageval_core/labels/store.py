"""The labels location (docs/review.md): a folder or an `s3://` prefix of small JSONL files.

Every save is one new file `<location>/<dataset>/<reviewer>/<utc>-<random>.jsonl`, never a
rewrite, so two reviewers saving at the same moment both keep their labels, and an object
store works as a folder does. Reading takes every file; the newest line per (reviewer,
dataset, dataset version, question, claim) wins. A bad line is a problem naming its file
and line, never fatal. Files never change once written, so a store parses each file once
and a reload only reads the new ones. Notes go through `redact.scrub_value` before they
are written: a reviewer pasting a key into a note does not publish it.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import os
import re
import secrets
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TypeVar

import pyarrow as pa

from rageval_core.bounded_json import BadJSON, loads
from rageval_core.errors import ConfigError, RagevalError, shown
from rageval_core.labels.model import FIELDS, HumanLabel, utc_stamp
from rageval_core.redact import scrub_value
from rageval_core.runs.layout import filesystem, is_remote

_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]+")
_MAX_LINE = 1_000_000  # bytes; a longer line is reported, not parsed
T = TypeVar("T")


def safe_name(text: str) -> str:
    """A folder name for a dataset or reviewer: its own text when safe, else a cleaned
    text plus a short hash (so two names never share a folder by accident). The folder is
    only a convenience: every line carries its own dataset and reviewer."""
    clean = _UNSAFE.sub("_", text).strip("._")[:60] or "_"
    if clean == text:
        return clean
    return f"{clean}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


Subject = str | tuple[str, str | None] | None
"""A `HumanLabel.subject`: what a label is about within its question."""

_ROW_SCHEMA = pa.schema([(name, pa.string()) for name in (*FIELDS, "claim_key", "value")])
LABELS_SCHEMA = _ROW_SCHEMA.append(pa.field("idx", pa.int64()))


def _rows(labels: Sequence[HumanLabel], names: Sequence[str] = _ROW_SCHEMA.names) -> pa.Table:
    """`LabelSet.table`'s columns `names` (default all but `idx`), built a column at a
    time (a dict per label cost twice as much)."""
    return pa.table(
        {name: pa.array([getattr(lab, name) for lab in labels], pa.string()) for name in names}
    )


def label_table(labels: Sequence[HumanLabel], names: Sequence[str] | None = None) -> pa.Table:
    """`labels` as `LabelSet.table` has them, `idx` their place in `labels`; only the
    columns `names` when given (a join that reads few columns builds only those)."""
    if names is not None:
        return _rows(labels, names)
    return _rows(labels).append_column("idx", pa.array(range(len(labels)), pa.int64()))


@dataclass(frozen=True)
class Change:
    """A set against the set loaded before it (`before`, its serial): the labels it no
    longer holds (replaced by a newer one of their key) and the labels it holds anew."""

    before: int
    gone: tuple[HumanLabel, ...]
    new: tuple[HumanLabel, ...]


_serials = itertools.count(1)


@dataclass(frozen=True)
class LabelSet:
    """The labels of a location: newest per key only, and what could not be read."""

    labels: tuple[HumanLabel, ...] = ()
    problems: tuple[str, ...] = ()
    version: str = ""
    """What the set was read from: a digest of its files' names and sizes. Every save adds
    a file, so any save, in this process or another, changes it, whatever the labels'
    `created_at` says (memo keys use it; a count or the newest time can stay the same)."""
    serial: int = field(
        default_factory=lambda: next(_serials), init=False, compare=False, repr=False
    )
    """This set among every set of the process, a new one for a copy too (two loads of
    one location's files over different datasets share a `version`)."""
    change: Change | None = field(default=None, compare=False, repr=False)
    """How this set differs from the one the store loaded before it, when a save's file was
    merged in: the views that counted that set count only these (query/_review.py)."""

    @cached_property
    def _by_question(self) -> dict[tuple[str, str], dict[Subject, tuple[HumanLabel, ...]]]:
        index: dict[tuple[str, str], dict[Subject, list[HumanLabel]]] = {}
        for label in self.labels:
            q = index.setdefault((label.dataset_sha256, label.question_id), {})
            q.setdefault(label.subject, []).append(label)
        return {k: {c: tuple(v) for c, v in q.items()} for k, q in index.items()}

    @cached_property
    def table(self) -> pa.Table:
        """The claim and question labels as Arrow (the views build their own from the labels
        they count, `label_table`): every field plus
        `claim_key`, `value` (the verdict or the pass/fail) and `idx`, the label's place in
        `labels`. Relevance labels are left out: their `claim_key` is None too, and the
        joins read a None `claim_key` as a question label."""
        kept = [(i, lab) for i, lab in enumerate(self.labels) if lab.kind in ("claim", "question")]
        idx = pa.array([i for i, _ in kept], pa.int64())
        return _rows([lab for _, lab in kept]).append_column("idx", idx)

    def for_question(
        self, dataset_sha256: str, question_id: str
    ) -> dict[Subject, tuple[HumanLabel, ...]]:
        """`HumanLabel.subject` -> its labels (every reviewer's newest): claim_key for a
        claim, None for the question, ("chunk", id) and ("answer", text) for relevance."""
        return dict(self._by_question.get((dataset_sha256, question_id), {}))

    def merged(self, other: LabelSet) -> LabelSet:
        """Both sets, newest per key again (the labels location plus an older YAML)."""
        found = [(lab, (lab.at, "", 0)) for lab in self.labels + other.labels]
        merged = as_set(keep_newest({}, found), self.problems + other.problems)
        return replace(merged, version=_digest([self.version, other.version]))


_KIND_ORDER = {"question": 0, "claim": 1, "chunk": 2, "answer": 3}


def _order(lab: HumanLabel) -> tuple:
    """Labels in a stable order: by dataset version, question, question label first."""
    return (
        lab.dataset,
        lab.dataset_sha256,
        lab.question_id,
        lab.claim_key or "",
        _KIND_ORDER[lab.kind],
        lab.chunk_id or "",
        lab.answer or "",
        lab.reviewer,
    )


Best = dict[tuple, tuple[HumanLabel, tuple]]
"""key -> (the newest label of that key so far, its order)."""


def keep_newest(best: Best, found: Iterable[tuple[HumanLabel, tuple]]) -> Best:
    """`best` updated with `found` (label, order), order = (created_at, file, line): the
    newest per key wins, a tie in time goes to the later file and line."""
    for label, order in found:
        k = label.key()
        held = best.get(k)
        if held is None or order > held[1]:
            best[k] = (label, order)
    return best


def as_set(best: Best, problems: Sequence[str]) -> LabelSet:
    return LabelSet(tuple(sorted((v[0] for v in best.values()), key=_order)), tuple(problems))


def _resorted(
    labels: tuple[HumanLabel, ...], orders: list[tuple], gone: list[HumanLabel], new: list
) -> tuple[tuple[HumanLabel, ...], list[tuple]]:
    """`labels` (sorted by `_order`, whose keys `orders` are) without `gone` and with
    `new`, still sorted: what `as_set` gives, without sorting 50,000 labels for one save.
    Distinct label keys have distinct orders, so each label has its own place."""
    out, keys = list(labels), list(orders)
    for lab in gone:
        i = bisect.bisect_left(keys, _order(lab))
        del out[i], keys[i]
    for lab in new:
        k = _order(lab)
        i = bisect.bisect_left(keys, k)
        out.insert(i, lab)
        keys.insert(i, k)
    return tuple(out), keys


def parse_lines(
    text: str, where: str, parse: Callable[[object], T] = HumanLabel.from_dict
) -> tuple[list[tuple[T, int]], list[str]]:
    """The values `parse` makes of one JSONL file's lines (labels by default), each with
    its line number, and the problems ("file:line: why"): `parse` raises a RagevalError
    for a line it refuses."""
    labels, problems = [], []
    # split on "\n" only: JSON escapes it inside strings, but not U+2028 or U+0085, which
    # `str.splitlines` would cut a note at
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if len(line) > _MAX_LINE:
            problems.append(f"{where}:{n}: line longer than {_MAX_LINE} characters")
            continue
        try:
            labels.append((parse(loads(line)), n))
        except BadJSON as exc:
            problems.append(shown(f"{where}:{n}: not JSON ({exc.why})", 300, bare=True))
        except RagevalError as exc:
            problems.append(shown(f"{where}:{n}: {exc.message}", 300, bare=True))
    return labels, problems


@dataclass
class _Merged:
    """What a load found: the files (path -> size), the newest per key, the result."""

    files: dict[str, int]
    best: Best
    problems: list[str]
    result: LabelSet
    orders: list[tuple]  # `_order` of each of result.labels


@dataclass
class _Parsed:
    size: int
    labels: list[tuple[HumanLabel, int]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class JsonlLocation:
    """A folder or `s3://` prefix of small JSONL files that are only ever added: where a
    file can be written (`writable`), written once (`write_file`), listed (`files`) and
    read (`read`). The label store and the candidates' decisions (candidates/decisions.py)
    share it, each with its own files."""

    def __init__(self, location: str, *, read_only: bool = False):
        self.location = str(location).rstrip("/") or str(location)
        self.read_only = read_only
        self.fs, self.root = filesystem(self.location)
        self.remote = is_remote(self.location)
        self._writable: tuple[bool, str] | None = None

    def writable(self) -> tuple[bool, str]:
        """(True, "") when saves can land here, else (False, why)."""
        if self.read_only:
            return False, "the dashboard was started read-only"
        if self._writable is None:
            self._writable = self._probe()
        return self._writable

    def _probe(self) -> tuple[bool, str]:
        if not self.remote:
            path = Path(self.root)
            while not path.exists() and path != path.parent:
                path = path.parent
            if not path.is_dir():
                return False, f"{self.location} is not writable"
            try:  # a real write: permission bits say nothing to root or on a read-only mount
                with tempfile.TemporaryFile(dir=path, prefix=".write-check-"):
                    pass
            except OSError as exc:
                return False, shown(
                    f"{self.location} is not writable ({exc.strerror})", 300, bare=True
                )
            return True, ""
        probe = f"{self.root}/.write-check-{secrets.token_hex(8)}"
        try:
            self.fs.pipe_file(probe, b"")
            self.fs.rm_file(probe)
        except OSError as exc:
            return False, shown(f"cannot write to {self.location}: {exc}", 300, bare=True)
        return True, ""

    def write_file(self, rel: str, data: bytes) -> str:
        """Write `data` as the new file `rel` under the location (never replacing one);
        return its path."""
        if self.remote:
            path = f"{self.root}/{rel}"
            self.fs.pipe_file(path, data)  # one PUT: readers see all of it or nothing
            return self.fs.unstrip_protocol(path)
        path = Path(self.root, rel)
        write_new(path, data)
        return str(path)

    def files(self, rel: str | None, keep: Callable[[str], bool]) -> dict[str, int]:
        """Every file `keep` accepts (path -> size) under the location or its folder `rel`."""
        base = f"{self.root}/{rel}" if rel else self.root
        if not self.remote:
            return _local_files(base, keep)
        try:
            found = self.fs.find(base, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        return {p: int(info.get("size") or 0) for p, info in found.items() if keep(p)}

    def read(self, paths: list[str]) -> dict[str, bytes | Exception]:
        """The bytes of each file (an exception where it could not be read): one request
        for all of them on an object store (fsspec fetches them concurrently)."""
        if not self.remote:
            return {p: _read_local(p) for p in paths}
        try:
            got = self.fs.cat(paths, on_error="return")
        except OSError as exc:  # the whole listing vanished meanwhile
            return dict.fromkeys(paths, exc)
        return got if isinstance(got, dict) else {paths[0]: got}

    def where(self, path: str) -> str:
        """`path` as a problem names it: with its `s3://` on an object store."""
        return self.fs.unstrip_protocol(path) if self.remote else path


class LabelStore(JsonlLocation):
    """A labels location opened for reading and saving; one per process is enough."""

    def __init__(self, location: str, *, read_only: bool = False):
        super().__init__(location, read_only=read_only)
        self._parsed: dict[str, _Parsed] = {}
        self._last: dict[str | None, _Merged] = {}
        self._lock = threading.Lock()

    def save(self, labels: Sequence[HumanLabel]) -> str:
        """Write `labels` (one dataset, one reviewer) as one new file; return its path."""
        if not labels:
            raise ConfigError("nothing to save: no labels")
        ok, why = self.writable()
        if not ok:
            raise ConfigError(f"labels cannot be saved: {why}")
        first = labels[0]
        if any(lab.dataset != first.dataset or lab.reviewer != first.reviewer for lab in labels):
            raise ConfigError("one save holds the labels of one dataset and one reviewer")
        clean = [replace(lab, note=scrub_value(lab.note)) for lab in labels]
        data = "".join(lab.to_line() + "\n" for lab in clean).encode()
        folder = f"{safe_name(first.dataset)}/{safe_name(first.reviewer)}"
        return self.write_file(f"{folder}/{new_file_name()}", data)

    def has_labels(self) -> bool:
        """True when the location holds a label file (a listing, no file read): whether
        label views will need the claims cache."""
        return bool(self._files(None))

    def _files(self, dataset: str | None) -> dict[str, int]:
        """Every label file (path -> size) under the location or one dataset's folder."""
        return self.files(safe_name(dataset) if dataset else None, _is_label_file)

    def load(self, dataset: str | None = None) -> LabelSet:
        """Every label of the location (of `dataset` only, when given), newest per key."""
        files = self._files(dataset)
        last = self._last.get(dataset)
        if last is not None and last.files == files:
            return last.result  # nothing added or grown: the same set
        todo = [p for p, size in files.items() if self._parsed.get(p, _Parsed(-1)).size != size]
        texts = self.read(todo) if todo else {}
        with self._lock:
            for p in todo:
                self._parsed[p] = self._parse(p, files[p], texts.get(p))
            # Files are only ever added: merge the new ones into the last result. A file
            # gone or changed (removed by hand, a save cut short) means a full merge.
            grown = last is not None and all(files.get(p) == n for p, n in last.files.items())
            best, problems = (dict(last.best), list(last.problems)) if grown else ({}, [])
            new = sorted(p for p in files if not grown or p not in last.files)
            parsed = [(p, self._parsed[p]) for p in new]
        touched = set()
        for p, entry in parsed:
            problems += entry.problems
            name = p.rsplit("/", 1)[-1]
            found = [
                (label, (label.at, name, line))
                for label, line in entry.labels
                if dataset is None or label.dataset == dataset
            ]
            if grown:  # only a save's new file moves labels one by one (below)
                touched.update(label.key() for label, _ in found)
            keep_newest(best, found)
        version = _digest(f"{p}\0{n}" for p, n in sorted(files.items())) if files else ""
        if grown:  # a save's new file: only the keys it holds move
            held = [last.best.get(k) for k in touched]
            gone = [
                h[0] for h, k in zip(held, touched, strict=True) if h and h[0] is not best[k][0]
            ]
            new_labels = [
                best[k][0]
                for h, k in zip(held, touched, strict=True)
                if not h or h[0] is not best[k][0]
            ]
            sorted_labels, orders = _resorted(last.result.labels, last.orders, gone, new_labels)
            result = LabelSet(
                sorted_labels,
                tuple(problems),
                version,
                change=Change(last.result.serial, tuple(gone), tuple(new_labels)),
            )
        else:
            result = replace(as_set(best, problems), version=version)
            orders = [_order(lab) for lab in result.labels]
        with self._lock:
            self._last[dataset] = _Merged(files, best, problems, result, orders)
        return result

    def _parse(self, path: str, size: int, data: bytes | Exception | None) -> _Parsed:
        where = self.where(path)
        if isinstance(data, Exception) or data is None:
            return _Parsed(size, [], [f"{where}: unreadable ({data})"])
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _Parsed(size, [], [f"{where}: not UTF-8 ({exc.reason})"])
        labels, problems = parse_lines(text, where)
        return _Parsed(size, labels, problems)


def _digest(parts: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]


OTHER_FILES = ".decisions.jsonl"
"""How a file of the location that holds no labels ends (candidates/decisions.py)."""


def new_file_name(suffix: str = ".jsonl") -> str:
    """A new file's name: its UTC time (files sort by it) and 16 random hex digits."""
    return f"{utc_stamp().replace(':', '').replace('-', '')}-{secrets.token_hex(8)}{suffix}"


def _is_label_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".jsonl") and not name.startswith(".") and not name.endswith(OTHER_FILES)


def _local_files(base: str, keep: Callable[[str], bool]) -> dict[str, int]:
    """The files `keep` accepts under a local folder with their sizes, from the directory
    entries (one `scandir` per folder: 50,000 files list in a fraction of fsspec's `find`)."""
    out: dict[str, int] = {}
    stack = [base]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif keep(entry.path) and entry.is_file():
                        try:
                            out[entry.path] = entry.stat().st_size
                        except OSError:
                            continue  # removed since it was listed
        except OSError:  # no such folder (no labels yet), or not a folder
            continue
    return out


def _read_local(path: str) -> bytes | Exception:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        return exc


def write_new(path: Path, data: bytes) -> None:
    """Create `path` with `data`, durably, failing rather than replacing a file: written
    under a hidden name, then hard-linked into place (link never overwrites)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
