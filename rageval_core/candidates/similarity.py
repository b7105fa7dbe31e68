"""Near-duplicate questions, found without comparing every pair (docs/generate.md).

Similarity: the Jaccard index of two questions' content words (`judges/text.terms`:
lower-cased, typography folded, stopwords dropped, plurals stripped). Two questions are
near-duplicates when it is at least `NEAR` (4/5); a question with no content word is
nobody's near-duplicate (the specificity check rejects it). Exact duplicates — the same
words in the same order, case and spacing aside — are found by a hash.

Sub-quadratic: an inverted index over each set's *prefix* — its rarest
`|x| - ceil(t·|x|) + 1` words in one global order (rarest first) — finds every pair at
or above the threshold `t` (two sets with Jaccard ≥ t must share a word of their
prefixes: the prefix filter of Chaudhuri et al. 2006 / Bayardo et al. 2007's All-Pairs),
and a size filter (|y| ≥ t·|x|) drops most of the rest; only the pairs that survive both
are compared. Exact: it finds the same pairs as comparing all of them (the property test
checks it against that), with far fewer comparisons.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from rageval_core.judges.text import terms
from rageval_core.metrics.words import fold_typography

NEAR = Fraction(4, 5)
"""Questions whose content words have a Jaccard index of at least this are near-duplicates."""

_SPACE = re.compile(r"\s+")


def words(question: str) -> frozenset[str]:
    """The content words similarity is measured on."""
    return terms(question).content


def exact_key(question: str) -> str:
    """Equal for questions that differ only in case, spacing and typography."""
    return _SPACE.sub(" ", fold_typography(question).strip().lower()).rstrip(" ?.!")


def similar(a: frozenset[str], b: frozenset[str], threshold: Fraction = NEAR) -> bool:
    """Jaccard(a, b) ≥ threshold, in integers (no rounding at the boundary); empty sets
    are similar to nothing."""
    if not a or not b:
        return False
    inter = len(a & b)
    return inter * threshold.denominator >= threshold.numerator * (len(a) + len(b) - inter)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _prefix_size(n: int, threshold: Fraction) -> int:
    """|x| - ceil(t·|x|) + 1, in integers."""
    return n - (-(-threshold.numerator * n // threshold.denominator)) + 1


@dataclass
class NearIndex:
    """Sets added one by one; `probe` names the added sets a new one is near.

    `order` ranks words rarest first; words it does not rank (not seen when it was made)
    come first of all, which keeps the filter exact (any fixed order is), only slower.
    `compared` counts the Jaccard computations made, for the tests and the bench.
    """

    order: dict[str, int]
    threshold: Fraction = NEAR
    compared: int = 0
    _postings: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    _sets: list[frozenset[str]] = field(default_factory=list)

    @classmethod
    def for_sets(cls, sets: Iterable[frozenset[str]], threshold: Fraction = NEAR) -> NearIndex:
        """An index whose word order is by how many of `sets` hold each word."""
        df = Counter(w for s in sets for w in s)
        ranked = sorted(df, key=lambda w: (df[w], w))
        return cls({w: i for i, w in enumerate(ranked)}, threshold)

    def _prefix(self, s: frozenset[str]) -> list[str]:
        ranked = sorted(s, key=lambda w: (self.order.get(w, -1), w))
        return ranked[: _prefix_size(len(s), self.threshold)]

    def probe(self, s: frozenset[str]) -> list[int]:
        """The added sets near `s` (by the order they were added)."""
        if not s:
            return []
        seen: set[int] = set()
        near = []
        t = self.threshold
        for w in self._prefix(s):
            for i in self._postings.get(w, ()):
                if i in seen:
                    continue
                seen.add(i)
                other = self._sets[i]
                # size filter: Jaccard ≥ t needs t·|big| ≤ |small|
                small, big = sorted((len(s), len(other)))
                if small * t.denominator < t.numerator * big:
                    continue
                self.compared += 1
                if similar(s, other, t):
                    near.append(i)
        return sorted(near)

    def add(self, s: frozenset[str]) -> int:
        """Index `s`; its number in `probe`'s answers."""
        self._sets.append(s)
        n = len(self._sets) - 1
        if s:
            for w in self._prefix(s):
                self._postings[w].append(n)
        return n
