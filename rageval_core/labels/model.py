"""One human label (a JSONL line of the labels location, docs/review.md) and its rules.

A label belongs to a claim's text on a dataset version, not to a run: `claim_key` is the
normalised text both sides are matched on. Building a `HumanLabel` validates it, so a
label that exists is a label that can be written and read back. This module does no I/O.
"""

from __future__ import annotations

import functools
import json
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rageval_core.errors import ConfigError
from rageval_core.metrics.generation import normalize_answer
from rageval_core.models import VERDICTS

QUESTION_LABELS: tuple[str, ...] = ("pass", "fail")
MAX_REVIEWER = 120
FIELDS: tuple[str, ...] = (  # a line's keys, in the order they are written
    "dataset",
    "dataset_sha256",
    "question_id",
    "claim",
    "verdict",
    "question_label",
    "reviewer",
    "created_at",
    "note",
    "run_id",
    "judge",
)
NEW_FIELDS: tuple[str, ...] = ("chunk_id", "relevant", "answer", "answer_relevant")
"""Written on a relevance label's line only (every one of them, null where unset), so a
claim or question label's line is as before."""
RELEVANCE: tuple[str, str] = ("irrelevant", "relevant")  # a relevance label's value, by bool


def claim_key(text: str | None) -> str | None:
    """The text a claim is matched on (`normalize_answer`: case, punctuation and articles
    do not tell two claims apart); None for a question-level label."""
    return None if text is None else normalize_answer(text)


def _has_control(text: str) -> bool:
    return any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in text)


@functools.lru_cache(maxsize=4096)
def _checked_reviewer(name: str) -> str:
    name = name.strip()
    if not name:
        raise ConfigError("reviewer name is empty")
    if len(name) > MAX_REVIEWER:
        raise ConfigError(f"reviewer name is longer than {MAX_REVIEWER} characters")
    if _has_control(name):
        raise ConfigError("reviewer name contains control characters")
    check_utf8(name, "reviewer name")
    return name


def check_reviewer(name: object) -> str:
    """`name` stripped, if it can name a reviewer: it becomes a folder of the labels
    location and is shown on every page, so it is short, non-empty, one plain line."""
    if not isinstance(name, str):
        raise ConfigError("reviewer name must be text")
    return _checked_reviewer(name)  # a few reviewers sign thousands of labels


def utc_stamp(now: datetime | None = None) -> str:
    """UTC ISO-8601 with microseconds: two saves in one second still order."""
    now = now or datetime.now(UTC)
    return now.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(value: object) -> datetime:
    """An aware datetime from an ISO-8601 text; ConfigError when it is not one."""
    if not isinstance(value, str):
        raise ConfigError("created_at must be an ISO-8601 time")
    try:
        ts = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"created_at {value[:40]!r} is not an ISO-8601 time") from None
    if ts.tzinfo is None:
        raise ConfigError(f"created_at {value[:40]!r} has no time zone")
    return ts


def _text(value: object, name: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not optional and not value.strip()):
        raise ConfigError(f"{name} must be {'text' if optional else 'non-empty text'}")
    check_utf8(value, name)
    return value


