"""The labels location (SPEC §10): a folder or an `s3://` prefix of small JSONL files.

Every save is one new file `<location>/<dataset>/<reviewer>/<utc>-<random>.jsonl`, never a
rewrite, so two reviewers saving at the same moment both keep their labels, and an object
store works as a folder does. Reading takes every file; the newest line per (reviewer,
dataset, dataset version, question, claim) wins. A bad line is a problem naming its file
and line, never fatal. Files never change once written, so a store parses each file once
and a reload only reads the new ones. Notes go through `redact.scrub_value` before they
are written: a reviewer pasting a key into a note does not publish it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import pyarrow as pa

from rageval_core import results
from rageval_core.errors import ConfigError, RagevalError, one_line
from rageval_core.labels.model import FIELDS, HumanLabel, utc_stamp
from rageval_core.redact import scrub_value

LABELS_ENV = "RAGEVAL_LABELS"
_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]+")
_MAX_LINE = 1_000_000  # bytes; a longer line is reported, not parsed


def labels_location(results_loc: str | None = None, explicit: str | None = None) -> str:
    """`explicit`, else $RAGEVAL_LABELS, else `labels` beside the results location
    (`/x/results` -> `/x/labels`, `s3://b/p/results` -> `s3://b/p/labels`)."""
    if explicit:
        return str(explicit)
    if os.environ.get(LABELS_ENV):
        return os.environ[LABELS_ENV]
    loc = results.results_location(results_loc).rstrip("/")
    if results.is_remote(loc):
        head, sep, _ = loc.rpartition("/")
        return f"{head}/labels" if sep and "://" in head else f"{loc}/labels"
    parent = Path(loc).parent
    return str(parent / "labels")


def safe_name(text: str) -> str:
    """A folder name for a dataset or reviewer: its own text when safe, else a cleaned
    text plus a short hash (so two names never share a folder by accident). The folder is
    only a convenience: every line carries its own dataset and reviewer."""
    clean = _UNSAFE.sub("_", text).strip("._")[:60] or "_"
    if clean == text:
        return clean
    return f"{clean}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


LABELS_SCHEMA = pa.schema(
    [(name, pa.string()) for name in FIELDS]
    + [("claim_key", pa.string()), ("value", pa.string()), ("idx", pa.int64())]
)


@dataclass(frozen=True)
class LabelSet:
    """The labels of a location: newest per key only, and what could not be read."""

    labels: tuple[HumanLabel, ...] = ()
    problems: tuple[str, ...] = ()

    @cached_property
    def _by_question(self) -> dict[tuple[str, str], dict[str | None, tuple[HumanLabel, ...]]]:
        index: dict[tuple[str, str], dict[str | None, list[HumanLabel]]] = {}
        for label in self.labels:
            q = index.setdefault((label.dataset_sha256, label.question_id), {})
            q.setdefault(label.claim_key, []).append(label)
        return {k: {c: tuple(v) for c, v in q.items()} for k, q in index.items()}

    @cached_property
    def table(self) -> pa.Table:
        """The labels as Arrow, for joins in DuckDB: every field plus `claim_key`, `value`
        (the verdict or the pass/fail) and `idx`, the label's place in `labels`."""
        return pa.Table.from_pylist(
            [
                {**lab.to_dict(), "claim_key": lab.claim_key, "value": lab.value, "idx": i}
                for i, lab in enumerate(self.labels)
            ],
            schema=LABELS_SCHEMA,
        )

    def for_question(
        self, dataset_sha256: str, question_id: str
    ) -> dict[str | None, tuple[HumanLabel, ...]]:
        """claim_key -> its labels (every reviewer's newest); None -> question labels."""
        return dict(self._by_question.get((dataset_sha256, question_id), {}))

    def merged(self, other: LabelSet) -> LabelSet:
        """Both sets, newest per key again (the labels location plus an older YAML)."""
        return newest(
            [(lab, (lab.at, "", 0)) for lab in self.labels + other.labels],
            self.problems + other.problems,
        )


def _order(lab: HumanLabel) -> tuple:
    """Labels in a stable order: by dataset version, question, question label first."""
    return (
        lab.dataset,
        lab.dataset_sha256,
        lab.question_id,
        lab.claim_key or "",
        lab.claim is not None,
        lab.reviewer,
    )


