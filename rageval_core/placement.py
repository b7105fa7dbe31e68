"""Place retrieved chunks in a dataset's documents (SPEC §13): offsets given, else by text.

A chunk that carries `doc_id`, `start`, `end` is taken at its word (checked only to lie in
its document). Any other chunk is found by its text: exactly first, then with every run of
white space read as one space (a splitter that re-joins words, a loader that turned `\\r\\n`
into `\\n`). A text found more than once takes its first place — in the document the chunk
names, if it names one, else in the first document in dataset order.

Finding text goes through an index, not a scan of the documents per chunk: all documents are
joined into one string (separated by NUL) and every `STEP`-th position is indexed by the `Q`
characters that start there. A chunk of at least `Q + STEP - 1` characters contains an
indexed position among its first `STEP`, so `STEP` dictionary lookups and a comparison per
candidate place it. Shorter chunks fall back to `str.find` on the joined text. The
white-space-folded index is built the first time an exact search fails.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from rageval_core.metrics.spans import Range
from rageval_core.models import Document, RetrievedChunk

Q = 16
STEP = 8
_SEP = "\x00"
_SPACE = re.compile(r"\s+")


@dataclass
class _Text:
    """Joined documents with their q-gram index; `to_source` maps a position back to the
    original text when this is the white-space-folded copy."""

    joined: str
    starts: list[int]
    grams: dict[str, list[int]]
    to_source: array | None = None


def _index(joined: str) -> dict[str, list[int]]:
    grams: dict[str, list[int]] = {}
    for p in range(0, len(joined) - Q + 1, STEP):
        grams.setdefault(joined[p : p + Q], []).append(p)
    return grams


def _fold(text: str) -> tuple[str, array]:
    """`text` with each run of white space made one space, and each folded position's
    position in `text` (one past the end included)."""
    out: list[str] = []
    where = array("q")
    pos = 0
    for m in _SPACE.finditer(text):
        out.append(text[pos : m.start()])
        where.extend(range(pos, m.start()))
        out.append(" ")
        where.append(m.start())
        pos = m.end()
    out.append(text[pos:])
    where.extend(range(pos, len(text) + 1))
    return "".join(out), where


class Placer:
    """Places the chunks of many questions in one set of documents; build once per run."""

    def __init__(self, documents: Sequence[Document]):
        self.documents = tuple(documents)
        self._doc_index = {d.id: i for i, d in enumerate(self.documents)}
        starts, pos = [], 0
        for d in self.documents:
            starts.append(pos)
            pos += len(d.text) + 1
        joined = _SEP.join(d.text for d in self.documents)
        self._exact = _Text(joined, starts, _index(joined))
        self._folded: _Text | None = None

    def _folded_text(self) -> _Text:
        if self._folded is None:
            joined, where = _fold(self._exact.joined)
            starts = [bisect.bisect_left(where, s) for s in self._exact.starts]
            self._folded = _Text(joined, starts, _index(joined), where)
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
        if not chunk.text.strip():
            return None
        hit = self._find(self._exact, chunk.text, doc)
        if hit is not None:
            d, start = hit
            base = self._exact.starts[d]
            return Range(self.documents[d].id, start - base, start - base + len(chunk.text))
        folded = self._folded_text()
        needle = _SPACE.sub(" ", chunk.text).strip()
        hit = self._find(folded, needle, doc)
        if hit is None:
            return None
        d, start = hit
        where = folded.to_source
        assert where is not None
        base = self._exact.starts[d]
        # the last character of the match, mapped back, plus one
        begin, end = where[start], where[start + len(needle) - 1] + 1
        return Range(self.documents[d].id, begin - base, end - base)

    def place_all(self, chunks: Sequence[RetrievedChunk]) -> list[Range | None]:
        return [self.place(c) for c in chunks]