def check_utf8(value: str, name: str) -> None:
    """Raise when `value` cannot be written as UTF-8 (a lone surrogate, which a label
    built in code rather than read through `bounded_json` may hold)."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigError(f"{name} holds a lone surrogate (not UTF-8 text)") from None


def _kind(label: HumanLabel) -> str:
    if label.claim is not None:
        return "claim"
    if label.chunk_id is not None:
        return "chunk"
    return "answer" if label.answer is not None else "question"


def _value(label: HumanLabel) -> str:
    """A claim's verdict, "relevant"/"irrelevant" for a chunk or an answer, pass/fail of a
    question (by `label.kind`, set before)."""
    if label.kind == "chunk":
        return RELEVANCE[bool(label.relevant)]
    if label.kind == "answer":
        return RELEVANCE[bool(label.answer_relevant)]
    return label.verdict if label.kind == "claim" else label.question_label  # type: ignore[return-value]


@dataclass(frozen=True)
class HumanLabel:
    """One human judgement, exactly one kind per line: a claim (`claim`, `verdict`), a
    retrieved chunk's relevance (`chunk_id`, `relevant`), the answer's relevancy (`answer`,
    `answer_relevant`) or a whole answer (none of those, `question_label`). `judge` is the
    judge's value it was given beside: equal to the human's when the reviewer said "the
    judge is right"."""

    dataset: str
    dataset_sha256: str
    question_id: str
    claim: str | None
    verdict: str | None
    question_label: str | None
    reviewer: str
    created_at: str
    note: str = ""
    run_id: str | None = None
    judge: str | None = None
    chunk_id: str | None = None
    relevant: bool | None = None
    answer: str | None = None
    answer_relevant: bool | None = None

    def __post_init__(self) -> None:
        _text(self.dataset, "dataset")
        _text(self.dataset_sha256, "dataset_sha256")
        _text(self.question_id, "question_id")
        _text(self.run_id, "run_id", optional=True)
        _text(self.judge, "judge", optional=True)
        _text(self.claim, "claim", optional=True)
        if not isinstance(self.note, str):
            raise ConfigError("note must be text")
        check_utf8(self.note, "note")
        for name in ("verdict", "question_label"):
            if not isinstance(getattr(self, name), str | None):
                raise ConfigError(f"{name} must be text or null")
        object.__setattr__(self, "reviewer", check_reviewer(self.reviewer))
        # derived once (not fields: neither compared nor written); loads sort, index and
        # count tens of thousands of labels by them (`kind` and `value` were properties,
        # computed half a million times on a rerun after a save at 50,000 labels)
        object.__setattr__(self, "at", parse_time(self.created_at))
        _text(self.chunk_id, "chunk_id", optional=True)
        _text(self.answer, "answer", optional=True)
        for name in ("relevant", "answer_relevant"):
            if not isinstance(getattr(self, name), bool | None):
                raise ConfigError(f"{name} must be true, false or null")
        kinds = [n for n in ("claim", "chunk_id", "answer") if getattr(self, n) is not None]
        if len(kinds) > 1:
            raise ConfigError(f"a label line has one kind, not both {kinds[0]} and {kinds[1]}")
        if self.claim is not None:
            _text(self.claim, "claim")
        object.__setattr__(self, "claim_key", claim_key(self.claim))
        if self.chunk_id is None and self.relevant is not None:
            raise ConfigError("relevant belongs to a chunk label (chunk_id set)")
        if self.answer is None and self.answer_relevant is not None:
            raise ConfigError("answer_relevant belongs to an answer label (answer set)")
        kind = _kind(self)
        object.__setattr__(self, "kind", kind)
        if kind in ("chunk", "answer"):
            self._check_relevance()
        elif kind == "claim":
            if self.verdict not in VERDICTS:
                raise ConfigError(f"verdict must be one of {', '.join(VERDICTS)}")
            if self.question_label is not None:
                raise ConfigError("a claim label has a verdict, not a question_label")
        else:
            if self.question_label not in QUESTION_LABELS:
                raise ConfigError(
                    f"a question label (claim null) needs question_label "
                    f"{' or '.join(QUESTION_LABELS)}"
                )
            if self.verdict is not None:
                raise ConfigError("a question label (claim null) has no verdict")
        object.__setattr__(self, "value", _value(self))

    def _check_relevance(self) -> None:
        name, flag = (
            ("chunk_id", "relevant") if self.chunk_id is not None else ("answer", "answer_relevant")
        )
        _text(getattr(self, name), name)
        if getattr(self, flag) is None:
            raise ConfigError(f"a label with {name} needs {flag} true or false")
        if self.verdict is not None or self.question_label is not None:
            raise ConfigError(f"a label with {name} has {flag}, not a verdict or question_label")

    if TYPE_CHECKING:  # derived once in __post_init__ (see there)
        at: datetime  # created_at, parsed
        claim_key: str | None  # claim_key(claim)
        kind: str  # which judgement: "claim", "chunk", "answer" or "question"
        value: str  # the human's answer: a claim's verdict, "relevant"/"irrelevant", pass/fail

    @property
    def subject(self) -> str | tuple[str, str | None] | None:
        """What the label is about within its question: the claim's key, None for the
        question itself, ("chunk", chunk id) or ("answer", its normalised text). A
        relevance label never shares the None of a question label."""
        kind = self.kind
        if kind == "chunk":
            return ("chunk", self.chunk_id)
        if kind == "answer":
            return ("answer", claim_key(self.answer))
        return self.claim_key

    def key(self) -> tuple:
        """What a newer label of the same reviewer replaces (docs/review.md, "What is stored")."""
        return (self.reviewer, self.dataset, self.dataset_sha256, self.question_id, self.subject)

    def to_dict(self) -> dict[str, Any]:
        d = {name: getattr(self, name) for name in FIELDS}
        if self.kind in ("chunk", "answer"):
            d.update({n: getattr(self, n) for n in NEW_FIELDS})
        return d

    def to_line(self) -> str:
        """One JSONL line (no newline); non-ASCII kept as written."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: object) -> HumanLabel:
        """A label from a parsed JSON line; ConfigError naming the first wrong field.
        Unknown fields are ignored (a newer rageval may add some)."""
        if not isinstance(d, dict):
            raise ConfigError("a label line must be a JSON object")
        missing = [
            f for f in ("dataset", "dataset_sha256", "question_id", "reviewer") if f not in d
        ]
        if missing:
            raise ConfigError(f"missing field {missing[0]}")
        qid = d.get("question_id")
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        return cls(
            dataset=d["dataset"],
            dataset_sha256=d["dataset_sha256"],
            question_id=qid,
            claim=d.get("claim"),
            verdict=d.get("verdict"),
            question_label=d.get("question_label"),
            reviewer=d["reviewer"],
            created_at=d.get("created_at"),  # type: ignore[arg-type]
            note="" if d.get("note") is None else d["note"],
            run_id=d.get("run_id"),
            judge=d.get("judge"),
            chunk_id=d.get("chunk_id"),
            relevant=d.get("relevant"),
            answer=d.get("answer"),
            answer_relevant=d.get("answer_relevant"),
        )
