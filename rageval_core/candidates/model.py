"""The values of `rageval dataset generate`: a candidate question, its quotes, the
document versions it was written from, its checks and its status (docs/generate.md).

A candidate is a proposal, never gold: it becomes a dataset question only after its
checks pass (`accepted-by-checks`) and, later, a reviewer accepts it. Each value here
is plain data with a JSON form (`to_json` / `from_json`) for the candidates file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

from rageval_core.errors import DatasetError, shown

TEMPLATED_KINDS = ("definition", "number", "name")
"""What the offline generator writes (docs/generate.md, "Templated")."""
LLM_KINDS = ("single-fact", "multi-hop", "user-vocabulary", "unanswerable")
"""What the LLM generator is asked for, in the mix its config sets."""

ACCEPTED = "accepted-by-checks"
REJECTED = "rejected"
PENDING = "unchecked"


@dataclass(frozen=True)
class Quote:
    """A gold span given by its text, as the generator wrote it; `start`/`end` are where
    it stands in its document when found exactly once, else None."""

    doc_id: str
    text: str
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True)
class Source:
    """A document version a candidate was written from: the version the documents file
    declares (None when it declares none) and the sha256 of the text itself."""

    doc_id: str
    version: str | None
    sha256: str


@dataclass(frozen=True)
class Check:
    """One automatic check of a candidate and why it passed or failed."""

    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Candidate:
    """A generated question with its reference answer, gold quotes and provenance."""

    id: str
    kind: str
    question: str
    reference_answer: str
    quotes: tuple[Quote, ...]
    sources: tuple[Source, ...]
    generator: str
    checks: tuple[Check, ...] = ()
    status: str = PENDING
    replaces: str | None = None
    """The dataset question whose gold it would mend (a stale question queued for review
    by `rageval dataset refresh`), None for a new question."""

    @property
    def answerable(self) -> bool:
        return self.kind != "unanswerable"

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why it was rejected: each failed check's detail, named."""
        return tuple(f"{c.name}: {c.detail}" for c in self.checks if not c.passed)

    def checked(self, checks: tuple[Check, ...]) -> Candidate:
        status = ACCEPTED if all(c.passed for c in checks) else REJECTED
        return replace(self, checks=checks, status=status)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "question": self.question,
            "reference_answer": self.reference_answer,
            "quotes": [
                {"doc_id": q.doc_id, "text": q.text, "start": q.start, "end": q.end}
                for q in self.quotes
            ],
            "sources": [
                {"doc_id": s.doc_id, "version": s.version, "sha256": s.sha256} for s in self.sources
            ],
            "generator": self.generator,
            "checks": [
                {"name": c.name, "passed": c.passed, "detail": c.detail} for c in self.checks
            ],
            **({} if self.replaces is None else {"replaces": self.replaces}),
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> Candidate:
        """A candidate read back from its JSON form; a wrong shape is a DatasetError
        naming `where` (file:line)."""
        try:
            return cls(
                id=_text(data["id"]),
                kind=_text(data["kind"]),
                question=_text(data["question"]),
                reference_answer=_text(data["reference_answer"]),
                quotes=tuple(
                    Quote(_text(q["doc_id"]), _text(q["text"]), _at(q["start"]), _at(q["end"]))
                    for q in data["quotes"]
                ),
                sources=tuple(
                    Source(_text(s["doc_id"]), s.get("version"), _text(s["sha256"]))
                    for s in data["sources"]
                ),
                generator=_text(data["generator"]),
                checks=tuple(
                    Check(_text(c["name"]), c["passed"] is True, _text(c["detail"]))
                    for c in data.get("checks", ())
                ),
                status=_text(data.get("status", PENDING)),
                replaces=None if data.get("replaces") is None else _text(data["replaces"]),
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise DatasetError(f"{where}: not a candidate ({shown(exc)})") from None


def _at(value: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise ValueError(f"an offset must be a whole number >= 0 or null, found {shown(value)}")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, found {type(value).__name__}")
    return value


def candidate_id(kind: str, question: str, quotes: tuple[Quote, ...]) -> str:
    """`gen-` and 12 hex digits of what the candidate asks and quotes: the same candidate
    generated twice has one id, so a rerun's file diffs cleanly."""
    key = "\x1f".join([kind, question, *(f"{q.doc_id}\x1e{q.text}" for q in quotes)])
    return "gen-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]