def newest(found: Sequence[tuple[HumanLabel, tuple]], problems: Sequence[str]) -> LabelSet:
    """A LabelSet of the newest label per key; `found` holds (label, order) where order
    is (created_at, file, line): a tie in time goes to the later file and line."""
    best: dict[tuple, tuple[HumanLabel, tuple]] = {}
    for label, order in found:
        k = label.key()
        held = best.get(k)
        if held is None or order > held[1]:
            best[k] = (label, order)
    kept = sorted((v[0] for v in best.values()), key=_order)
    return LabelSet(tuple(kept), tuple(problems))


def parse_lines(text: str, where: str) -> tuple[list[tuple[HumanLabel, int]], list[str]]:
    """The labels of one JSONL file's text and its problems ("file:line: why")."""
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
            labels.append((HumanLabel.from_dict(json.loads(line)), n))
        except ValueError as exc:
            problems.append(one_line(f"{where}:{n}: not JSON ({exc})", 300))
        except RagevalError as exc:
            problems.append(one_line(f"{where}:{n}: {exc.message}", 300))
    return labels, problems


@dataclass
class _Parsed:
    size: int
    labels: list[tuple[HumanLabel, int]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class LabelStore:
    """A labels location opened for reading and saving; one per process is enough."""

    def __init__(self, location: str, *, read_only: bool = False):
        self.location = str(location).rstrip("/") or str(location)
        self.read_only = read_only
        self.fs, self.root = results.filesystem(self.location)
        self.remote = results.is_remote(self.location)
        self._parsed: dict[str, _Parsed] = {}
        self._last: dict[str | None, tuple[dict[str, int], LabelSet]] = {}
        self._lock = threading.Lock()
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
            if path.is_dir() and os.access(path, os.W_OK | os.X_OK):
                return True, ""
            return False, f"{self.location} is not writable"
        probe = f"{self.root}/.write-check-{secrets.token_hex(8)}"
        try:
            self.fs.pipe_file(probe, b"")
            self.fs.rm_file(probe)
        except OSError as exc:
            return False, one_line(f"cannot write to {self.location}: {exc}", 300)
        return True, ""

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
        name = f"{utc_stamp().replace(':', '').replace('-', '')}-{secrets.token_hex(8)}.jsonl"
        rel = f"{safe_name(first.dataset)}/{safe_name(first.reviewer)}/{name}"
        if self.remote:
            path = f"{self.root}/{rel}"
            self.fs.pipe_file(path, data)  # one PUT: readers see all of it or nothing
            return self.fs.unstrip_protocol(path)
        path = Path(self.root, rel)
        write_new(path, data)
        return str(path)

    def _files(self, dataset: str | None) -> dict[str, int]:
        base = f"{self.root}/{safe_name(dataset)}" if dataset else self.root
        try:
            found = self.fs.find(base, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        return {
            p: int(info.get("size") or 0)
            for p, info in found.items()
            if p.endswith(".jsonl") and not p.rsplit("/", 1)[-1].startswith(".")
        }

    def load(self, dataset: str | None = None) -> LabelSet:
        """Every label of the location (of `dataset` only, when given), newest per key."""
        files = self._files(dataset)
        last = self._last.get(dataset)
        if last is not None and last[0] == files:
            return last[1]  # no file added or grown: the same set, not merged again
        todo = [p for p, size in files.items() if self._parsed.get(p, _Parsed(-1)).size != size]
        texts: dict[str, bytes | Exception] = {}
        if todo:
            try:
                got = self.fs.cat(todo, on_error="return")
            except OSError as exc:  # the whole listing vanished meanwhile
                got = dict.fromkeys(todo, exc)
            texts = got if isinstance(got, dict) else {todo[0]: got}
        with self._lock:
            for p in todo:
                where = self.fs.unstrip_protocol(p) if self.remote else p
                data = texts.get(p)
                if isinstance(data, Exception) or data is None:
                    self._parsed[p] = _Parsed(files[p], [], [f"{where}: unreadable ({data})"])
                    continue
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    self._parsed[p] = _Parsed(files[p], [], [f"{where}: not UTF-8 ({exc.reason})"])
                    continue
                labels, problems = parse_lines(text, where)
                self._parsed[p] = _Parsed(files[p], labels, problems)
            parsed = [(p, self._parsed[p]) for p in sorted(files)]
        found, problems = [], []
        for p, entry in parsed:
            problems += entry.problems
            name = p.rsplit("/", 1)[-1]
            for label, line in entry.labels:
                if dataset is None or label.dataset == dataset:
                    found.append((label, (label.at, name, line)))
        result = newest(found, problems)
        with self._lock:
            self._last[dataset] = (files, result)
        return result


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
