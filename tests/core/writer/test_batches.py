"""Rows written in batches (part files) read as if the writer had held them all: each
question's last write, in the dataset's order, whatever batch it landed in."""

from __future__ import annotations

import pyarrow.parquet as pq

from rageval_core import writer
from rageval_core.dataset import example_dataset_path, load_dataset
from rageval_core.runs import folder
from rageval_core.writer import RunWriter


def _small_batches(monkeypatch, n: int = 2) -> None:
    monkeypatch.setattr(folder, "PART_ROWS", n)
    monkeypatch.setattr(writer, "PART_ROWS", n)


def _ids_and_answers(path) -> list[tuple[str, str]]:
    rows = pq.read_table(path / "questions.parquet").to_pylist()
    return [(r["question_id"], r["answer"]) for r in rows]


def test_a_question_added_twice_keeps_its_last_answer_at_its_first_place(tmp_path, monkeypatch):
    _small_batches(monkeypatch)
    with RunWriter("h", results_dir=tmp_path, run_id="r") as run:
        for qid, answer in [("b", "1"), ("a", "2"), ("c", "3"), ("b", "4"), ("d", "5")]:
            run.add(qid, answer=answer)
        assert run.done == {"a", "b", "c", "d"}
        run.add("e", answer="6")
        assert "e" in run.done
    assert _ids_and_answers(tmp_path / "r") == [
        ("b", "4"),
        ("a", "2"),
        ("c", "3"),
        ("d", "5"),
        ("e", "6"),
    ]
    assert run.close().totals["n_questions"] == 5


def test_rows_come_out_in_the_dataset_order_across_batches(tmp_path, monkeypatch):
    _small_batches(monkeypatch)
    ds = load_dataset(example_dataset_path())
    ids = [q.id for q in ds.questions][:7]
    with RunWriter("h", results_dir=tmp_path, run_id="r", dataset=ds) as run:
        for qid in reversed(ids):
            run.add(qid, answer=qid, error="boom" if qid == ids[0] else None)
    assert [q for q, _ in _ids_and_answers(tmp_path / "r")] == ids
    assert run.close().totals["n_errors"] == 1
    assert not (tmp_path / "r" / ".parts").exists()


def test_a_failed_writer_resumes_from_its_journal_not_its_parts(tmp_path, monkeypatch):
    _small_batches(monkeypatch)
    run = RunWriter("h", results_dir=tmp_path, run_id="r")
    for i in range(5):
        run.add(f"q{i}", answer=str(i))
    assert run.close(failed=True).totals["n_questions"] == 5
    resumed = RunWriter("h", results_dir=tmp_path, resume="r")
    assert resumed.done == {f"q{i}" for i in range(5)}
    resumed.add("q2", answer="again")
    resumed.add("q5", answer="5")
    assert resumed.close().totals["n_questions"] == 6
    got = dict(_ids_and_answers(tmp_path / "r"))
    assert got["q2"] == "again" and len(got) == 6
