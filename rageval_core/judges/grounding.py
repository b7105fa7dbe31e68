"""A judge's claims must come from the answer it was shown (docs/judges.md, "Grounding").

An LLM judge may return claims the answer never made ("The moon is made of cheese.",
supported), which would score any answer faithful. A claim is grounded when at least
`MIN_OVERLAP` of its content words (stemmed, stopwords dropped: `judges/text.py`) appear
in the answer or the question (a claim may name what a pronoun of the answer points to).
A claim with no content words ("It is.") has nothing to check and passes. A reply with an
ungrounded claim is a reply error: one repair request, then a judge error for the
question, never a score.
"""

from __future__ import annotations

from collections.abc import Iterable

from rageval_core.errors import shown
from rageval_core.judges.text import content_words
from rageval_core.models import Claim

MIN_OVERLAP = 0.5


def overlap(claim: str, source: frozenset[str]) -> float:
    """The share of `claim`'s content words found in `source` (1.0 when it has none)."""
    words = content_words(claim)
    return 1.0 if not words else len(words & source) / len(words)


def ungrounded(claims: Iterable[Claim], answer: str, question: str = "") -> str | None:
    """Why the first claim not grounded in `answer` (or `question`) is not; None when
    every claim is."""
    source = content_words(answer) | content_words(question)
    for i, claim in enumerate(claims):
        share = overlap(claim.text, source)
        if share < MIN_OVERLAP:
            return (
                f"claims[{i}].text {shown(claim.text, 60)} is not in the answer (only "
                f"{share:.0%} of its words are; a claim restates what the answer says)"
            )
    return None
