"""What changed in one question's answer between two runs: a word-level diff of the answer
and the claims whose verdict changed (Compare and the Question page's history).

The diff is computed here (difflib over words), so every view shows the same one; the
tokens are the answer's own words, untrusted model text: a view must escape each one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rageval_core.models import Claim
from rageval_core.query._question import question_detail
from rageval_core.store.results import ResultsStore

Op = Literal["same", "added", "removed"]
_WORD = re.compile(r"\S+")
MAX_WORDS = 5_000  # difflib is quadratic in the worst case; longer answers are cut


@dataclass(frozen=True)
class DiffToken:
    """A run of words the two answers share, or that one of them adds or removes."""

    op: Op
    text: str


@dataclass(frozen=True)
class ClaimChange:
    """A claim whose verdict differs: `before`/`after` None when only one run made it."""

    text: str
    before: str | None
    after: str | None


@dataclass(frozen=True)
class AnswerDiff:
    """One question's answer in `base_run` against `run`."""

    question_id: str
    base_run: str
    run: str
    tokens: tuple[DiffToken, ...]
    claims: tuple[ClaimChange, ...]
    base_failure_type: str | None = None
    failure_type: str | None = None
    truncated: bool = False

    @property
    def changed(self) -> bool:
        return any(t.op != "same" for t in self.tokens) or bool(self.claims)

    def summary(self) -> str:
        """`+4 −2 words, 1 claim changed verdict` (or `same answer`)."""
        added = sum(len(t.text.split()) for t in self.tokens if t.op == "added")
        removed = sum(len(t.text.split()) for t in self.tokens if t.op == "removed")
        parts = [f"+{added} −{removed} words" if added or removed else "same words"]
        if self.claims:
            n = len(self.claims)
            parts.append(f"{n} claim{'s' if n != 1 else ''} changed verdict")
        return ", ".join(parts)


def word_diff(before: str | None, after: str | None) -> tuple[tuple[DiffToken, ...], bool]:
    """The word-level diff of two texts (whitespace-separated words; runs of equal ops
    merged), and whether either text was cut at MAX_WORDS words."""
    a, b = _WORD.findall(before or ""), _WORD.findall(after or "")
    cut = len(a) > MAX_WORDS or len(b) > MAX_WORDS
    a, b = a[:MAX_WORDS], b[:MAX_WORDS]
    out: list[DiffToken] = []

    def add(op: Op, words: Sequence[str]) -> None:
        if not words:
            return
        if out and out[-1].op == op:
            out[-1] = DiffToken(op, f"{out[-1].text} {' '.join(words)}")
        else:
            out.append(DiffToken(op, " ".join(words)))

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            add("same", a[i1:i2])
        else:  # a replacement reads best as what went, then what came
            add("removed", a[i1:i2])
            add("added", b[j1:j2])
    return tuple(out), cut


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def claim_changes(before: Sequence[Claim], after: Sequence[Claim]) -> tuple[ClaimChange, ...]:
    """Claims (matched by text, case and spacing ignored) whose verdict differs between
    the runs, in the order of `after` then the claims only `before` made."""
    old = {_key(c.text): c for c in before}
    new = {_key(c.text): c for c in after}
    out = [
        ClaimChange(c.text, old[k].verdict if k in old else None, c.verdict)
        for k, c in new.items()
        if k not in old or old[k].verdict != c.verdict
    ]
    out += [ClaimChange(c.text, c.verdict, None) for k, c in old.items() if k not in new]
    return tuple(out)


def answer_diff(store: ResultsStore, base_run: str, run: str, question_id: str) -> AnswerDiff:
    """The answer of `question_id` in `base_run` against `run` (NotFoundError when either
    run lacks the question)."""
    a = question_detail(store, base_run, question_id)
    b = question_detail(store, run, question_id)
    tokens, cut = word_diff(a.answer, b.answer)
    return AnswerDiff(
        question_id=question_id,
        base_run=base_run,
        run=run,
        tokens=tokens,
        claims=claim_changes(a.claims, b.claims),
        base_failure_type=a.failure_type,
        failure_type=b.failure_type,
        truncated=cut,
    )
