"""Loading and validating golden datasets: valid files load, broken ones list every problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from rageval_core.dataset import load_dataset
from rageval_core.errors import DatasetError
from rageval_core.models import Chunk, GoldenQuestion


def problems_of(path: Path) -> list[str]:
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    return info.value.problems


def test_valid_dataset_loads_every_field(valid_dataset: Path, chunks: list[dict]) -> None:
    ds = load_dataset(valid_dataset)
    assert (ds.name, ds.version, ds.path) == ("handbook-qa", "4", str(valid_dataset))
    assert ds.questions == (
        GoldenQuestion(
            id="q001",
            question="When should I use hybrid search?",
            reference_answer="When queries contain exact terms such as product codes.",
            gold_chunk_ids=("guide#0", "guide#1"),
            tags=("multi-hop", "user-vocabulary"),
        ),
        GoldenQuestion("q002", "What is the CEO's shoe size?", None, (), ("unanswerable",)),
        # plain YAML scalars keep the text written: 003 is not the integer 3, yes not True
        GoldenQuestion("003", "How long do refunds take?", "yes", ("faq#0",), ()),
    )
    assert ds.corpus == tuple(Chunk(**c) for c in chunks)
    assert ds.corpus[1].version == "2"
    assert [q.answerable for q in ds.questions] == [True, False, True]
    assert len(ds.sha256) == 64


def test_corpus_may_be_a_yaml_list(valid_dataset: Path, chunks: list[dict]) -> None:
    (valid_dataset.parent / "chunks.yml").write_text(
        "- {id: guide#0, doc_id: guide, text: Hybrid search mixes BM25 and vectors.}\n"
        "- id: guide#1\n  doc_id: guide\n  text: Use it for product codes.\n  version: 2\n"
        "- {id: faq#0, doc_id: faq, text: Refunds take five days.}\n"
    )
    text = valid_dataset.read_text().replace("corpus.jsonl", "chunks.yml")
    valid_dataset.write_text(text)
    assert load_dataset(valid_dataset).corpus == tuple(Chunk(**c) for c in chunks)


BROKEN_YAML = """\
name: broken
version: 2
corpus: corpus.jsonl
questions:
  - id: q001
    question: "Fine?"
    gold_chunk_ids: [a#0, x#3]
  - id: q001
    question: "dup"
    gold_chunk_ids: []
  - id: q003
    question: [not, a, string]
    gold_chunk_ids: [a#0]
    tags: multi-hop
  - question: "no id"
    gold_chunk_ids: []
  - id: q005
    question: "no gold"
    tag: [x]
  - id: q006
    question: "twice"
    question: "again"
    gold_chunk_ids:
      - a#0
      - a#0
      - gone#1
  - just a string
  - id: q008
    question: "bad tags"
    gold_chunk_ids: []
    tags: [ok, 7, [nested]]
"""

BROKEN_CORPUS = """\
{"id": "a#0", "doc_id": "a", "text": "alpha"}
{"id": "a#0", "doc_id": "a", "text": "dup"}
{"id": "b#0", "doc_id": "b"}
{"id": "c#0", "doc_id": "c", "text":

[1, 2]
{"id": 7, "doc_id": "d", "text": "t"}
"""


def test_broken_dataset_lists_every_problem_with_file_line_and_question(tmp_path: Path) -> None:
    (tmp_path / "corpus.jsonl").write_text(BROKEN_CORPUS)
    path = tmp_path / "dataset.yaml"
    path.write_text(BROKEN_YAML)
    d, c = str(path), str(tmp_path / "corpus.jsonl")
    tags_msg = "'tags' must hold non-empty strings, found ['nested']"  # 7 is the string '7'
    assert sorted(problems_of(path)) == sorted(
        [
            f"{c}:2: chunk a#0: duplicate chunk id (first at line 1)",
            f"{c}:3: chunk b#0: missing field 'text'",
            f"{c}:4: not valid JSON (Expecting value, column 37)",
            f"{c}:6: chunk: expected a mapping, not a list",
            f"{c}:7: chunk: 'id' must be a string, not a number",
            f"{d}:7: question q001: gold chunk 'x#3' is not in the corpus ({c})",
            f"{d}:8: question q001: duplicate question id (first at line 5)",
            f"{d}:12: question q003: 'question' must be a string, not a list",
            f"{d}:14: question q003: 'tags' must be a list, not a string",
            f"{d}:15: questions[3]: missing field 'id'",
            f"{d}:19: question q005: unknown field 'tag'"
            " (expected one of id, question, reference_answer, gold_chunk_ids, gold_spans,"
            " answerable, tags, stale, stale_reason)",
            f"{d}:22: question q006: field 'question' is given twice",
            f"{d}:23: question q006: gold chunk 'a#0' is listed twice",
            f"{d}:26: question q006: gold chunk 'gone#1' is not in the corpus ({c})",
            f"{d}:27: questions[6]: expected a mapping, not a string",
            f"{d}:31: question q008: {tags_msg}",
        ]
    )


def test_error_message_lists_problems_after_a_summary(tmp_path: Path) -> None:
    path = tmp_path / "dataset.yaml"
    path.write_text("name: x\nversion: 1\nquestions: []\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert info.value.problems == [
        f"{path}:1: dataset: missing field 'corpus' (or 'documents')",
        f"{path}:3: 'questions' is empty",
    ]
    assert str(info.value).splitlines()[1:] == [f"  - {p}" for p in info.value.problems]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "expected a mapping with name, version, corpus, questions; the file is empty"),
        ("- a\n- b\n", "expected a mapping with name, version, corpus, questions; found a list"),
    ],
)
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "dataset.yaml"
    path.write_text(text)
    assert problems_of(path) == [f"{path}: {expected}"]


def test_invalid_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "dataset.yaml"
    path.write_text("name: x\nquestions:\n  - id: q1\n   bad: [unclosed\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}:4:") and "dataset is not valid YAML" in problem


def test_missing_dataset_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    assert problems_of(path) == [f"{path}: cannot read dataset: no such file"]


def test_dataset_that_is_a_directory(tmp_path: Path) -> None:
    assert problems_of(tmp_path) == [f"{tmp_path}: cannot read dataset: is a directory"]


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "dataset.yaml"
    path.write_bytes(b"name: x\nversion: caf\xe9\n")
    assert problems_of(path) == [f"{path}:2: dataset is not UTF-8 (byte 0xe9 at offset 20)"]


def test_unreadable_corpus_is_reported_and_gold_check_skipped(valid_dataset: Path) -> None:
    # a folder where the corpus belongs: unreadable even for root (CI runs as root, where
    # chmod 0 would not stop the read)
    corpus = valid_dataset.parent / "corpus.jsonl"
    corpus.unlink()
    corpus.mkdir()
    assert problems_of(valid_dataset) == [f"{corpus}: cannot read corpus: is a directory"]


def test_missing_corpus_is_the_only_problem(valid_dataset: Path) -> None:
    corpus = valid_dataset.parent / "corpus.jsonl"
    corpus.unlink()
    assert problems_of(valid_dataset) == [f"{corpus}: cannot read corpus: no such file"]


def test_empty_corpus(valid_dataset: Path) -> None:
    corpus = valid_dataset.parent / "corpus.jsonl"
    corpus.write_text("")
    problems = problems_of(valid_dataset)
    assert problems[0] == f"{corpus}: corpus has no chunks"
    assert len(problems) == 4  # and each of the four gold ids is missing


def test_duplicate_json_key_in_corpus(valid_dataset: Path) -> None:
    corpus = valid_dataset.parent / "corpus.jsonl"
    with corpus.open("a") as fh:
        fh.write('{"id": "n#0", "doc_id": "n", "text": "a", "text": "b"}\n')
    assert problems_of(valid_dataset) == [f"{corpus}:4: chunk n#0: field 'text' is given twice"]


def test_other_os_errors_are_reported_with_their_reason(valid_dataset: Path) -> None:
    text = valid_dataset.read_text().replace("corpus: corpus.jsonl", "corpus: corpus.jsonl/x")
    valid_dataset.write_text(text)
    corpus = valid_dataset.parent / "corpus.jsonl" / "x"
    assert problems_of(valid_dataset) == [f"{corpus}: cannot read corpus: Not a directory"]


def test_byte_order_mark_and_crlf_are_accepted(valid_dataset: Path) -> None:
    corpus = valid_dataset.parent / "corpus.jsonl"
    corpus.write_bytes(b"\xef\xbb\xbf" + corpus.read_bytes().replace(b"\n", b"\r\n"))
    valid_dataset.write_bytes(b"\xef\xbb\xbf" + valid_dataset.read_bytes().replace(b"\n", b"\r\n"))
    assert len(load_dataset(valid_dataset).corpus) == 3
