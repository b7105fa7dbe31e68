"""Documents and gold spans in a dataset (docs/metrics.md), and the one answerability rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rageval_core.dataset import answerability, load_dataset, write_dataset
from rageval_core.errors import DatasetError
from rageval_core.models import GoldSpan

DOCS = [
    {"id": "guide", "text": "Use hybrid search for product codes.\nBM25 finds exact terms."},
    {"id": "faq", "text": "Refunds take five days. Refunds are final.", "title": "FAQ"},
]


def write(tmp_path: Path, questions: str, docs: list[dict] = DOCS) -> Path:
    (tmp_path / "documents.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    path = tmp_path / "dataset.yaml"
    path.write_text(f"name: spans\nversion: 1\ndocuments: documents.jsonl\nquestions:\n{questions}")
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    return info.value.problems


def test_spans_given_by_offsets_and_by_quote_load_to_the_same_ranges(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
  - id: q1
    question: "When hybrid search?"
    reference_answer: "for product codes"
    gold_spans:
      - {doc_id: guide, start: 0, end: 36}
      - {doc_id: guide, text: "BM25 finds exact terms."}
  - id: q2
    question: "How long do refunds take?"
    reference_answer: "five days"
    gold_spans: [{doc_id: faq, text: "five days", start: 13, end: 22}]
""",
    )
    ds = load_dataset(path)
    assert ds.corpus == () and [d.id for d in ds.documents] == ["guide", "faq"]
    assert ds.documents[1].title == "FAQ"
    q1, q2 = ds.questions
    assert q1.gold_spans == (GoldSpan("guide", 0, 36), GoldSpan("guide", 37, 60))
    assert DOCS[0]["text"][37:60] == "BM25 finds exact terms."
    assert q2.gold_spans == (GoldSpan("faq", 13, 22),)
    assert q1.answerable and q1.has_retrieval_gold
    assert q1.gold_labels == ("guide:0-36", "guide:37-60")


def test_a_quote_found_zero_or_several_times_is_a_problem_naming_the_question(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        """\
  - id: q1
    question: "a"
    gold_spans: [{doc_id: faq, text: "Refunds"}]
  - id: q2
    question: "b"
    gold_spans: [{doc_id: faq, text: "refunds take"}]
  - id: q3
    question: "c"
    gold_spans:
      - {doc_id: nowhere, start: 0, end: 3}
      - {doc_id: faq, start: 5, end: 500}
      - {doc_id: faq, start: 0, end: 7, text: "Nope"}
      - {doc_id: faq, start: 0, end: 7}
      - {doc_id: faq, start: 0, end: 7}
""",
    )
    d = str(path)
    assert problems_of(path) == [
        f"{d}:7: question q1: gold_spans[0]: quote 'Refunds' is found more than once in 'faq'"
        " (at 0 and 24): give 'start' and 'end', or a longer quote",
        f"{d}:10: question q2: gold_spans[0]: quote 'refunds take' is not in document 'faq'",
        f"{d}:14: question q3: gold_spans[0]: document 'nowhere' is not in the documents",
        f"{d}:15: question q3: gold_spans[1]: needs 0 <= start < end <= 42 (the length of"
        " 'faq'), got 5, 500",
        f"{d}:16: question q3: gold_spans[2]: the text at 0-7 is 'Refunds', not 'Nope'",
        f"{d}:13: question q3: gold_spans[4]: faq:0-7 is listed twice",
    ]


@pytest.mark.parametrize("quote", ["[]", "{a: 1}", "[x, y]"])
def test_a_quote_that_is_not_text_is_a_problem_with_or_without_offsets(
    tmp_path: Path, quote: str
) -> None:
    """Found by the fuzz suite: a list as 'text' beside offsets reached unicodedata
    (scalars such as 7 read as text here: the loader keeps YAML scalars as strings)."""
    path = write(
        tmp_path,
        f"""\
  - id: q1
    question: "a"
    gold_spans:
      - {{doc_id: faq, start: 0, end: 7, text: {quote}}}
      - {{doc_id: faq, text: {quote}}}
""",
    )
    problems = problems_of(path)
    assert len(problems) == 2
    assert all(
        ": question q1: gold_spans[" in p and "'text' must be the quoted text" in p
        for p in problems
    )


