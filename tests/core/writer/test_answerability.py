"""The writer decides `answerable` by the dataset's one rule (`dataset.answerability`): a
question with no gold key is reference-free (NULL) or, with a reference, answerable
without retrieval gold — never a question the pipeline should have declined."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from rageval_core.errors import SourceError
from rageval_core.query import summarize_run
from rageval_core.runs.reading import inspect_run
from rageval_core.writer import RunWriter

QUESTIONS = [
    {"id": "gold", "question": "When?", "reference_answer": "2009", "gold_chunk_ids": ["c1"]},
    {"id": "ref", "question": "Who?", "reference_answer": "Ingrid"},  # no gold key
    {"id": "free", "question": "Where?"},  # no gold key, no reference
    {"id": "decline", "question": "Shoe size?", "gold_chunk_ids": []},
]


@pytest.fixture
def dataset(tmp_path) -> Path:
    chunks = [{"id": f"c{i}", "doc_id": "d", "text": f"text {i}"} for i in (1, 2)]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in chunks))
    path = tmp_path / "dataset.yaml"
    data = {"name": "mixed", "version": "1", "corpus": "corpus.jsonl", "questions": QUESTIONS}
    path.write_text(yaml.safe_dump(data))
    return path


def _write(tmp_path: Path, dataset: Path, refused: bool) -> dict[str, dict]:
    with RunWriter("h", results_dir=tmp_path / "results", dataset=dataset, run_id="r") as run:
        for q in QUESTIONS:
            run.add(q["id"], answer="an answer", retrieved=["c1", "c2"], refused=refused)
    table = pq.read_table(tmp_path / "results" / "r" / "questions.parquet")
    return {r["question_id"]: r for r in table.to_pylist()}


def test_a_question_without_gold_is_not_a_missed_refusal(tmp_path, dataset) -> None:
    got = _write(tmp_path, dataset, refused=False)
    assert {q: r["answerable"] for q, r in got.items()} == {
        "gold": True,
        "ref": True,
        "free": None,
        "decline": False,
    }
    assert {q: r["failure_type"] for q, r in got.items()} == {
        "gold": "ok",
        "ref": "ok",  # no retrieval gold: retrieval is passed over, never a miss
        "free": "ok",
        "decline": "missed_refusal",
    }
    assert got["ref"]["recall_at_5"] is None and got["ref"]["gold_ranks"] == []
    s = summarize_run(inspect_run(str(tmp_path / "results"), "r"))
    assert (s["n_answerable"], s["n_unanswerable"], s["n_reference_free"]) == (2, 1, 1)
    assert s["missed_refusal_rate"] == 1.0  # the one question to decline, not three


def test_declining_a_reference_free_question_is_no_false_refusal(tmp_path, dataset) -> None:
    got = _write(tmp_path, dataset, refused=True)
    assert got["free"]["failure_type"] == "ok"
    assert got["ref"]["failure_type"] == "false_refusal"
    assert got["decline"]["failure_type"] == "ok"


def test_without_a_dataset_the_given_gold_and_reference_decide(tmp_path) -> None:
    with RunWriter("h", results_dir=tmp_path, run_id="r") as run:
        run.add("a", question="Q?", reference="R", answer="x")
        run.add("b", question="Q?", answer="x")
        run.add("c", question="Q?", gold_ids=[], answer="x", refused=False)
        with pytest.raises(SourceError, match="question 'd': an empty gold list beside a ref"):
            run.add("d", question="Q?", gold_ids=[], reference="R", answer="x")
    got = {
        r["question_id"]: r for r in pq.read_table(tmp_path / "r" / "questions.parquet").to_pylist()
    }
    assert [got[q]["answerable"] for q in "abc"] == [True, None, False]
    assert got["c"]["failure_type"] == "missed_refusal" and "d" not in got
