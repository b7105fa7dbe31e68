"""What an LLM judge says must come from what it was shown (docs/judges.md, "Grounding").

A lying or careless judge can inflate every figure without breaking the reply schema:

- **claims the answer never made** ("The moon is made of cheese.", supported) would score
  any answer faithful; a claim is grounded when at least `MIN_OVERLAP` of its content
  words (stemmed, stopwords dropped: `judges/text.py`) appear in the answer or the
  question (a claim may name what a pronoun of the answer points to);
- **reference statements the reference never made**, or a few that leave most of it out
  ("It is.", one word of a long reference), would score any retrieval as recalling it:
  each statement is held to `MIN_OVERLAP` against the reference and the question (a
  reference "1998" is stated as "The museum opened in 1998"), one without content words
  is refused when the reference has some, and together the statements must hold at least
  `MIN_COVERAGE` of the reference's content words;
- **quotes no chunk holds**: the `evidence` of a claim or statement must be found in the
  chunk its `evidence_chunk_id` names (in some retrieved chunk when it names none), with
  white space, typography and letter case folded and `...` standing for an elision.

Each function returns why the first problem is one (None when there is none); the HTTP
judge turns it into a reply error: one repair request, then a judge error for the
question, never a score. Nothing here calls a model or guesses a verdict.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from rageval_core.errors import shown
from rageval_core.judges.text import content_words
from rageval_core.metrics.words import fold_typography
from rageval_core.models import Claim, Statement

MIN_OVERLAP = 0.5
"""Share of a claim's (a statement's) content words that must be in its source."""
MIN_COVERAGE = 0.6
"""Share of the reference answer's content words the statements must hold together."""

_SPACE = re.compile(r"\s+")
_ELISION = re.compile(r"\.\.\.|\[\.\.\.\]")
_EDGE = " \t\n.,;:!?\"'()[]"


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
    statements: Sequence[Statement], reference: str, question: str = ""
) -> str | None:
    """Why the statements do not stand for `reference`: one not grounded in it (or the
    question), one saying nothing of a reference that says something, or all of them
    together holding less than `MIN_COVERAGE` of its content words. None when they do."""
    problem = _first_ungrounded((s.text for s in statements), reference, question, "statements")
    wanted = content_words(reference)
    if problem is not None or not wanted:
        return problem
    for i, s in enumerate(statements):
        if not content_words(s.text):
            return (
                f"statements[{i}].text {shown(s.text, 60)} states nothing of the reference "
                "answer; each statement restates one fact of it"
            )
    held = frozenset().union(*(content_words(s.text) for s in statements)) & wanted
    share = len(held) / len(wanted)
    if share < MIN_COVERAGE:
        missing = ", ".join(sorted(wanted - held)[:6])
        return (
            f"'statements' hold only {share:.0%} of the reference answer's words "
            f"(missing: {missing}); split the whole reference answer into statements"
        )
    return None


def _folded(text: str) -> str:
    return _SPACE.sub(" ", fold_typography(text)).casefold()


def quote_found(quote: str, text: str) -> bool:
    """Whether `quote` is in `text`, white space, typography and case folded, its edge
    punctuation ignored (a quote ends its sentence where the chunk's goes on); `...`
    elides: its pieces must appear in order. A quote with nothing to find is found."""
    hay = _folded(text)
    at = 0
    for piece in _ELISION.split(_folded(quote)):
        piece = piece.strip(_EDGE)
        if not piece:
            continue
        found = hay.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def misquoted(
    items: Iterable[tuple[str, Claim | Statement]], chunks: Mapping[str, str]
) -> str | None:
    """Why the first `evidence` quote (of `(where, claim or statement)` pairs) is not in
    the chunk it names, or in any of `chunks` (id -> text) when it names none; None when
    every quote is found."""
    for where, item in items:
        quote = item.evidence
        if not quote or not quote.strip():
            continue
        named = item.evidence_chunk_id
        texts = [chunks[named]] if named in chunks else list(chunks.values())
        if not any(quote_found(quote, t) for t in texts):
            place = f"chunk {shown(named, 60)}" if named is not None else "any retrieved chunk"
            return (
                f"{where}.evidence {shown(quote, 80)} is not in {place}; "
                "evidence quotes the chunk word for word"
            )
    return None