@pytest.mark.parametrize(
    ("fields", "kind", "problem"),
    [
        ({"gold_chunk_ids": ["a"]}, "answerable", None),
        ({"gold_spans": [{}]}, "answerable", None),
        ({"gold_chunk_ids": [], "gold_spans": [{}]}, "answerable", None),
        ({"gold_chunk_ids": []}, "unanswerable", None),
        ({"gold_spans": []}, "unanswerable", None),
        ({"answerable": False}, "unanswerable", None),
        ({"answerable": False, "reference_answer": "r"}, "unanswerable", None),
        ({"gold_chunk_ids": [], "reference_answer": "r"}, "unanswerable", "empty gold list"),
        ({"gold_chunk_ids": ["a"], "answerable": False}, "answerable", "remove one"),
        ({"gold_chunk_ids": [], "answerable": True}, "unanswerable", "'answerable: true'"),
        ({"reference_answer": "r"}, "answerable", None),
        ({}, "reference_free", None),
    ],
)
def test_answerability_rule(fields: dict, kind: str, problem: str | None) -> None:
    args = {"gold_chunk_ids": None, "gold_spans": None, "answerable": None}
    args["reference_answer"] = None
    got_kind, got_problem = answerability(**{**args, **fields})
    assert got_kind == kind
    assert (got_problem is None) == (problem is None)
    if problem:
        assert problem in got_problem


def test_empty_gold_beside_a_reference_answer_names_the_question(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
  - id: q1
    question: "a"
    reference_answer: "five days"
    gold_chunk_ids: []
  - id: q2
    question: "no gold key: retrieval not scored"
    reference_answer: "x"
  - id: q3
    question: "reference-free"
  - id: q4
    question: "declined"
    answerable: "false"
""",
    )
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:8: question q1: an empty gold list beside a reference")
    path.write_text(path.read_text().replace("    gold_chunk_ids: []\n", ""))
    ds = load_dataset(path)
    kinds = [(q.id, q.answerability, q.answerable, q.has_retrieval_gold) for q in ds.questions]
    assert kinds == [
        ("q1", "answerable", True, False),
        ("q2", "answerable", True, False),
        ("q3", "reference_free", True, False),
        ("q4", "unanswerable", False, False),
    ]


def test_hash_covers_the_documents_and_spans_round_trip(tmp_path: Path) -> None:
    q = """\
  - id: q1
    question: "a"
    reference_answer: "five days"
    gold_spans: [{doc_id: faq, text: "five days"}]
  - id: q2
    question: "b"
    answerable: false
    reference_answer: "I don't know"
"""
    for name in "ab":
        (tmp_path / name).mkdir()
    first = load_dataset(write(tmp_path / "a", q))
    edited = [DOCS[0], {**DOCS[1], "text": DOCS[1]["text"] + " "}]
    second = load_dataset(write(tmp_path / "b", q, edited))
    assert first.sha256 != second.sha256
    out = write_dataset(
        tmp_path / "c", "spans", "1", first.questions, first.corpus, documents=first.documents
    )
    assert sorted(p.name for p in out.parent.iterdir()) == ["dataset.yaml", "documents.jsonl"]
    again = load_dataset(out)
    assert again.questions == first.questions and again.sha256 == first.sha256


def test_gold_ids_need_a_corpus_and_spans_need_documents(tmp_path: Path) -> None:
    path = tmp_path / "dataset.yaml"
    (tmp_path / "corpus.jsonl").write_text('{"id": "a#0", "doc_id": "a", "text": "x"}\n')
    path.write_text(
        "name: n\nversion: 1\ncorpus: corpus.jsonl\nquestions:\n"
        "  - {id: q1, question: a, gold_spans: [{doc_id: a, start: 0, end: 1}]}\n"
    )
    assert problems_of(path) == [
        f"{path}:5: question q1: gold_spans need the dataset's 'documents:'"
    ]


@pytest.mark.parametrize(
    "start",
    ["!!int -1000000", "-3", "!!float 3.0", "'²'", "'٣'", "!!int " + "9" * 30, "'1e3'", "true"],
)
def test_an_offset_is_an_integer_from_zero_whatever_tag_wrote_it(tmp_path: Path, start) -> None:
    """`start: !!int -1000000` once validated (the check had no `0 <=`); `'²'` passes
    `str.isdigit` and then crashed `int()`."""
    path = write(
        tmp_path,
        "  - id: q1\n    question: a\n    reference_answer: b\n"
        f"    gold_spans:\n      - {{doc_id: faq, start: {start}, end: 5}}\n",
    )
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:9: question q1: gold_spans[0]: ")
    assert "integers >= 0" in problem or "needs 0 <= start" in problem


def test_control_characters_in_a_document_are_ordinary_characters(tmp_path: Path) -> None:
    """A NUL or a unit separator validates, and a span over it is where it says."""
    docs = [{"id": "bin", "text": "head\x00tail\x1fend and the answer"}, *DOCS]
    path = write(
        tmp_path,
        "  - id: q1\n    question: a\n    reference_answer: b\n"
        '    gold_spans:\n      - {doc_id: bin, text: "tail\\x1fend"}\n',
        docs,
    )
    (q,) = load_dataset(path).questions
    assert q.gold_spans == (GoldSpan("bin", 5, 13),)
