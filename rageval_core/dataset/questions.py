"""The questions of a dataset file: fields, ids, gold chunk ids and the answerability rule."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rageval_core.dataset.files import Items, Located
from rageval_core.dataset.records import Record, subject_id, type_name
from rageval_core.errors import shown
from rageval_core.models import QUESTION_ID_RE, Answerability, GoldenQuestion

QUESTION_FIELDS = (
    "id",
    "question",
    "reference_answer",
    "gold_chunk_ids",
    "gold_spans",
    "answerable",
    "tags",
    "stale",
    "stale_reason",
)
QUESTION_ID_RULE = "1-128 of A-Z a-z 0-9 _ . : @ # + -, not starting with . : @ # + -"


def answerability(
    *,
    gold_chunk_ids: Sequence[str] | None,
    gold_spans: Sequence[Any] | None,
    answerable: bool | None,
    reference_answer: str | None,
) -> tuple[Answerability, str | None]:
    """The one answerability rule of a question (docs/metrics.md), and the problem, if any.

    Each argument is None when its key is absent from the question, so "no gold key" and
    "an explicitly empty gold list" stay apart:

    - gold given (chunk ids or spans)  → `answerable` (its retrieval is scored);
    - `answerable: false`, or an explicitly empty `gold_chunk_ids: []` / `gold_spans: []`
      → `unanswerable` (the pipeline should decline) — but an empty gold list beside a
      reference answer is a problem: which was meant is not ours to guess;
    - no gold key at all → no retrieval gold (retrieval figures NULL): `answerable` with a
      reference answer, `reference_free` with neither.

    Returns `(kind, problem)`; `problem` is None when the fields agree.
    """
    given = bool(gold_chunk_ids) or bool(gold_spans)
    empty_list = not given and (gold_chunk_ids is not None or gold_spans is not None)
    has_reference = bool(reference_answer and reference_answer.strip())
    if given:
        if answerable is False:
            return "answerable", "'answerable: false' but gold is given: remove one of them"
        return "answerable", None
    if answerable is False:
        return "unanswerable", None
    if empty_list:
        if has_reference:
            return "unanswerable", (
                "an empty gold list beside a reference answer: for a question the pipeline "
                "should decline, remove the reference answer (or write 'answerable: false'); "
                "for an answerable one, give its gold, or drop the empty list (no retrieval gold)"
            )
        if answerable is True:
            return "unanswerable", "'answerable: true' but the gold list is empty"
        return "unanswerable", None
    return ("answerable" if has_reference else "reference_free"), None


_BOOLEANS = {"true": True, "false": False}


def _flag(rec: Record, key: str) -> bool | None:
    """A boolean field (`true`/`false`; YAML scalars arrive as text here), None if absent."""
    raw = rec.data.get(key)
    if raw is None or isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in _BOOLEANS:
        return _BOOLEANS[raw.strip().lower()]
    rec.problem(f"'{key}' must be true or false, not {shown(raw)}", key)
    return None


def _question(
    raw: Any, index: int, file: Path, line: int, problems: list[str]
) -> GoldenQuestion | None:
    if not isinstance(raw, Located):
        problems.append(
            f"{file}:{line}: questions[{index}]: expected a mapping, not {type_name(raw)}"
        )
        return None
    subject = subject_id(raw, f"questions[{index}]", "question", QUESTION_ID_RE)
    rec = Record(raw, file, subject, problems)
    for key in raw:
        if key not in QUESTION_FIELDS:
            rec.problem(
                f"unknown field {shown(key)} (expected one of {', '.join(QUESTION_FIELDS)})", key
            )
    qid, text = rec.text("id"), rec.text("question")
    if qid is not None and not QUESTION_ID_RE.fullmatch(qid):
        rec.problem(f"id {shown(qid)} is not a valid question id ({QUESTION_ID_RULE})", "id")
        qid = None
    reference = rec.text("reference_answer", required=False)
    gold = rec.strings("gold_chunk_ids")
    spans = raw.get("gold_spans")
    if "gold_spans" in raw and not isinstance(spans, list):
        rec.problem(f"'gold_spans' must be a list, not {type_name(spans)}", "gold_spans")
        spans = None
    tags = rec.strings("tags")
    for gid in dict.fromkeys(g for g in gold if gold.count(g) > 1):
        rec.problem(f"gold chunk {shown(gid)} is listed twice", "gold_chunk_ids")
    kind, problem = answerability(
        gold_chunk_ids=gold if "gold_chunk_ids" in raw else None,
        gold_spans=spans if "gold_spans" in raw else None,
        answerable=_flag(rec, "answerable"),
        reference_answer=reference,
    )
    if problem:
        rec.problem(problem, "gold_chunk_ids" if "gold_chunk_ids" in raw else "gold_spans")
    stale = _stale(rec)
    if qid is None or text is None:
        return None
    return GoldenQuestion(
        id=qid,
        question=text,
        reference_answer=reference,
        gold_chunk_ids=tuple(dict.fromkeys(gold)),
        tags=tuple(dict.fromkeys(tags)),
        answerability=kind,
        stale=stale,
    )


def _stale(rec: Record) -> str | None:
    """The reason a question is stale (`stale: true`, `stale_reason:` optional), or None."""
    flag, reason = _flag(rec, "stale"), rec.text("stale_reason", required=False)
    if reason is not None and not flag:
        rec.problem("'stale_reason' is given but not 'stale: true'", "stale_reason")
    if not flag:
        return None
    return reason if reason and reason.strip() else "marked stale"


def read_questions(
    raw: Any, top: Located, file: Path, problems: list[str]
) -> list[tuple[GoldenQuestion, Located]]:
    line = top.line_of("questions")
    if not isinstance(raw, Items):
        problems.append(f"{file}:{line}: 'questions' must be a list, not {type_name(raw)}")
        return []
    if not raw:
        problems.append(f"{file}:{line}: 'questions' is empty")
    found: list[tuple[GoldenQuestion, Located]] = []
    first_line: dict[str, int] = {}
    for i, (item, item_line) in enumerate(zip(raw, raw.lines, strict=True)):
        q = _question(item, i, file, item_line, problems)
        if q is None:
            continue
        if q.id in first_line:
            problems.append(
                f"{file}:{item.line_of('id')}: question {q.id}: "
                f"duplicate question id (first at line {first_line[q.id]})"
            )
            continue
        first_line[q.id] = item.line_of("id")
        found.append((q, item))
    return found


def gold_line(raw: Located, gid: str) -> int:
    """The line of one gold id: its own line in a block list, else the field's line."""
    items = raw.get("gold_chunk_ids")
    default = raw.line_of("gold_chunk_ids")
    return items.line_of(gid, default) if isinstance(items, Items) else default
