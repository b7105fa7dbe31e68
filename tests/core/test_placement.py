"""Placing retrieved chunks in documents: offsets, exact text, white-space-folded text, text
without white space."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.metrics.spans import Range
from rageval_core.models import Document, RetrievedChunk
from rageval_core.placement import MIN_TEXT, Placer, squeezed

DOCS = [
    Document("a", "The Normans lived in Normandy, France.\r\nRollo was  their first ruler."),
    Document("b", "Blue sky. The Normans lived in Normandy, France. Blue sky."),
]


def chunk(text: str = "", **kw) -> RetrievedChunk:
    return RetrievedChunk("c", text, **kw)


def test_offsets_exact_text_and_folded_white_space() -> None:
    p = Placer(DOCS)
    # offsets holding the chunk's text (white space folded) are believed, however short
    assert p.place(chunk("e sky.", doc_id="b", start=3, end=9)) == Range("b", 3, 9)
    assert p.place(chunk(" e \n sky. ", doc_id="b", start=3, end=9)) == Range("b", 3, 9)
    assert p.place(chunk("e sky.", doc_id="b", start=3, end=999)) is None  # beyond it
    assert p.place(chunk("e sky.", doc_id="zzz", start=0, end=1)) is None  # no such document
    # long text, found exactly (first place in dataset order, or in the named document)
    text = "The Normans lived in Normandy, France."
    assert p.place(chunk(text)) == Range("a", 0, len(text))
    assert p.place(chunk(text, doc_id="b")) == Range("b", 10, 10 + len(text))
    # short text: the fallback search; too short to mean anything: not placed
    assert p.place(chunk("Blue sky. The Normans")) == Range("b", 0, 21)
    assert p.place(chunk("Blue sky.")) is None
    # white space re-joined by a splitter: found in the folded copy, mapped back
    folded = "France. Rollo was their first ruler."
    r = p.place(chunk(folded))
    assert r is not None and r.doc_id == "a"
    assert DOCS[0].text[r.start : r.end] == "France.\r\nRollo was  their first ruler."
    assert p.place(chunk("Not in any document at all, really.")) is None
    assert p.place(chunk("   ")) is None


words = st.sampled_from(["alpha", "beta", "gamma", "delta", "x", "Normandy", "ruler", "é"])
seps = st.sampled_from([" ", "  ", "\n", "\t ", "\r\n"])


@st.composite
def documents(draw):
    docs = []
    for i in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 60))
        parts = [draw(words) + draw(seps) for _ in range(n)]
        docs.append(Document(f"d{i}", "".join(parts)))
    return docs


@settings(max_examples=150, deadline=None)
@given(docs=documents(), data=st.data())
def test_a_cut_of_a_document_is_placed_where_its_text_is(docs, data) -> None:
    doc = data.draw(st.sampled_from(docs))
    start = data.draw(st.integers(0, len(doc.text) - 1))
    end = data.draw(st.integers(start + 1, len(doc.text)))
    text = doc.text[start:end]
    p = Placer(docs)
    r = p.place(chunk(text))
    if len(text.strip()) < MIN_TEXT:
        assert r is None
        return
    assert r is not None
    placed = next(d for d in docs if d.id == r.doc_id).text[r.start : r.end]
    assert placed == text  # exact search finds the text (maybe an earlier copy of it)
    # the same words with white space changed are placed on text with those words
    squashed = re.sub(r"\s+", " ", text).strip()
    if len(squashed) < MIN_TEXT:
        return
    r2 = p.place(chunk(squashed))
    assert r2 is not None
    got = next(d for d in docs if d.id == r2.doc_id).text[r2.start : r2.end]
    assert re.sub(r"\s+", " ", got).strip() == squashed
    # a space the document does not have (a sentence window's joined sentences): placed on
    # the same characters but for white space
    at = data.draw(st.integers(1, len(squashed) - 1))
    spaced = squashed[:at] + " " + squashed[at:]
    r3 = p.place(chunk(spaced))
    assert r3 is not None
    got = next(d for d in docs if d.id == r3.doc_id).text[r3.start : r3.end]
    assert squeezed(got) == squeezed(spaced)


def test_a_corpus_chunk_id_is_placed_where_that_chunk_is() -> None:
    from rageval_core.models import Chunk

    same = "The Normans lived in Normandy, France."  # in both documents
    corpus = [Chunk("b#1", "b", same), Chunk("gone#1", "nowhere", "Text in no document at all.")]
    p = Placer(DOCS, corpus)
    # the id names the chunk: its own document, whatever text the pipeline sent along
    assert p.place(RetrievedChunk("b#1", "b#1")) == Range("b", 10, 10 + len(same))
    assert p.place(RetrievedChunk("gone#1", same)) is None  # its text is in no document
    assert p.place(RetrievedChunk("other", same)) == Range("a", 0, len(same))


# ---------------------------------------------------------------------------- checked offsets

SENTENCE = "Rollo was  their first ruler."
WINDOW = "The Normans lived in Normandy, France. Rollo was their first ruler."  # folded


def test_offsets_that_do_not_hold_the_text_are_counted_and_the_text_placed() -> None:
    """LlamaIndex's sentence windows: the text is the window, the offsets the sentence's."""
    p = Placer(DOCS)
    at = DOCS[0].text.index(SENTENCE)
    window = RetrievedChunk("w", WINDOW, doc_id="a", start=at, end=at + len(SENTENCE))
    sentence = RetrievedChunk("s", SENTENCE, doc_id="a", start=at, end=at + len(SENTENCE))
    got = p.place_all([window, sentence])
    assert got.ranges == (Range("a", 0, len(DOCS[0].text)), Range("a", at, at + len(SENTENCE)))
    assert got.offsets_mismatched == 1
    assert got.columns()["n_offsets_mismatched"] == 1


def test_a_negative_or_reversed_offset_never_becomes_a_range() -> None:
    p = Placer(DOCS)
    text = "The Normans lived in Normandy, France."
    for start, end in ((-59, -10), (-5, 10), (10, 3), (0, 10**9)):
        got = p.place_all([RetrievedChunk("c", text, doc_id="b", start=start, end=end)])
        assert got.ranges == (Range("b", 10, 10 + len(text)),), (start, end)
        assert got.offsets_mismatched == 1


def test_an_unknown_document_id_falls_back_to_the_text_and_is_named() -> None:
    """SimpleDirectoryReader(filename_as_id=True) run from another folder: path ids."""
    p = Placer(DOCS)
    text = "The Normans lived in Normandy, France."
    got = p.place_all(
        [
            RetrievedChunk("1", text, doc_id="/tmp/two/b.txt", start=10, end=10 + len(text)),
            RetrievedChunk("2", "Nowhere in the documents at all.", doc_id="/tmp/two/b.txt"),
            RetrievedChunk("3", text, doc_id="/tmp/two/a.txt"),
        ]
    )
    assert got.ranges == (Range("a", 0, len(text)), None, Range("a", 0, len(text)))
    assert got.unknown_doc_ids == ("/tmp/two/b.txt", "/tmp/two/a.txt")
    assert got.unknown_doc_placed == 2
    assert got.offsets_mismatched == 0  # an unknown document's offsets are not checked


def test_a_nul_in_a_document_is_an_ordinary_character() -> None:
    """The documents are joined with NUL: a NUL inside one once shifted every later
    document in the folded index (offsets -59..-10, in the wrong document)."""
    docs = [
        Document("nul", "A\x00B\x00C  and then  some more text in the first document."),
        Document("two", "Second document:  the answer is   forty two, said the computer."),
    ]
    p = Placer(docs)
    folded_text = "the answer is forty two, said the computer."
    r = p.place(chunk(folded_text))
    assert r is not None and r.doc_id == "two" and 0 <= r.start < r.end <= len(docs[1].text)
    assert re.sub(r"\s+", " ", docs[1].text[r.start : r.end]) == folded_text
    # a text holding the NUL is found where it is, and never across two documents
    assert p.place(chunk("B\x00C  and then  some more")) == Range("nul", 2, 26)
    assert p.place(chunk("first document.\x00Second document")) is None


# ---------------------------------------------------------------------------- property

alphabet = st.sampled_from(["ab", "cd", "e", "Normandy", "x\x00y", "\x01", "é", "𝔘"])
spaces = st.sampled_from([" ", "  ", "\n", "\t ", "\r\n", "\x1f", "\u2028"])


@st.composite
def texts(draw) -> str:
    return "".join(draw(alphabet) + draw(spaces) for _ in range(draw(st.integers(0, 40))))


@st.composite
def chunks(draw, docs):
    """A chunk as a pipeline might send it: a cut of a document (its white space maybe
    changed) or other text, with right, wrong, negative or no offsets and any document id."""
    doc = draw(st.sampled_from(docs))
    n = len(doc.text)
    start = draw(st.integers(0, n))
    end = draw(st.integers(start, n))
    text = draw(
        st.sampled_from([doc.text[start:end], re.sub(r"\s+", " ", doc.text[start:end]).strip(), ""])
        | texts()
    )
    doc_id = draw(st.sampled_from([None, doc.id, "elsewhere", *(d.id for d in docs)]))
    offsets = draw(
        st.sampled_from([(None, None), (start, end)])
        | st.tuples(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6))
    )
    return RetrievedChunk("c", text, doc_id=doc_id, start=offsets[0], end=offsets[1])


def _folded(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_placed_range_lies_in_its_document_and_holds_the_chunk_text(data) -> None:
    docs = [Document(f"d{i}", data.draw(texts())) for i in range(data.draw(st.integers(1, 3)))]
    p = Placer(docs)
    cs = data.draw(st.lists(chunks(docs), max_size=6))
    got = p.place_all(cs)
    by_id = {d.id: d.text for d in docs}
    mismatched = 0
    for c, r in zip(cs, got.ranges, strict=True):
        believable = c.doc_id in by_id and c.start is not None
        if believable:
            doc = by_id[c.doc_id]
            ok = 0 <= c.start <= c.end <= len(doc) and _folded(doc[c.start : c.end]) == _folded(
                c.text
            )
            mismatched += not ok
            if ok:
                assert r == Range(c.doc_id, c.start, c.end)
        if r is None:
            continue
        doc = by_id[r.doc_id]
        assert 0 <= r.start <= r.end <= len(doc)
        # folded, or (found only without white space) but for its white space
        assert squeezed(doc[r.start : r.end]) == squeezed(c.text)
        if c.doc_id in by_id:
            assert r.doc_id == c.doc_id  # the document it names, when the dataset has it
    assert got.offsets_mismatched == mismatched
    named = {c.doc_id for c in cs if c.doc_id is not None and c.doc_id not in by_id}
    assert set(got.unknown_doc_ids) == named


def test_a_window_joined_with_a_space_the_document_lacks_is_placed_on_its_text() -> None:
    """LlamaIndex's sentence windows join sentences with a space: `Galilee.[citation
    needed]` in the document reads `Galilee. [citation needed]` in the window (SQuAD's
    Normans article); neither the exact nor the folded text is there."""
    doc = Document("normans", "He held Galilee.[citation needed]\n\nThen Cyprus fell.")
    window = "He held Galilee. [citation needed]\n\nThen Cyprus fell."
    r = Placer([doc]).place(chunk(window))
    assert r == Range("normans", 0, len(doc.text))
