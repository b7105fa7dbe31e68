"""A judge's claims must come from the answer it was shown, and its statements from the
reference answer (docs/judges.md, "Grounding").

An LLM judge may return claims the answer never made ("The moon is made of cheese.",
supported), which would score any answer faithful, or reference statements the reference
never made, which would score any retrieval as recalling it. A text is grounded when at
least `MIN_OVERLAP` of its content words (stemmed, stopwords dropped: `judges/text.py`)
appear in its source or the question (a claim may name what a pronoun of the answer
points to; a reference "1998" is stated as "The museum opened in 1998"). A text with no
content words ("It is.") has nothing to check and passes. A reply with an ungrounded
claim or statement is a reply error: one repair request, then a judge error for the
question, never a score.
"""

from __future__ import annotations

from collections.abc import Iterable

from rageval_core.errors import shown
from rageval_core.judges.text import content_words
from rageval_core.models import Claim, Statement

MIN_OVERLAP = 0.5


def overlap(claim: str, source: frozenset[str]) -> float:
    """The share of `claim`'s content words found in `source` (1.0 when it has none)."""
    words = content_words(claim)
    return 1.0 if not words else len(words & source) / len(words)


def _first_ungrounded(texts: Iterable[str], source: str, question: str, where: str) -> str | None:
    words = content_words(source) | content_words(question)
    for i, text in enumerate(texts):
        share = overlap(text, words)
        if share < MIN_OVERLAP:
            return (
                f"{where}[{i}].text {shown(text, 60)} is not in the {_SOURCES[where]} "
                f"(only {share:.0%} of its words are; {_RULES[where]})"
            )
    return None


_SOURCES = {"claims": "answer", "statements": "reference answer"}
_RULES = {
    "claims": "a claim restates what the answer says",
    "statements": "a statement restates what the reference answer says",
}


def ungrounded(claims: Iterable[Claim], answer: str, question: str = "") -> str | None:
    """Why the first claim not grounded in `answer` (or `question`) is not; None when
    every claim is."""
    return _first_ungrounded((c.text for c in claims), answer, question, "claims")


def ungrounded_statements(
    statements: Iterable[Statement], reference: str, question: str = ""
) -> str | None:
    """Why the first statement not grounded in `reference` (or `question`) is not; None
    when every statement is."""
    return _first_ungrounded((s.text for s in statements), reference, question, "statements")
