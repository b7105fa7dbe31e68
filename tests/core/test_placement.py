"""Placing retrieved chunks in documents: offsets, exact text, white-space-folded text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.metrics.spans import Range
from rageval_core.models import Document, RetrievedChunk
from rageval_core.placement import MIN_TEXT, Placer

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


def test_a_corpus_chunk_id_is_placed_where_that_chunk_is() -> None:
    from rageval_core.models import Chunk

    same = "The Normans lived in Normandy, France."  # in both documents
    corpus = [Chunk("b#1", "b", same), Chunk("gone#1", "nowhere", "Text in no document at all.")]
    p = Placer(DOCS, corpus)
    # the id names the chunk: its own document, whatever text the pipeline sent along
    assert p.place(RetrievedChunk("b#1", "b#1")) == Range("b", 10, 10 + len(same))
    assert p.place(RetrievedChunk("gone#1", same)) is None  # its text is in no document
    assert p.place(RetrievedChunk("other", same)) == Range("a", 0, len(same))
