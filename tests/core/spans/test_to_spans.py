"""`rageval dataset to-spans`: an id dataset of in-order chunks becomes documents + spans."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.cli import main
from rageval_core.dataset import example_dataset_path, load_dataset, to_spans
from rageval_core.errors import DatasetError
from rageval_core.models import Chunk, Document, GoldenDataset, GoldenQuestion, GoldSpan


def test_to_spans_writes_documents_and_spans_that_validate(tmp_path: Path, capsys) -> None:
    src = tmp_path / "ids"
    src.mkdir()
    (src / "corpus.jsonl").write_text((example_dataset_path().parent / "corpus.jsonl").read_text())
    (src / "dataset.yaml").write_text(
        "name: ids\nversion: 1\ncorpus: corpus.jsonl\nquestions:\n"
        "  - {id: q1, question: a, reference_answer: r, gold_chunk_ids: [company-overview#2]}\n"
        "  - {id: q2, question: b, reference_answer: r,"
        " gold_chunk_ids: [temperature-control@v2#3, driver-shifts@v1#1]}\n"
        "  - {id: q3, question: c, gold_chunk_ids: []}\n"
    )
    out = tmp_path / "spans"
    assert main(["dataset", "to-spans", str(src / "dataset.yaml"), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    before, after = load_dataset(src / "dataset.yaml"), load_dataset(out / "dataset.yaml")
    texts = {d.id: d.text for d in after.documents}
    chunks = before.chunk_map()
    for q in after.questions:
        assert len(q.gold_spans) == len(q.gold_chunk_ids)
        for gid, s in zip(q.gold_chunk_ids, q.gold_spans, strict=True):
            assert texts[s.doc_id][s.start : s.end] == chunks[gid].text
    assert {"temperature-control@v1", "temperature-control@v2"} <= set(texts)  # versions apart
    assert after.questions[2].answerability == "unanswerable"
    assert after.sha256 != before.sha256
    assert main(["validate", str(out / "dataset.yaml")]) == 0
    assert "19 documents, 3 gold spans" in capsys.readouterr().out
    # the same again refuses to overwrite a curated dataset
    assert main(["dataset", "to-spans", str(src / "dataset.yaml"), "--out", str(out)]) == 2


def _dataset(tmp_path: Path, corpus: str, documents: str, questions: str) -> Path:
    src = tmp_path / "ds"
    src.mkdir()
    (src / "corpus.jsonl").write_text(corpus)
    (src / "documents.jsonl").write_text(documents)
    (src / "dataset.yaml").write_text(
        "name: d\nversion: 1\ncorpus: corpus.jsonl\ndocuments: documents.jsonl\n"
        "questions:\n" + questions
    )
    return src / "dataset.yaml"


def test_a_dataset_with_documents_keeps_every_span_on_the_text_it_quoted(
    tmp_path: Path,
) -> None:
    """Documents whose pieces are not joined by a blank line are kept as they are: a quote
    of "the answer is 42" stays on it (it became ' the answer is 4' when they were
    rebuilt), and each gold chunk is placed in them."""
    path = _dataset(
        tmp_path,
        '{"id": "a#1", "doc_id": "a", "text": "Intro."}\n'
        '{"id": "a#2", "doc_id": "a", "text": "Intro? No: the answer is 42. More."}\n',
        '{"id": "a", "text": "Intro. Intro? No: the answer is 42. More."}\n',
        "  - {id: q1, question: a, reference_answer: r, gold_spans:"
        " [{doc_id: a, text: the answer is 42}]}\n"
        "  - {id: q2, question: b, reference_answer: r, gold_chunk_ids: ['a#2', 'a#1']}\n",
    )
    before = load_dataset(path)
    docs, questions = to_spans(before)
    assert docs == list(before.documents)
    text = docs[0].text
    q1, q2 = questions
    assert [text[s.start : s.end] for s in q1.gold_spans] == ["the answer is 42"]
    assert [(s.start, s.end) for s in q2.gold_spans] == [(7, 41), (0, 6)]
    out = tmp_path / "spans"
    assert main(["dataset", "to-spans", str(path), "--out", str(out)]) == 0
    assert main(["validate", str(out / "dataset.yaml")]) == 0


def test_a_chunk_absent_from_its_document_is_named(tmp_path: Path) -> None:
    path = _dataset(
        tmp_path,
        '{"id": "a#1", "doc_id": "a", "text": "not in the document"}\n',
        '{"id": "a", "text": "the answer is 42"}\n',
        "  - {id: q1, question: a, reference_answer: r, gold_chunk_ids: ['a#1']}\n",
    )
    with pytest.raises(DatasetError, match=r"chunk 'a#1'.*document 'a'"):
        to_spans(load_dataset(path))


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(st.text("ab 4.", min_size=1, max_size=8), min_size=1, max_size=6),
    seps=st.lists(st.sampled_from(["", " ", "\n", "\n\n", "--"]), min_size=6, max_size=6),
    quote=st.tuples(st.integers(0, 60), st.integers(1, 12)),
    has_document=st.booleans(),
)
def test_every_span_quotes_what_it_quoted_and_every_chunk_its_text(
    pieces: list[str], seps: list[str], quote: tuple[int, int], has_document: bool
) -> None:
    """Whatever joins the pieces of a document, and whether the dataset has it: an old
    span keeps its text, each gold chunk's span is that chunk's text."""
    text = "".join(p + s for p, s in zip(pieces, seps, strict=False))
    corpus = tuple(Chunk(f"d#{i}", "d", p) for i, p in enumerate(pieces))
    start = min(quote[0], len(text) - 1)
    end = min(start + quote[1], len(text))
    documents = (Document("d", text),) if has_document else ()
    span = (GoldSpan("d", start, end),) if has_document else ()
    ids = tuple(c.id for c in corpus)
    ds = GoldenDataset(
        "d",
        "1",
        "d.yaml",
        (GoldenQuestion("q1", "?", "r", gold_spans=span), GoldenQuestion("q2", "?", "r", ids)),
        corpus,
        "sha",
        documents,
    )
    docs, (q1, q2) = to_spans(ds)
    after = {d.id: d.text for d in docs}
    for old, new in zip(span, q1.gold_spans, strict=True):
        assert after[new.doc_id][new.start : new.end] == text[old.start : old.end]
    assert [after[s.doc_id][s.start : s.end] for s in q2.gold_spans] == list(pieces)
