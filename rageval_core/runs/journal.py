"""The append-only journal of a run being written (`questions[-k].jsonl`)."""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import fsspec

from rageval_core.errors import shown
from rageval_core.models import DeclaredMetric
from rageval_core.runs.rows import (
    conform_row,
    declared_names,
    missing_declared,
)


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
            what = "truncated last line (interrupted write)" if torn else f"bad line ({shown(exc)})"
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
        return [], [f"{path}: unreadable journal ({shown(exc)})"]
    rows: dict[str, dict[str, Any]] = {}
    problems = []
    for row, problem in iter_journal_text(text, path, declared_names(declared)):
        if row is not None:
            rows[str(row["question_id"])] = row
        if problem:
            problems.append(problem)
    if rows:
        problems += missing_declared({k for r in rows.values() for k in r}, declared, path)
    return list(rows.values()), problems
