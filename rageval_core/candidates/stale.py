"""Stale questions queued for review (docs/datasets.md#refreshing-gold).

`rageval dataset refresh --out DIR` writes, inside the new version's folder, a batch the
Candidates page and `rageval dataset accept` read as they read a `dataset generate`
folder (candidates/files.py): one candidate per question the refresh marked stale, its
`replaces` naming that question. Its quotes are the question's spans in order: a span
found again keeps its text, a lost one offers what stands there now (`changed`) or its
old text; each quote has its check, a lost one failed with why and the text before and
after. Failing, it always waits for a person: accepting an edited (or, once the text
stands once again, an accepted) one mends that question's gold in place
(candidates/accepting.py).
"""

from __future__ import annotations

from pathlib import Path

from rageval_core.candidates.checks import QUOTES
from rageval_core.candidates.documents import source
from rageval_core.candidates.files import write_outputs
from rageval_core.candidates.model import REJECTED, Candidate, Check, Quote, candidate_id
from rageval_core.candidates.quotes import find_quote
from rageval_core.dataset.refresh import QUOTED, LostSpan, RefreshPlan
from rageval_core.errors import shown
from rageval_core.models import Document, GoldenQuestion

REVIEW_FOLDER = "stale-review"
"""The batch's folder inside the version refresh writes."""
KIND = "stale"
GENERATOR = "refresh"


def stale_candidates(plan: RefreshPlan) -> list[Candidate]:
    """One candidate per question `plan` marks stale, in dataset order."""
    lost = {(s.question_id, s.index): s for s in plan.lost}
    stale = set(plan.stale_ids)
    new = {d.id: d for d in plan.documents}
    old = plan.source.document_map()
    out = []
    for q in plan.source.questions:
        if q.id not in stale:
            continue
        placed = [
            _quote(
                span.doc_id, old[span.doc_id].text[span.start : span.end], lost.get((q.id, i)), new
            )
            for i, span in enumerate(q.gold_spans)
        ]
        out.append(_candidate(q, placed, new))
    return out


def _quote(
    doc_id: str, before: str, gone: LostSpan | None, new: dict[str, Document]
) -> tuple[Quote, Check]:
    """A span as a quote in the new text, and its check."""
    text = before if gone is None or gone.after is None else gone.after.strip()
    doc = new.get(doc_id)
    found = find_quote(doc.text, text) if doc is not None else None
    at = found.starts[0] if found is not None and found.once else None
    quote = Quote(doc_id, text, at, None if at is None else at + len(text))
    if gone is not None:
        after = "–" if gone.after is None else shown(gone.after, QUOTED)
        detail = f"{gone.reason}; before: {shown(gone.before, QUOTED)}; after: {after}"
        return quote, Check(QUOTES, False, detail)
    if at is not None:
        return quote, Check(QUOTES, True, f"{shown(text, QUOTED)} found again, once")
    detail = f"{shown(text, QUOTED)} was found again by its offsets but stands more than once"
    return quote, Check(QUOTES, False, detail)


def _candidate(
    q: GoldenQuestion, placed: list[tuple[Quote, Check]], new: dict[str, Document]
) -> Candidate:
    quotes = tuple(quote for quote, _ in placed)
    key = candidate_id(KIND, f"{q.id}\x1f{q.question}", quotes)
    docs = dict.fromkeys(quote.doc_id for quote in quotes)
    return Candidate(
        id=f"{KIND}-{key.removeprefix('gen-')}",
        kind=KIND,
        question=q.question,
        reference_answer=q.reference_answer or "",
        quotes=quotes,
        sources=tuple(source(new[d]) for d in docs if d in new),
        generator=GENERATOR,
        checks=tuple(check for _, check in placed),
        status=REJECTED,
        replaces=q.id,
    )


def write_review(plan: RefreshPlan, version_dir: Path) -> Path | None:
    """The batch of `plan`'s stale questions written into `version_dir`/`REVIEW_FOLDER`
    with the new documents; None (nothing written) when no question is stale."""
    candidates = stale_candidates(plan)
    if not candidates:
        return None
    folder = version_dir / REVIEW_FOLDER
    report = {
        "dataset": plan.source.name,
        "from_version": plan.source.version,
        "stale": [c.replaces for c in candidates],
    }
    write_outputs(folder, plan.source.name, candidates, plan.documents, report)
    return folder
