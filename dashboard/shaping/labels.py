"""Labelling forms and the review queue: the choices, what a label says, progress."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from rageval_core.labels import QUESTION_LABELS, VERDICTS, HumanLabel, claim_key
from rageval_core.query import QueueItem

JUDGE_IS_RIGHT = "judge is right"
CLAIM_CHOICES = (JUDGE_IS_RIGHT, *VERDICTS)
QUESTION_CHOICES = QUESTION_LABELS
TOO_FEW = 30
"""Labels below which an agreement figure is flagged as too few to trust: its 95%
interval is then typically wider than the gap between "fair" and "good" agreement."""


def chosen_verdict(choice: str, judge: str | None) -> str:
    """The verdict a claim form's choice stands for ("judge is right" = the judge's)."""
    if choice == JUDGE_IS_RIGHT:
        if judge not in VERDICTS:
            raise ValueError(f"the judge gave no verdict to agree with ({judge!r})")
        return str(judge)
    return choice


RELEVANCE_CHOICES = ("relevant", "irrelevant")
"""A chunk or answer label's two values, in the words of its `judge` field."""


def label_value(lab: HumanLabel) -> str:
    """The human's answer in words: a verdict, pass/fail, relevant/irrelevant."""
    kind = lab.kind
    if kind in ("chunk", "answer"):
        relevant = lab.relevant if kind == "chunk" else lab.answer_relevant
        return RELEVANCE_CHOICES[0] if relevant else RELEVANCE_CHOICES[1]
    return str(lab.verdict if kind == "claim" else lab.question_label)


def chunk_labels(labels: Iterable[HumanLabel], chunk_id: str) -> tuple[HumanLabel, ...]:
    """The relevance labels of the retrieved chunk `chunk_id`."""
    return tuple(lab for lab in labels if lab.kind == "chunk" and lab.chunk_id == chunk_id)


def answer_labels(labels: Iterable[HumanLabel], answer: str) -> tuple[HumanLabel, ...]:
    """The relevancy labels of this answer's text, matched as claims are (`claim_key`):
    a label belongs to the words of an answer, so another run's same answer shares it."""
    key = claim_key(answer)
    return tuple(lab for lab in labels if lab.kind == "answer" and claim_key(lab.answer) == key)


def label_lines(labels: Iterable[HumanLabel]) -> list[str]:
    """One plain-text line per label, newest first: who, what, against which judge
    verdict, and the note. Plain text: the caller escapes it (`ui.safe_text`)."""
    out = []
    for lab in sorted(labels, key=lambda x: x.created_at, reverse=True):
        what = label_value(lab)
        judge = f" (judge: {lab.judge})" if lab.judge and lab.judge != what else ""
        note = f" — {lab.note}" if lab.note else ""
        lines = f"{lab.reviewer}: {what}{judge}{note} · {lab.created_at[:10]}"
        out.append(" ".join(lines.split()))  # a note's line breaks stay inside its line
    return out


def human_summary(labels: Iterable[HumanLabel]) -> str:
    """`people: supported ×2, unsupported` — the verdicts people gave, for a heading."""
    counts: dict[str, int] = {}
    for lab in labels:
        what = label_value(lab)
        counts[what] = counts.get(what, 0) + 1
    parts = [f"{v} ×{n}" if n > 1 else v for v, n in counts.items()]
    return f"people: {', '.join(parts)}" if parts else ""


def queue_rows(queue: Sequence[QueueItem], labelled: Iterable[str]) -> pd.DataFrame:
    """The review queue as a table: question, why it was picked, reviewed yet."""
    done = set(labelled)
    return pd.DataFrame(
        {
            "question_id": [item.question_id for item in queue],
            "why": [item.reason for item in queue],
            "reviewed": [item.question_id in done for item in queue],
        }
    )


def reviewed_count(queue: Sequence[str], labelled: Iterable[str]) -> int:
    """How many questions of the queue carry at least one human label."""
    done = set(labelled)
    return sum(q in done for q in queue)


def first_unreviewed(queue: Sequence[str], labelled: Iterable[str]) -> int:
    """The position of the first question of the queue nobody has labelled (0 when all
    are): where a review picks up, not at "1 of 20" with 18 of 20 done."""
    done = set(labelled)
    return next((i for i, q in enumerate(queue) if q not in done), 0)
