"""What every importer shares: the `Imported` value, typed field access that names the
file and the field when one does not fit, metric names and question ids.

Reads nothing itself; the tool modules do.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval_core.bounded_json import BadJSON, load_file, loads
from rageval_core.catalogue import BUILTIN
from rageval_core.errors import SourceError, shown
from rageval_core.models import GoldenDataset, JudgeRef


@dataclass(frozen=True)
class Imported:
    """A tool's results file, read and checked: `records` are `RunWriter.add` keyword
    arguments (`question_id` may be None: then the question text identifies it), a list or
    an iterator that reads the file as it goes (RAGAS); `metrics` the declarations of the
    tool's other numeric metrics; `notes` what the reader left out and why (told to the
    user, not errors)."""

    records: Iterable[dict[str, Any]]
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    judge: JudgeRef | None = None
    name: str | None = None
    tool_version: str | None = None
    notes: tuple[str, ...] = ()


class Fields:
    """Typed access to one JSON object of a file; a wrong type is a SourceError naming the
    file and the dotted path of the field (`results.results[3].response.output`)."""

    def __init__(self, value: Any, source: str, where: str):
        if not isinstance(value, Mapping):
            raise bad(source, where, "an object", value)
        self.value, self.source, self.where = value, source, where

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def raw(self, key: str) -> Any:
        return self.value.get(key)

    def obj(self, key: str, required: bool = False) -> Fields | None:
        v = self.value.get(key)
        if v is None and not required:
            return None
        return Fields(v, self.source, self.path(key))

    def items(self, key: str, required: bool = False) -> list[Any]:
        v = self.value.get(key)
        if v is None and not required:
            return []
        if not isinstance(v, list):
            raise bad(self.source, self.path(key), "a list", v)
        return v

    def text(self, key: str, required: bool = False) -> str | None:
        v = self.value.get(key)
        if v is None and not required:
            return None
        if not isinstance(v, str):
            raise bad(self.source, self.path(key), "text", v)
        return v

    def number(self, key: str) -> float | None:
        return number(self.value.get(key), self.source, self.path(key))

    def texts(self, key: str) -> list[str] | None:
        """A list of strings, or None when absent."""
        v = self.value.get(key)
        if v is None:
            return None
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise bad(self.source, self.path(key), "a list of text", v)
        return v


def bad(source: str, where: str, expected: str, got: Any) -> SourceError:
    what = "null" if got is None else type(got).__name__
    return SourceError(f"{source}: {shown(where, 120, bare=True)} must be {expected}, got {what}")


def number(value: Any, source: str, where: str) -> float | None:
    """A finite number or None (NaN, as pandas writes a missing score, is None too)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad(source, where, "a number", value)
    try:
        value = float(value)
    except OverflowError:  # an integer beyond a double, from a reader without bounds
        raise SourceError(
            f"{source}: {shown(where, 120, bare=True)} is too large a number"
        ) from None
    return value if math.isfinite(value) else None


def load_json(path: Path) -> Any:
    """A whole JSON file through the bounded reader: `file:line: why` when it is not."""
    try:
        return load_file(path)
    except BadJSON as exc:
        raise SourceError(exc.at(str(path))) from None


def json_value(data: bytes, source: str) -> Any:
    """One JSON text of `source` (a zip member, a log's field) through the bounded reader."""
    try:
        return loads(data)
    except BadJSON as exc:
        raise SourceError(exc.at(source)) from None


def slug(label: str) -> str:
    """A tool's metric label as a lowercase identifier: `Answer Relevancy` ->
    `answer_relevancy`."""
    name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")[:56] or "score"
    return name if name[0].isalpha() else f"m_{name}"


def metric_name(label: str, tool: str) -> str:
    """A declared-metric name for a tool's metric label (`slug`), prefixed with the tool
    when it would shadow a built-in figure."""
    name = slug(label)
    if BUILTIN.metric(name) is not None or name.endswith("_p10"):
        name = f"{tool}_{name}"[:64]
    return name


def declare(labels: Mapping[str, str], values: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """`metrics:` declarations for the names in `labels` (name -> the tool's label):
    higher is better; unit range when every value lies in [0, 1], else a plain number."""
    values = list(values)
    out = {}
    for name, label in labels.items():
        seen = [s[name] for s in values if s.get(name) is not None]
        unit = all(0.0 <= v <= 1.0 for v in seen)
        out[name] = {
            "label": label[:80],
            "direction": "higher",
            "range": "unit" if unit else "number",
        }
    return out


def text_id(question: str) -> str:
    """A stable question id from its text, for files that hold no id (RAGAS): the same
    question gets the same id in every import, so imported runs compare."""
    return "q-" + hashlib.sha256(" ".join(question.split()).encode()).hexdigest()[:12]


def resolve_ids(
    records: Iterable[dict[str, Any]], dataset: GoldenDataset | None, source: str
) -> Iterator[dict[str, Any]]:
    """Give every record a question id: its own, else (with a dataset) the dataset question
    with the same text, else one made from the text. A question the dataset does not hold,
    or a question twice, is a SourceError naming the file and the row. With a dataset the
    gold ids and the reference answer are the dataset's (docs/import.md): a file's own are
    dropped, so the question's answerability is the dataset's too. Lazy: records are
    resolved as they are taken (a streamed file is never held whole here)."""
    by_text = {" ".join(q.question.split()): q.id for q in dataset.questions} if dataset else {}
    ids = {q.id for q in dataset.questions} if dataset else set()
    seen = set()
    for n, rec in enumerate(records, start=1):
        qid, text = rec.get("question_id"), rec.get("question")
        if dataset is not None and qid not in ids and text is not None:
            qid = by_text.get(" ".join(text.split()), qid)
        if dataset is not None and qid not in ids:
            raise SourceError(
                f"{source}: row {n}: question {shown(qid or text, 80)} is not in dataset "
                f"{dataset.name!r} (matched by id, then by exact question text)"
            )
        if qid is None:
            if text is None:
                raise SourceError(f"{source}: row {n}: neither a question id nor a question")
            qid = text_id(text)
        if qid in seen:
            raise SourceError(
                f"{source}: row {n}: question {shown(qid, 80)} appears twice; a run "
                "holds each question once (import one model or prompt at a time)"
            )
        seen.add(qid)
        rec = {**rec, "question_id": str(qid)}
        if dataset is not None:
            rec.pop("gold_ids", None)
            rec.pop("reference", None)
        yield rec
