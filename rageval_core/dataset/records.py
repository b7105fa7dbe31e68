"""Validating one mapping read from a dataset file: its fields, its id, repeated ids.

Each problem is formatted with file, line and subject (`question q007`) and appended to
the caller's list, so a load reports every problem at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rageval_core.dataset.files import Items, Located
from rageval_core.errors import shown

_TYPE_NAMES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "a boolean"),  # before int: bool is a subclass of int
    ((int, float), "a number"),
    (str, "a string"),
    (list, "a list"),
    (dict, "a mapping"),
)


def type_name(value: Any) -> str:
    """How a problem names a value's type: the YAML/JSON word, not the Python class."""
    for kind, name in _TYPE_NAMES:
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


class Record:
    """One mapping under validation; formats each problem with file, line and subject."""

    def __init__(self, data: Located, file: Path, subject: str, problems: list[str]):
        self.data, self.file, self.subject, self.problems = data, file, subject, problems
        for key, line in data.repeated:
            self.problems.append(f"{file}:{line}: {subject}: field {shown(key)} is given twice")

    def problem(self, what: str, key: str | None = None) -> None:
        self.problems.append(f"{self.file}:{self.data.line_of(key)}: {self.subject}: {what}")

    def text(self, key: str, *, required: bool = True) -> str | None:
        """A string field; missing, empty-when-required or non-string values are problems."""
        if key not in self.data or self.data[key] is None:
            if required:
                self.problem(f"missing field '{key}'", key)
            return None
        value = self.data[key]
        if not isinstance(value, str):
            self.problem(f"'{key}' must be a string, not {type_name(value)}", key)
            return None
        if required and not value.strip():
            self.problem(f"'{key}' is empty", key)
            return None
        return value

    def strings(self, key: str, *, required: bool = False, hint: str = "") -> tuple[str, ...]:
        """A list-of-strings field; a missing optional list is empty."""
        if key not in self.data:
            if required:
                self.problem(f"missing field '{key}'{hint}", key)
            return ()
        value = self.data[key]
        if not isinstance(value, list):
            self.problem(f"'{key}' must be a list, not {type_name(value)}{hint}", key)
            return ()
        bad = [item for item in value if not isinstance(item, str) or not item.strip()]
        if bad:
            self.problem(f"'{key}' must hold non-empty strings, found {shown(bad[0])}", key)
        return tuple(item for item in value if isinstance(item, str) and item.strip())


def subject_id(record: Any, fallback: str, kind: str, pattern: re.Pattern | None = None) -> str:
    """`question q007` when the record has a usable id (one that fits `pattern`, if
    given), else its position. A long or unprintable id is quoted and cut."""
    raw = record.get("id") if isinstance(record, dict) else None
    if not isinstance(raw, str) or not raw.strip():
        return fallback
    if pattern is not None and not pattern.fullmatch(raw):
        return fallback
    return f"{kind} {shown(raw, bare=True)}"


def unique_records(
    records: Items,
    file: Path,
    kind: str,
    problems: list[str],
    build: Callable[[Record], Any | None],
) -> list[Any]:
    """`build` of each mapping of `records` (None: its problems are recorded); a repeated
    `id` is a problem and the first one is kept. `kind` names the record in messages."""
    out: list[Any] = []
    first_line: dict[str, int] = {}
    for raw, line in zip(records, records.lines, strict=True):
        if not isinstance(raw, Located):
            problems.append(f"{file}:{line}: {kind}: expected a mapping, not {type_name(raw)}")
            continue
        rec = Record(raw, file, subject_id(raw, kind, kind), problems)
        item = build(rec)
        if item is None:
            continue
        if item.id in first_line:
            rec.problem(f"duplicate {kind} id (first at line {first_line[item.id]})", "id")
            continue
        first_line[item.id] = raw.line
        out.append(item)
    return out
