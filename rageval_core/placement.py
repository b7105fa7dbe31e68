"""Place retrieved chunks in a dataset's documents (docs/metrics.md): offsets checked against
the text, else by the text; and the other places of each gold span's text (its twins).

A chunk that carries `doc_id`, `start`, `end` is taken at its word only when
`document[start:end]` is its text (white space folded: every run of white space read as
one space, ends stripped). Offsets that say something else (LlamaIndex's sentence windows
record the sentence's offsets beside the window's text) are counted and the chunk is
placed by its text, in the document it names. A `doc_id` the dataset does not have (a
file path from another folder) is counted and named, and the chunk is placed by its text
anywhere. A chunk whose id is a chunk of the dataset's corpus is where that corpus chunk
is (found once, by its text, in its own document). Any other chunk is found by its text
(of at least `MIN_TEXT` characters): exactly first, then white space folded, then with
white space ignored (a splitter that joined sentences with a space the text does not
have: LlamaIndex's sentence windows). A text found
more than once takes its first place — in the document the chunk names, if it names one
the dataset has, else in the first document in dataset order. A placed range always lies
in its document and holds the chunk's text (folded, or but for its white space).

Finding text goes through an index, not a scan of the documents per chunk: all documents
are joined into one string (separated by NUL) and every `STEP`-th position is indexed by
the `Q` characters that start there (long enough to be rare even in repetitive text). A
chunk of at least `Q + STEP - 1` characters contains an indexed position among its first
`STEP`, so `STEP` lookups and a comparison per candidate place it. The index holds no
text: each gram's hash (Python's, of this process: an index is never pickled) in one
sorted array and its position in another, 12 bytes per `STEP` characters; a hash shared
by two grams only adds a candidate, which the comparison rejects. Shorter
chunks fall back to `str.find` on the joined text. A match counts only inside one
document's bounds, so a NUL inside a document is an ordinary character. The
white-space-folded index is built the first time an exact search fails, the one without
white space the first time a folded search fails.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rageval_core.dataset import document_id
from rageval_core.metrics.spans import Range, Twin
from rageval_core.models import Chunk, Document, GoldSpan, RetrievedChunk

Q = 48
STEP = 16
MEMO_SIZE = 100_000  # texts remembered (a dict of places; cleared when full)
MIN_TEXT = 16
"""A shorter text is not placed, and a shorter gold span has no twins: `x` or `Yes.`
occurs anywhere and would land in a gold span by chance."""
_SEP = "\x00"
_SPACE = re.compile(r"\s+")
_NOT_SPACE = re.compile(r"\S")
BLOCK = 1 << 20  # characters folded at a time
_SPLIT = re.compile(r"(\s+)")


def folded(text: str) -> str:
    """The documented white space folding: each run of white space one space, ends stripped."""
    return _SPACE.sub(" ", text).strip()


@dataclass
class _Text:
    """Joined documents with their q-gram index; `starts[d]` is where document d begins.
    For the white-space-folded copy, `folds` and `shifts` map a position back to the
    original: after folded position `folds[i]` the original is `shifts[i]` characters
    further on."""

    joined: str
    starts: list[int]
    grams: _Grams
    folds: array | None = None
    shifts: array | None = None

    def source(self, pos: int) -> int:
        """Position `pos` of this text in the original text."""
        if self.folds is None or self.shifts is None:
            return pos
        i = bisect.bisect_right(self.folds, pos) - 1
        return pos + (self.shifts[i] if i >= 0 else 0)

    def end(self, doc: int) -> int:
        """Where document `doc` ends (its separator, or the end of the text)."""
        return self.starts[doc + 1] - 1 if doc + 1 < len(self.starts) else len(self.joined)


class _Grams:
    """Where every `STEP`-th `Q`-gram of a text starts, found by the gram's hash: the
    hashes sorted, and the positions in the same order (ascending within one hash)."""

    def __init__(self, joined: str):
        n = max(0, (len(joined) - Q) // STEP + 1)
        hashes = np.fromiter(
            (hash(joined[p : p + Q]) for p in range(0, n * STEP, STEP)), np.int64, count=n
        )
        order = np.argsort(hashes, kind="stable")
        self.hashes = hashes[order]
        del hashes
        kind = np.int32 if len(joined) < 1 << 31 else np.int64
        self.positions = order.astype(kind) * kind(STEP)

    def __reduce__(self):
        # Python's str hash is salted per process: another process would find nothing
        raise TypeError("a placement index is built in the process that uses it")

    def get(self, gram: str) -> list[int]:
        """The indexed positions whose gram may be `gram` (same hash), in order."""
        h = hash(gram)
        lo = int(np.searchsorted(self.hashes, h, "left"))
        hi = int(np.searchsorted(self.hashes, h, "right"))
        return self.positions[lo:hi].tolist()


def _starts(lengths: Sequence[int]) -> list[int]:
    starts, pos = [], 0
    for n in lengths:
        starts.append(pos)
        pos += n + 1
    return starts


def squeezed(text: str) -> str:
    """`text` with no white space at all: the last resort of placement by text."""
    return _SPACE.sub("", text)


def _fold(text: str, space: str = " ") -> tuple[str, array, array]:
    """`text` with each run of white space made `space` (one space, or nothing), and
    where the runs that got shorter end in it (`folds`) with the characters removed up to
    there (`shifts`). Folded a block at a time (cut after a character that is not white
    space, so no run crosses a cut): `re.sub` on the whole text would hold a piece per
    run, many times the text."""
    kind = "i" if len(text) < 1 << 31 else "q"  # 4 bytes a run where they suffice
    folds, shifts = array(kind), array(kind)
    pieces, removed, kept, at = [], 0, len(space), 0
    while at < len(text):
        cut = min(len(text), at + BLOCK)
        if cut < len(text) and _SPACE.match(text, cut - 1):
            m = _NOT_SPACE.search(text, cut)
            cut = m.end() if m else len(text)
        for m in _SPACE.finditer(text, at, cut):
            n = m.end() - m.start()
            if n > kept:
                folds.append(m.start() - removed + kept)
                removed += n - kept
                shifts.append(removed)
        pieces.append(_SPACE.sub(space, text[at:cut]))
        at = cut
    return "".join(pieces), folds, shifts


def _folded_length(text: str, space: str) -> int:
    """`len(_fold(text, space)[0])`, without making the text."""
    return len(text) - sum(max(0, m.end() - m.start() - len(space)) for m in _SPACE.finditer(text))


def _blocks(twin: str, at: int, span: str, start: int) -> tuple[tuple[int, int, int, int], ...]:
    """(twin start, twin end, span start, span end) pieces aligning `twin` (at `at`) with
    `span` (at `start`), texts equal but for the length of their white space runs;
    neighbours with one shift merged (an exact twin is one piece)."""
    out: list[list[int]] = []
    t, s = at, start
    for a, b in zip(_SPLIT.split(twin), _SPLIT.split(span), strict=True):
        if not a:
            continue
        last = out[-1] if out else None
        if last and len(a) == len(b) and last[1] - last[0] == last[3] - last[2]:
            last[1], last[3] = t + len(a), s + len(b)  # one shift goes on
        else:
            out.append([t, t + len(a), s, s + len(b)])
        t, s = t + len(a), s + len(b)
    return tuple((a, b, c, d) for a, b, c, d in out)


@dataclass(frozen=True)
class Placement:
    """One question's chunks placed (`Placer.place_all`): a range per chunk (None: not
    placed), and what did not match the dataset, for the row and the run's warning."""

    ranges: tuple[Range | None, ...]
    offsets_mismatched: int = 0
    """Chunks whose offsets did not hold their text: placed by their text instead."""
    unknown_doc_ids: tuple[str, ...] = ()
    """Document ids the chunks named that the dataset does not have (first seen first)."""
    unknown_doc_placed: int = 0
    """Chunks naming such an id that were placed by their text anyway."""

    def columns(self) -> dict[str, Any]:
        """The row's placement columns (`runs.rows.SPAN_FIELDS`, `PLACEMENT_FIELDS`)."""
        return {
            "retrieved_doc_ids": [r.doc_id if r else None for r in self.ranges],
            "retrieved_starts": [r.start if r else None for r in self.ranges],
            "retrieved_ends": [r.end if r else None for r in self.ranges],
            "n_unplaced": sum(r is None for r in self.ranges),
            "n_offsets_mismatched": self.offsets_mismatched,
            "unknown_doc_ids": list(self.unknown_doc_ids),
            "n_unknown_doc_placed": self.unknown_doc_placed,
        }


