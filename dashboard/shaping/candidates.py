"""The Candidates page's queue (docs/dashboard.md): progress, where a review picks up,
each candidate's checks and decision in words, its quotes placed in their documents, and
an edit's quotes verified before it is saved. Plain data in and out: no Streamlit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rageval_core.candidates.model import Candidate, Quote
from rageval_core.candidates.quotes import find_quote

DONE_WORDS = {"accept": "accepted", "edit": "edited and accepted", "reject": "rejected"}


def decided_count(ids: Sequence[str], decided: Mapping[str, Any]) -> int:
    """How many candidates of the queue carry a decision."""
    return sum(i in decided for i in ids)


def first_undecided(ids: Sequence[str], decided: Mapping[str, Any], after: int = -1) -> int:
    """The position of the first candidate after `after` nobody has decided, else of the
    first one at all, else `after` itself (or 0): where a review picks up."""
    for i in [*range(after + 1, len(ids)), *range(0, max(after, 0))]:
        if ids[i] not in decided:
            return i
    return max(after, 0)


def check_rows(candidate: Candidate) -> pd.DataFrame:
    """Each automatic check: its name, passed or failed, and why (plain text)."""
    return pd.DataFrame(
        {
            "check": [c.name for c in candidate.checks],
            "result": ["passed" if c.passed else "failed" for c in candidate.checks],
            "detail": [c.detail for c in candidate.checks],
        }
    )


def decision_line(decision: Any) -> str:
    """`Ann: rejected · 2026-12-05 — too vague`: who decided what, when, and the note.
    Plain text on one line (the caller escapes it)."""
    note = getattr(decision, "note", "") or ""
    line = f"{decision.reviewer}: {DONE_WORDS.get(decision.action, decision.action)}"
    line += f" · {decision.at[:10]}" + (f" — {note}" if note else "")
    return " ".join(line.split())


def candidate_rows(candidates: Sequence[Candidate], decided: Mapping[str, Any]) -> pd.DataFrame:
    """The queue as a table: id, kind, the checks' status, the decision, the question."""
    return pd.DataFrame(
        {
            "candidate": [c.id for c in candidates],
            "kind": [c.kind for c in candidates],
            "checks": [c.status for c in candidates],
            "decision": [
                DONE_WORDS.get(decided[c.id].action, "") if c.id in decided else ""
                for c in candidates
            ],
            "question": [c.question for c in candidates],
        }
    )


def quote_range(quote: Quote, text: str | None) -> tuple[int, int] | None:
    """Where `quote` stands in its document's `text`: its recorded offsets when they still
    hold its text, else its one occurrence; None when it stands nowhere or twice."""
    if text is None:
        return None
    if quote.start is not None and quote.end is not None:
        if text[quote.start : quote.end] == quote.text:
            return quote.start, quote.end
    found = find_quote(text, quote.text)
    return (found.starts[0], found.starts[0] + len(quote.text)) if found.once else None


def edited_quotes(
    originals: Sequence[Quote], typed: Sequence[str], documents: Mapping[str, str]
) -> tuple[tuple[Quote, ...], list[str]]:
    """The quotes of an edit, each typed text in the original quote's document, located;
    and the problems (a quote empty, missing or standing twice) that refuse the edit. A
    quote must stand exactly once: the dataset loader's rule for gold quotes."""
    out: list[Quote] = []
    problems: list[str] = []
    for n, (old, raw) in enumerate(zip(originals, typed, strict=True), start=1):
        text = raw.strip()
        doc = documents.get(old.doc_id)
        found = find_quote(doc, text) if doc is not None and text else None
        if doc is None:
            problems.append(f"quote {n}: document {old.doc_id} is not in the batch's documents")
        elif not text:
            problems.append(f"quote {n}: empty")
        elif found is None or found.count == 0:
            problems.append(f"quote {n}: not found in {old.doc_id}")
        elif not found.once:
            problems.append(f"quote {n}: stands more than once in {old.doc_id}; quote more of it")
        else:
            start = found.starts[0]
            out.append(Quote(old.doc_id, text, start, start + len(text)))
    return tuple(out), problems


def version_note(accepted: Any) -> str:
    """What writing a dataset version did (`accepting.Accepted`), in plain words on one
    line (the caller escapes it)."""
    if accepted.path is None:
        if accepted.already:
            return (
                f"Nothing new: the {len(accepted.already)} accepted candidate(s) are in it already."
            )
        return "Nothing written: no candidate of this batch is accepted yet."
    ids = [qid for _, qid in accepted.added]
    named = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    out = f"Wrote version {accepted.version} to {accepted.path}: "
    out += f"{len(ids)} question(s) added ({named})"
    if accepted.documents:
        out += f", {len(accepted.documents)} document(s) added"
    if accepted.already:
        out += f"; {len(accepted.already)} accepted candidate(s) were in it already"
    return out + "."


def version_commands(path: str) -> str:
    """The commands that take a written version on, as a user types them."""
    return f"rageval validate {path}\nrageval run CONFIG.yaml   # with  dataset: {path}"
