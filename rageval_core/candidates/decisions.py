"""Reviewers' decisions on generated candidates (docs/generate.md, "Reviewing"): accept,
edit (an edit is an acceptance of the edited candidate) or reject, kept in the labels
location beside the human labels and under the same rules (labels/store.py).

Every save is one new small file, never a rewrite:

    <labels location>/<batch>/candidates/<reviewer>/<utc>-<random>.decisions.jsonl

so two reviewers saving at once both keep theirs, and an `s3://` prefix works as a folder
does. The batch is the name of a candidates folder (`batch_name`); every line carries its
batch, the folders are only a convenience. Reading takes every file of the batch and the
newest decision per candidate wins, whoever made it (a tie in time goes to the later file
and line). A bad line is a problem naming its file and line, never fatal. A reviewer name
is required and checked as a label's is; every text is bounded and notes are scrubbed of
secrets (`redact.scrub_value`) before they are written. The label store skips these files
(`labels.store.OTHER_FILES`).
"""

from __future__ import annotations

import json
import os
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rageval_core.candidates.model import Candidate, Quote
from rageval_core.errors import ConfigError
from rageval_core.labels.model import check_reviewer, check_utf8, parse_time, utc_stamp
from rageval_core.labels.store import (
    OTHER_FILES,
    JsonlLocation,
    new_file_name,
    parse_lines,
    safe_name,
)
from rageval_core.redact import scrub_value

ACCEPT, EDIT, REJECT = "accept", "edit", "reject"
ACTIONS = (ACCEPT, EDIT, REJECT)
FOLDER = "candidates"
MAX_ID = 200
MAX_TEXT = 20_000
"""Characters of an edited question, reference or quote: a generated one is a sentence or
a paragraph; more is someone pasting a document."""
MAX_NOTE = 2_000
MAX_QUOTES = 20


