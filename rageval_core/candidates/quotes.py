"""Where a quote stands in a document: found exactly once, or not at all, or ambiguous.

The rule is the dataset loader's (`dataset/gold_spans.py`): a quote's occurrences are
counted overlapping (`"aa"` is twice in `"aaa"`), and only a quote found exactly once
is a span. A candidate whose quote is found zero or several times is rejected here,
before the loader would refuse the dataset written from it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Found:
    """How often a quote stands in a text (0, 1, or 2 meaning "two or more") and where
    its first two occurrences start."""

    count: int
    starts: tuple[int, ...]

    @property
    def once(self) -> bool:
        return self.count == 1


def find_quote(text: str, quote: str) -> Found:
    """The occurrences of `quote` in `text`, overlapping ones counted, up to two."""
    if not quote:
        return Found(0, ())
    first = text.find(quote)
    if first < 0:
        return Found(0, ())
    again = text.find(quote, first + 1)
    return Found(1, (first,)) if again < 0 else Found(2, (first, again))