def unknown_columns() -> dict[str, Any]:
    """The placement columns of a question whose retrieved chunks are unknown (a harness
    that did not say): nothing placed, nothing counted — NULL, not 0."""
    return {
        "retrieved_doc_ids": [],
        "retrieved_starts": [],
        "retrieved_ends": [],
        "n_unplaced": None,
        "n_offsets_mismatched": None,
        "unknown_doc_ids": [],
        "n_unknown_doc_placed": None,
    }


class Placer:
    """Places the chunks of many questions in one set of documents; build once per run."""

    def __init__(self, documents: Sequence[Document], corpus: Sequence[Chunk] = ()):
        self.documents = tuple(documents)
        self._corpus = {c.id: c for c in corpus}
        self._doc_index = {d.id: i for i, d in enumerate(self.documents)}
        joined = _SEP.join(d.text for d in self.documents)
        self._exact = _Text(joined, _starts([len(d.text) for d in self.documents]), _Grams(joined))
        self._folded: _Text | None = None
        self._squeezed: _Text | None = None
        # the same chunk comes back for many questions: each text is searched once
        self._memo: dict[tuple[str, int | None], Range | None] = {}
        self._twins: dict[GoldSpan, tuple[Twin, ...]] = {}

    def _folded_text(self) -> _Text:
        if self._folded is None:
            self._folded = self._refolded(" ")
        return self._folded

    def _squeezed_text(self) -> _Text:
        if self._squeezed is None:
            self._squeezed = self._refolded("")
        return self._squeezed

    def _refolded(self, space: str) -> _Text:
        """The joined documents with each run of white space made `space`, indexed."""
        joined, folds, shifts = _fold(self._exact.joined, space)
        # NUL is not white space: no run crosses a separator, each document folds alone
        starts = _starts([_folded_length(d.text, space) for d in self.documents])
        return _Text(joined, starts, _Grams(joined), folds, shifts)

    def _occurrences(self, t: _Text, needle: str, doc: int | None) -> Iterator[tuple[int, int]]:
        """(document index, start in `t`) of each match inside one document, in order."""
        if not needle or not self.documents:
            return
        lo, hi = (0, len(t.joined)) if doc is None else (t.starts[doc], t.end(doc))
        if len(needle) < Q + STEP - 1:
            at = t.joined.find(needle, lo, hi)
            while at >= 0:
                d = bisect.bisect_right(t.starts, at) - 1
                if at + len(needle) <= t.end(d):
                    yield d, at
                at = t.joined.find(needle, at + 1, hi)
            return
        found = set()
        for j in range(STEP):
            for p in t.grams.get(needle[j : j + Q]):
                if p >= j:
                    found.add(p - j)
        for start in sorted(found):
            if start < lo or start + len(needle) > hi:
                continue
            d = bisect.bisect_right(t.starts, start) - 1
            if start + len(needle) <= t.end(d) and t.joined.startswith(needle, start):
                yield d, start

    def _believed(self, chunk: RetrievedChunk, doc: int) -> bool:
        """Whether the chunk's offsets hold its text in document `doc` (folded)."""
        start, end = chunk.start, chunk.end
        text = self.documents[doc].text
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
            return False
        if not 0 <= start <= end <= len(text):  # type: ignore[operator]
            return False
        found = text[start:end]
        return found == chunk.text or folded(found) == folded(chunk.text)

    def _place(self, chunk: RetrievedChunk) -> tuple[Range | None, str | None]:
        """The chunk's range, and what did not match: `offsets`, `doc`, or None."""
        doc = self._doc_index.get(chunk.doc_id) if chunk.doc_id is not None else None
        note = "doc" if chunk.doc_id is not None and doc is None else None
        if doc is not None and (chunk.start is not None or chunk.end is not None):
            if self._believed(chunk, doc):
                return Range(self.documents[doc].id, chunk.start, chunk.end), None  # type: ignore[arg-type]
            note = "offsets"
        known = self._corpus.get(chunk.id)
        if known is not None:
            text, doc = known.text, self._doc_index.get(document_id(known), doc)
        else:
            text = chunk.text
        if len(text.strip()) < MIN_TEXT:
            return None, note
        key = (text, doc)
        if key not in self._memo:
            if len(self._memo) >= MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = self._search(text, doc)
        return self._memo[key], note

    def place(self, chunk: RetrievedChunk) -> Range | None:
        """The chunk's range in its document, or None when it cannot be placed."""
        return self._place(chunk)[0]

    def _search(self, text: str, doc: int | None) -> Range | None:
        hit = next(self._occurrences(self._exact, text, doc), None)
        if hit is not None:
            d, start = hit
            base = self._exact.starts[d]
            return Range(self.documents[d].id, start - base, start - base + len(text))
        for t, needle in (
            (self._folded_text(), folded(text)),
            # a splitter that joined sentences with a space the text does not have
            # (LlamaIndex's sentence windows: "Galilee.[1]" read as "Galilee. [1]")
            (self._squeezed_text(), squeezed(text)),
        ):
            hit = next(self._occurrences(t, needle, doc), None)
            if hit is not None:
                return self._unfold(hit, len(needle), t)
        return None

    def _unfold(self, hit: tuple[int, int], length: int, t: _Text | None = None) -> Range:
        """A match of `length` characters in the folded (or squeezed) text `t` as a
        range of its document: its first and last characters mapped back."""
        d, start = hit
        t, base = t or self._folded_text(), self._exact.starts[d]
        begin, end = t.source(start), t.source(start + length - 1) + 1
        return Range(self.documents[d].id, begin - base, end - base)

    def place_all(self, chunks: Sequence[RetrievedChunk]) -> Placement:
        """Every chunk of one question placed, with the counts of what did not match."""
        ranges, mismatched, unknown, unknown_placed = [], 0, {}, 0
        for c in chunks:
            r, note = self._place(c)
            ranges.append(r)
            mismatched += note == "offsets"
            if note == "doc":
                unknown[c.doc_id] = None
                unknown_placed += r is not None
        return Placement(tuple(ranges), mismatched, tuple(unknown), unknown_placed)  # type: ignore[arg-type]

    def twins(self, gold: Sequence[GoldSpan]) -> tuple[Twin, ...]:
        """The twins of each gold span (metrics/spans.py): every other place, not
        overlapping the span, of its text white space folded, in any document. A span of
        fewer than `MIN_TEXT` characters has none."""
        out: list[Twin] = []
        for s in gold:
            if s not in self._twins:
                self._twins[s] = self._twins_of(s)
            out += self._twins[s]
        return tuple(out)

    def _twins_of(self, span: GoldSpan) -> tuple[Twin, ...]:
        d = self._doc_index.get(span.doc_id)
        if d is None:
            return ()
        text = self.documents[d].text[span.start : span.end]
        needle = folded(text)
        if len(needle) < MIN_TEXT:
            return ()
        # the span's text without its outer white space, as a twin is matched
        core, lead = text.strip(), len(text) - len(text.lstrip())
        out = []
        for hit in self._occurrences(self._folded_text(), needle, None):
            r = self._unfold(hit, len(needle))
            if r.doc_id == span.doc_id and r.start < span.end and span.start < r.end:
                continue  # the span itself
            twin = self.documents[hit[0]].text[r.start : r.end]
            blocks = _blocks(twin, r.start, core, span.start + lead)
            out.append(Twin(r.doc_id, r.start, r.end, span, blocks))
        return tuple(out)
