"""Place retrieved chunks in a dataset's documents (docs/metrics.md): offsets given, else by text.

A chunk that carries `doc_id`, `start`, `end` is taken at its word (checked only to lie in
its document). A chunk whose id is a chunk of the dataset's corpus is where that corpus
chunk is (found once, by its text, in its own document). Any other chunk is found by its
text (of at least `MIN_TEXT` characters): exactly first, then with every run of
white space read as one space (a splitter that re-joins words, a loader that turned `\\r\\n`
into `\\n`). A text found more than once takes its first place — in the document the chunk
names, if it names one, else in the first document in dataset order.

Finding text goes through an index, not a scan of the documents per chunk: all documents are
joined into one string (separated by NUL) and every `STEP`-th position is indexed by the `Q`
characters that start there (long enough to be rare even in repetitive text). A chunk of
at least `Q + STEP - 1` characters contains an indexed position among its first `STEP`,
so `STEP` dictionary lookups and a comparison per candidate place it. Shorter chunks fall
back to `str.find` on the joined text. The white-space-folded index is built the first
time an exact search fails.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from rageval_core.dataset import document_id
from rageval_core.metrics.spans import Range
from rageval_core.models import Chunk, Document, RetrievedChunk

Q = 48
STEP = 16
MEMO_SIZE = 100_000  # texts remembered (a dict of places; cleared when full)
MIN_TEXT = 16
"""A shorter text is not placed: `x` or `Yes.` occurs anywhere and would land in a
gold span by chance."""
_SEP = "\x00"
_SPACE = re.compile(r"\s+")


@dataclass
class _Text:
    """Joined documents with their q-gram index. For the white-space-folded copy, `folds`
    and `shifts` map a position back to the original: after folded position `folds[i]`
    the original is `shifts[i]` characters further on."""

    joined: str
    starts: list[int]
    grams: dict[str, list[int]]
    folds: array | None = None
    shifts: array | None = None

    def source(self, pos: int) -> int:
        """Position `pos` of this text in the original text."""
        if self.folds is None or self.shifts is None:
            return pos
        i = bisect.bisect_right(self.folds, pos) - 1
        return pos + (self.shifts[i] if i >= 0 else 0)


def _index(joined: str) -> dict[str, list[int]]:
    grams: dict[str, list[int]] = {}
    for p in range(0, len(joined) - Q + 1, STEP):
        grams.setdefault(joined[p : p + Q], []).append(p)
    return grams


def _fold(text: str) -> tuple[str, array, array]:
    """`text` with each run of white space made one space, and where the runs that got
    shorter end in it (`folds`) with the characters removed up to there (`shifts`)."""
    folds, shifts = array("q"), array("q")
    removed = 0
    for m in _SPACE.finditer(text):
        n = m.end() - m.start()
        if n > 1:
            removed += n - 1
            folds.append(m.start() - (removed - (n - 1)) + 1)
            shifts.append(removed)
    return _SPACE.sub(" ", text), folds, shifts


class Placer:
    """Places the chunks of many questions in one set of documents; build once per run."""

    def __init__(self, documents: Sequence[Document], corpus: Sequence[Chunk] = ()):
        self.documents = tuple(documents)
        self._corpus = {c.id: c for c in corpus}
        self._doc_index = {d.id: i for i, d in enumerate(self.documents)}
        starts, pos = [], 0
        for d in self.documents:
            starts.append(pos)
            pos += len(d.text) + 1
        joined = _SEP.join(d.text for d in self.documents)
        self._exact = _Text(joined, starts, _index(joined))
        self._folded: _Text | None = None
        # the same chunk comes back for many questions: each text is searched once
        self._memo: dict[tuple[str, int | None], Range | None] = {}

    def _folded_text(self) -> _Text:
        if self._folded is None:
            joined, folds, shifts = _fold(self._exact.joined)
            starts, at = [0], joined.find(_SEP)
            while at >= 0:  # documents hold no NUL: each one is a separator
                starts.append(at + 1)
                at = joined.find(_SEP, at + 1)
            self._folded = _Text(joined, starts, _index(joined), folds, shifts)
        return self._folded

    def _candidates(self, t: _Text, needle: str, doc: int | None) -> list[int]:
        if len(needle) < Q + STEP - 1:
            if doc is None:
                found = t.joined.find(needle)
            else:
                lo = t.starts[doc]
                hi = t.starts[doc + 1] - 1 if doc + 1 < len(t.starts) else len(t.joined)
                found = t.joined.find(needle, lo, hi)
            return [] if found < 0 else [found]
        out = []
        for j in range(STEP):
            for p in t.grams.get(needle[j : j + Q], ()):
                if p >= j:
                    out.append(p - j)
        return sorted(set(out))

    def _find(self, t: _Text, needle: str, doc: int | None) -> tuple[int, int] | None:
        """(document index, start in `t`) of the first match inside one document."""
        for start in self._candidates(t, needle, doc):
            d = bisect.bisect_right(t.starts, start) - 1
            if doc is not None and d != doc:
                continue
            if t.joined.startswith(needle, start) and _SEP not in needle:
                return d, start
        return None

    def place(self, chunk: RetrievedChunk) -> Range | None:
        """The chunk's range in its document, or None when it cannot be placed."""
        doc = self._doc_index.get(chunk.doc_id) if chunk.doc_id is not None else None
        if chunk.doc_id is not None and doc is None:
            return None  # names a document the dataset does not have
        if chunk.start is not None and chunk.end is not None:
            text = self.documents[doc].text  # type: ignore[index]
            return Range(chunk.doc_id, chunk.start, chunk.end) if chunk.end <= len(text) else None
        known = self._corpus.get(chunk.id)
        if known is not None:
            text, doc = known.text, self._doc_index.get(document_id(known), doc)
        else:
            text = chunk.text
        if len(text.strip()) < MIN_TEXT:
            return None
        key = (text, doc)
        if key not in self._memo:
            if len(self._memo) >= MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = self._search(text, doc)
        return self._memo[key]

    def _search(self, text: str, doc: int | None) -> Range | None:
        hit = self._find(self._exact, text, doc)
        if hit is not None:
            d, start = hit
            base = self._exact.starts[d]
            return Range(self.documents[d].id, start - base, start - base + len(text))
        folded = self._folded_text()
        needle = _SPACE.sub(" ", text).strip()
        hit = self._find(folded, needle, doc)
        if hit is None:
            return None
        d, start = hit
        base = self._exact.starts[d]
        # the first and the last character of the match, mapped back
        begin, end = folded.source(start), folded.source(start + len(needle) - 1) + 1
        return Range(self.documents[d].id, begin - base, end - base)

    def place_all(self, chunks: Sequence[RetrievedChunk]) -> list[Range | None]:
        return [self.place(c) for c in chunks]
