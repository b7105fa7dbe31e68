"""One gold span's text found again in a new version of its document (`rageval dataset
refresh`, docs/datasets.md#refreshing-gold).

The rule, in order:

1. the span's text stands exactly once in the new text: the span is there;
2. it stands several times and the span was given by offsets (the old text may have
   repeated it too): when the new text holds it as many times as the old one, the copy
   of the same rank (the k-th of n: edits elsewhere moved every copy together); else the
   copy whose surroundings (`CONTEXT` characters each side) agree with the old ones the
   longest, when exactly one agrees best — near the old place, by its neighbours;
3. otherwise the span is lost: `ambiguous` (a quote found several times, or copies no
   neighbour tells apart), `changed` (its neighbours still stand, with other text between
   them: that text is shown) or `vanished`.

Never a guess between equals: an undecided span is lost, for a reviewer to mend.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

CONTEXT = 64
"""How many characters each side of a span tell two copies of its text apart, and find
where a changed span stood."""
_NEAR = 200
"""A changed span's new text is at most 4 times the old length plus this many characters
(farther apart, its neighbours are taken for other text: the span vanished)."""

Loss = Literal["vanished", "changed", "ambiguous"]


@dataclass(frozen=True)
class Found:
    """Where the span's text stands in the new document."""

    start: int
    end: int


@dataclass(frozen=True)
class Lost:
    """Why the span was not re-anchored, and what stands where it stood (`changed`) or
    where its copies stand (`ambiguous`)."""

    why: Loss
    after: str | None = None
    at: tuple[int, ...] = ()


def occurrences(text: str, part: str) -> list[int]:
    """Every start of `part` in `text`, overlapping ones too (`aa` stands twice in `aaa`)."""
    found, at = [], text.find(part)
    while at >= 0:
        found.append(at)
        at = text.find(part, at + 1)
    return found


def relocate(old: str, start: int, end: int, new: str, *, by_offsets: bool) -> Found | Lost:
    """`old[start:end]` found in `new` by the rule above."""
    part = old[start:end]
    places = occurrences(new, part)
    if len(places) == 1:
        return Found(places[0], places[0] + len(part))
    if not places:
        return _lost(old, start, end, new)
    if by_offsets:
        before = occurrences(old, part)
        if len(before) == len(places):
            at = places[before.index(start)]
            return Found(at, at + len(part))
        scores = [_agreement(old, start, end, new, p) for p in places]
        best = max(scores)
        if scores.count(best) == 1:
            at = places[scores.index(best)]
            return Found(at, at + len(part))
    return Lost("ambiguous", at=tuple(places))


def _agreement(old: str, start: int, end: int, new: str, at: int) -> int:
    """How many characters around the copy at `at` agree with those around the old span
    (up to `CONTEXT` each side)."""
    left = os.path.commonprefix(
        [old[max(0, start - CONTEXT) : start][::-1], new[:at][::-1][:CONTEXT]]
    )
    stop = at + end - start
    right = os.path.commonprefix([old[end : end + CONTEXT], new[stop : stop + CONTEXT]])
    return len(left) + len(right)


def _lost(old: str, start: int, end: int, new: str) -> Lost:
    """`changed` when the span's neighbours still stand (each once, in order, near), with
    the text now between them; else `vanished`. A deletion leaves only white space
    between them: vanished too."""
    before, after = old[max(0, start - CONTEXT) : start], old[end : end + CONTEXT]
    if before and len(occurrences(new, before)) != 1:
        return Lost("vanished")
    left = new.find(before) + len(before) if before else 0
    right = new.find(after, left) if after else len(new)
    if right < 0 or right - left > 4 * (end - start) + _NEAR or not new[left:right].strip():
        return Lost("vanished")
    return Lost("changed", after=new[left:right])
