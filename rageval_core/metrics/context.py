"""Context relevance and precision read by characters: pure functions (docs/metrics.md).

The judge's per-chunk verdicts give `context_relevance` (relevant chunks / chunks) and
`context_precision` (average precision over the ranks): both count chunks, so the same
retrieved text cut into four pieces moves them though not a character changed. The
character-weighted readings here weigh each chunk by its length, so they depend only on
the retrieved characters in rank order and which of them lie in a relevant chunk:

    context_relevance_chars = Σ_relevant |c| / Σ |c|
    context_precision_chars = mean, over the characters of relevant chunks in rank order,
                              of (relevant characters so far / characters so far)

The second is average precision with the character as its unit: cutting a chunk into
contiguous pieces of the same verdict leaves every character's position, and so both
figures, unchanged. Each is None when no chunk was judged or the judged chunks hold no
characters (texts unknown); precision is 0.0 when none is relevant. No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rageval_core.models import ChunkVerdict

_EXACT_BELOW = 1024
_EULER_GAMMA = 0.5772156649015329


def _harmonic(n: int) -> float:
    """H(n) = 1 + 1/2 + … + 1/n: summed below 1,024, else its asymptotic series (whose
    next term is below 1e-20 there), so a chunk of two million characters costs no loop."""
    if n < _EXACT_BELOW:
        return math.fsum(1 / i for i in range(1, n + 1))
    inv = 1 / (n * n)
    return math.log(n) + _EULER_GAMMA + 1 / (2 * n) - inv / 12 + inv * inv / 120


def context_relevance_chars(lengths: Sequence[int], relevant: Sequence[bool]) -> float | None:
    """Share of the judged chunks' characters that lie in relevant chunks."""
    total = sum(lengths)
    if not total:
        return None
    return sum(n for n, r in zip(lengths, relevant, strict=True) if r) / total


def context_precision_chars(lengths: Sequence[int], relevant: Sequence[bool]) -> float | None:
    """Average precision over characters, chunks in rank order: a relevant chunk of L
    characters after C characters, R of them relevant, adds Σ_{j=1..L} (R+j)/(C+j)
    = L − (C−R)·(H(C+L) − H(C)); the sum is divided by the relevant characters."""
    if not sum(lengths):
        return None
    seen = hits = 0
    total = 0.0
    for n, r in zip(lengths, relevant, strict=True):
        if r and n:
            total += n - (seen - hits) * (_harmonic(seen + n) - _harmonic(seen))
            hits += n
        seen += n
    return total / hits if hits else 0.0


def char_weighted(
    verdicts: Sequence[ChunkVerdict] | None, texts: Sequence[str] | None
) -> dict[str, float | None]:
    """The row's `context_relevance_chars` and `context_precision_chars`: each verdict
    weighed by the text of the chunk at its rank (1-based into `texts`). NULL when there
    are no verdicts or texts, or a verdict names a rank with no chunk."""
    none: dict[str, float | None] = dict.fromkeys(CHAR_COLUMNS)
    if not verdicts or texts is None or any(not 1 <= v.rank <= len(texts) for v in verdicts):
        return none
    ordered = sorted(verdicts, key=lambda v: v.rank)
    lengths = [len(texts[v.rank - 1]) for v in ordered]
    relevant = [v.relevant for v in ordered]
    return {
        "context_relevance_chars": context_relevance_chars(lengths, relevant),
        "context_precision_chars": context_precision_chars(lengths, relevant),
    }


CHAR_COLUMNS: tuple[str, ...] = ("context_relevance_chars", "context_precision_chars")
"""The row's columns of the character-weighted readings, in schema order."""