def _text(value: object, name: str, limit: int, *, one_line: bool = False) -> str:
    """`value` if it is non-empty text within `limit` characters (one plain line when
    `one_line`), writable as UTF-8; else a ConfigError naming `name`."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name} must be non-empty text")
    if len(value) > limit:
        raise ConfigError(f"{name} is longer than {limit} characters")
    if one_line and any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in value):
        raise ConfigError(f"{name} contains control characters")
    check_utf8(value, name)
    return value


@dataclass(frozen=True)
class Decision:
    """One reviewer's decision on one candidate. For an `edit`, `question`, `reference`
    and `quotes` are what replaces the candidate's (None: kept as generated); a quote is
    given by its document and text, located when accepted (candidates/accepting.py).
    Accept and reject carry none of them. Building one validates it."""

    candidate_id: str
    action: str
    reviewer: str
    at: str = field(default_factory=utc_stamp)
    question: str | None = None
    reference: str | None = None
    quotes: tuple[Quote, ...] | None = None
    note: str = ""

    def __post_init__(self) -> None:
        _text(self.candidate_id, "candidate_id", MAX_ID, one_line=True)
        if self.action not in ACTIONS:
            raise ConfigError(f"action must be one of {', '.join(ACTIONS)}")
        object.__setattr__(self, "reviewer", check_reviewer(self.reviewer))
        parse_time(self.at)
        if not isinstance(self.note, str) or len(self.note) > MAX_NOTE:
            raise ConfigError(f"note must be text of at most {MAX_NOTE} characters")
        check_utf8(self.note, "note")
        edits = (self.question, self.reference, self.quotes)
        if self.action != EDIT:
            if any(e is not None for e in edits):
                raise ConfigError(f"an {self.action} carries no question, reference or quotes")
            return
        if all(e is None for e in edits):
            raise ConfigError("an edit changes the question, the reference or the quotes")
        if self.question is not None:
            _text(self.question, "question", MAX_TEXT)
        if self.reference is not None:
            _text(self.reference, "reference", MAX_TEXT)
        if self.quotes is not None:
            self._check_quotes()

    def _check_quotes(self) -> None:
        quotes = tuple(self.quotes or ())
        if not quotes or len(quotes) > MAX_QUOTES:
            raise ConfigError(f"an edit gives 1 to {MAX_QUOTES} quotes")
        for q in quotes:
            if not isinstance(q, Quote):
                raise ConfigError("a quote must be a Quote(doc_id, text)")
            _text(q.doc_id, "a quote's doc_id", MAX_ID, one_line=True)
            _text(q.text, "a quote's text", MAX_TEXT)
        # where a quote stands is found when accepted, never taken from the editor
        object.__setattr__(self, "quotes", tuple(Quote(q.doc_id, q.text) for q in quotes))

    @property
    def accepts(self) -> bool:
        """True for accept and edit: the candidate (edited) goes into the dataset."""
        return self.action != REJECT

    def applied(self, candidate: Candidate) -> Candidate:
        """`candidate` as this decision leaves it: edited where an edit says so."""
        if self.action != EDIT:
            return candidate
        return replace(
            candidate,
            question=candidate.question if self.question is None else self.question,
            reference_answer=(
                candidate.reference_answer if self.reference is None else self.reference
            ),
            quotes=candidate.quotes if self.quotes is None else self.quotes,
        )

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "candidate_id": self.candidate_id,
            "action": self.action,
            "reviewer": self.reviewer,
            "at": self.at,
            "note": self.note,
        }
        if self.action == EDIT:
            d["question"] = self.question
            d["reference"] = self.reference
            d["quotes"] = (
                None
                if self.quotes is None
                else [{"doc_id": q.doc_id, "text": q.text} for q in self.quotes]
            )
        return d

    @classmethod
    def from_dict(cls, d: object) -> Decision:
        """A decision from a parsed JSON line; ConfigError naming what is wrong. Unknown
        keys are ignored (a newer rageval may add some)."""
        if not isinstance(d, dict):
            raise ConfigError("a decision line must be a JSON object")
        missing = [k for k in ("candidate_id", "action", "reviewer", "at") if k not in d]
        if missing:
            raise ConfigError(f"missing field {missing[0]}")
        quotes = d.get("quotes")
        if quotes is not None:
            if not isinstance(quotes, list) or not all(isinstance(q, dict) for q in quotes):
                raise ConfigError("quotes must be a list of {doc_id, text}")
            quotes = tuple(Quote(q.get("doc_id"), q.get("text")) for q in quotes)
        return cls(
            candidate_id=d["candidate_id"],
            action=d["action"],
            reviewer=d["reviewer"],
            at=d["at"],
            question=d.get("question"),
            reference=d.get("reference"),
            quotes=quotes,
            note="" if d.get("note") is None else d["note"],
        )


def batch_name(candidates_dir: str | os.PathLike[str]) -> str:
    """The batch a candidates folder's decisions are kept under: the folder's name (the
    dashboard and `rageval dataset accept` agree on it). Two folders of one name share
    decisions; a candidate's id is a hash of what it asks and quotes, so a shared id is
    the same candidate."""
    return Path(candidates_dir).resolve().name or "candidates"


class DecisionStore:
    """The decisions on one batch of candidates in a labels location (module docstring)."""

    def __init__(self, location: str, batch: str, *, read_only: bool = False):
        self.batch = _text(batch, "batch name", MAX_ID, one_line=True)
        self._location = JsonlLocation(location, read_only=read_only)
        self._folder = f"{safe_name(self.batch)}/{FOLDER}"
        self._parsed: dict[str, tuple[int, list[tuple[Decision, tuple]], list[str]]] = {}
        self._problems: tuple[str, ...] | None = None

    @property
    def location(self) -> str:
        return self._location.location

    def writable(self) -> tuple[bool, str]:
        """(True, "") when saves can land here, else (False, why)."""
        return self._location.writable()

    def save(self, decision: Decision) -> str:
        """Write `decision` as one new file; return its path."""
        ok, why = self.writable()
        if not ok:
            raise ConfigError(f"decisions cannot be saved: {why}")
        clean = replace(decision, note=scrub_value(decision.note))
        line = {"batch": self.batch, **clean.to_dict()}
        data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        rel = f"{self._folder}/{safe_name(decision.reviewer)}/{new_file_name(OTHER_FILES)}"
        return self._location.write_file(rel, data)

    def latest(self) -> dict[str, Decision]:
        """candidate id -> its newest decision (module docstring); `problems` says what
        could not be read."""
        files = self._location.files(self._folder, lambda p: p.endswith(OTHER_FILES))
        todo = [p for p, size in files.items() if self._parsed.get(p, (-1,))[0] != size]
        for p, data in (self._location.read(todo) if todo else {}).items():
            self._parsed[p] = (files[p], *self._parse(p, data))
        best: dict[str, tuple[Decision, tuple]] = {}
        problems: list[str] = []
        for p in sorted(files):
            _, found, bad = self._parsed[p]
            problems += bad
            for decision, order in found:
                held = best.get(decision.candidate_id)
                if held is None or order > held[1]:
                    best[decision.candidate_id] = (decision, order)
        self._problems = tuple(problems)
        return {cid: held[0] for cid, held in sorted(best.items())}

    @property
    def problems(self) -> tuple[str, ...]:
        """The lines and files the last `latest()` could not read ("file:line: why")."""
        if self._problems is None:
            self.latest()
        return self._problems or ()

    def _parse(
        self, path: str, data: bytes | Exception
    ) -> tuple[list[tuple[Decision, tuple]], list[str]]:
        where = self._location.where(path)
        if isinstance(data, Exception):
            return [], [f"{where}: unreadable ({data})"]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return [], [f"{where}: not UTF-8 ({exc.reason})"]
        found, problems = parse_lines(text, where, self._line)
        name = path.rsplit("/", 1)[-1]
        kept = [(d, (parse_time(d.at), name, n)) for (batch, d), n in found if batch == self.batch]
        return kept, problems

    @staticmethod
    def _line(d: object) -> tuple[object, Decision]:
        decision = Decision.from_dict(d)  # raises on a non-object first
        return d.get("batch"), decision  # type: ignore[union-attr]
