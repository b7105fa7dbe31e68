"""Retrieved chunks joined into passages: chunks adjacent in their document read as one text.

A pipeline that cuts a window into four pieces retrieved the same text as one that returns
it whole; a sentence cut by a chunk boundary must still be found. So the offline judge
reads passages, not chunks:

- placed chunks (`doc_id`, `start`, `end`: the pipeline's, or the dataset's placement the
  runner hands the judge) in one document are sorted by `start`; one whose start lies at
  most `MAX_GAP` characters after the previous one's end (the white space a splitter drops
  between pieces) is joined to it — with one space when there is a gap — and one that
  overlaps it by text is joined without repeating the overlap;
- chunks without a place are joined to a neighbour whose text overlaps theirs: the last
  characters of one (at least `MIN_OVERLAP`) are the first of the other, as a splitter's
  `chunk_overlap` leaves them. Contiguous pieces with no overlap and no place cannot be told
  from unrelated chunks and stay apart.

Each passage keeps where each chunk's text lies in it, so evidence names every chunk it
spans (`Passage.spanned`). Pure; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rageval_core.judges.text import sentence_terms
from rageval_core.models import RetrievedChunk

MAX_GAP = 2
"""Characters between two placed chunks that still read as adjacent (a dropped "\\n\\n")."""
MIN_OVERLAP = 16
"""Shortest shared text that joins two unplaced chunks: shorter ones meet by chance."""


@dataclass(frozen=True)
class Passage:
    """Text joined from chunks in document order; `pieces` is (chunk id, start, end) of
    each chunk's own text in `text`, and `first_rank` the best rank among them (passages
    are read in that order, so a whole chunk's evidence is found as before)."""

    text: str
    pieces: tuple[tuple[str, int, int], ...]
    first_rank: int

    def spanned(self, start: int, end: int) -> tuple[str, ...]:
        """The ids of the chunks whose text overlaps `text[start:end]`, in document order."""
        ids = [cid for cid, a, b in self.pieces if a < end and start < b]
        return tuple(dict.fromkeys(ids))


def overlap(left: str, right: str) -> int:
    """The length of the longest end of `left` that starts `right` (at least `MIN_OVERLAP`
    characters, and shorter than both), else 0."""
    if min(len(left), len(right)) <= MIN_OVERLAP:
        return 0
    head = right[:MIN_OVERLAP]
    at = left.find(head, max(1, len(left) - len(right) + 1))
    while at != -1:
        if right.startswith(left[at:]):
            return len(left) - at
        at = left.find(head, at + 1)
    return 0


class _Builder:
    """One passage being joined, chunk by chunk."""

    def __init__(self, rank: int, chunk: RetrievedChunk):
        self.text = chunk.text
        self.pieces = [(chunk.id, 0, len(chunk.text))]
        self.rank = rank
        self.end = chunk.end

    def join(self, rank: int, chunk: RetrievedChunk, shared: int, sep: str = "") -> None:
        start = len(self.text) + len(sep) - shared
        self.text += sep + chunk.text[shared:]
        self.pieces.append((chunk.id, start, start + len(chunk.text)))
        self.rank = min(self.rank, rank)
        if chunk.end is not None:
            self.end = max(self.end or chunk.end, chunk.end)

    def done(self) -> Passage:
        return Passage(self.text, tuple(self.pieces), self.rank)


def _placed(c: RetrievedChunk) -> bool:
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (c.start, c.end))
    return c.doc_id is not None and ints and c.start <= c.end  # type: ignore[operator]


def _by_place(ranked: list[tuple[int, RetrievedChunk]]) -> list[Passage]:
    """Placed chunks joined by their places, one document at a time."""
    out: list[Passage] = []
    ordered = sorted(ranked, key=lambda rc: (rc[1].doc_id, rc[1].start, rc[1].end, rc[0]))
    current: _Builder | None = None
    doc = None
    for rank, c in ordered:
        if current is not None and c.doc_id == doc and c.start <= current.end + MAX_GAP:  # type: ignore[operator]
            gap = c.start - current.end  # type: ignore[operator]
            if gap > 0:
                current.join(rank, c, 0, " ")
                continue
            if c.end <= current.end and c.text in current.text:  # type: ignore[operator]
                current.rank = min(current.rank, rank)  # a repeat or a piece inside it
                continue
            shared = overlap(current.text, c.text) if gap < 0 else 0
            if gap == 0 or shared:
                current.join(rank, c, shared)
                continue
        if current is not None:
            out.append(current.done())
        current, doc = _Builder(rank, c), c.doc_id
    if current is not None:
        out.append(current.done())
    return out


def _by_text(ranked: list[tuple[int, RetrievedChunk]]) -> list[Passage]:
    """Unplaced chunks chained through text overlaps: each takes the one successor it
    overlaps most (first in rank on a tie) that no other chunk has taken."""
    after: dict[int, tuple[int, int]] = {}
    taken: set[int] = set()
    for i, (_, a) in enumerate(ranked):
        best = (0, -1)
        for j, (_, b) in enumerate(ranked):
            if i != j and j not in taken:
                shared = overlap(a.text, b.text)
                if shared > best[0]:
                    best = (shared, j)
        if best[1] >= 0:
            after[i] = (best[1], best[0])
            taken.add(best[1])
    out: list[Passage] = []
    seen: set[int] = set()
    for head in range(len(ranked)):
        if head in taken or head in seen:
            continue
        built = _Builder(*ranked[head])
        seen.add(head)
        at = head
        while at in after and after[at][0] not in seen:
            nxt, shared = after[at]
            built.join(ranked[nxt][0], ranked[nxt][1], shared)
            seen.add(nxt)
            at = nxt
        out.append(built.done())
    # a cycle of overlaps has no head: its chunks read alone
    out += [
        Passage(c.text, ((c.id, 0, len(c.text)),), r)
        for k, (r, c) in enumerate(ranked)
        if k not in seen
    ]
    return out


@lru_cache(maxsize=4096)
def passages(retrieved: tuple[RetrievedChunk, ...]) -> tuple[Passage, ...]:
    """The retrieved chunks as passages (module docstring), best-ranked passage first.
    Cached: every claim and reference statement of a question reads the same chunks."""
    ranked = list(enumerate(retrieved, 1))
    placed = [rc for rc in ranked if _placed(rc[1])]
    loose = [rc for rc in ranked if not _placed(rc[1])]
    return tuple(sorted(_by_place(placed) + _by_text(loose), key=lambda p: p.first_rank))


@lru_cache(maxsize=65536)
def passage_sentences(
    passage: Passage,
) -> tuple[tuple[str, frozenset[str], frozenset[str], tuple[str, ...]], ...]:
    """(sentence, its tokens, its quantities, the ids of the chunks it spans) for each
    sentence of a passage (`text.sentence_terms`); cached like it, by passage."""
    out = []
    cursor = 0
    for sentence, tokens, numbers in sentence_terms(passage.text):
        at = passage.text.find(sentence[:40], cursor)  # a joined abbreviation differs later
        start = cursor if at < 0 else at
        cursor = start + len(sentence)
        out.append((sentence, tokens, numbers, passage.spanned(start, cursor)))
    return tuple(out)
