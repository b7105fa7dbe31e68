"""A row keeps at most `MAX_TEXT_CHARS` of an answer, a question or a chunk's text
(issue 35: three 50 MB answers took 200 s and 1.73 GB): the rest is cut and counted in
the row (`n_chars_cut`) and the run's totals, whichever door the row came through."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import rageval_core
from rageval_core import models
from rageval_core.models import PipelineOutput, RetrievedChunk, capped
from rageval_core.writer import RunWriter

LIMIT = 10_000
TEXT = "Glaciers carve U-shaped valleys over thousands of years. " * 40


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr(models, "MAX_TEXT_CHARS", LIMIT)


def _dataset(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "documents.yaml").write_text(yaml.safe_dump([{"id": "geo", "text": TEXT}]))
    questions = [
        {"id": f"q{i}", "question": f"How do glaciers shape valleys, case {i}?"} for i in range(n)
    ]
    data = {"name": "sizes", "version": "1", "documents": "documents.yaml", "questions": questions}
    path = folder / "dataset.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _rows(folder: Path) -> dict[str, dict]:
    return {r["question_id"]: r for r in pq.read_table(folder / "questions.parquet").to_pylist()}


def test_a_pipelines_huge_answer_and_chunk_are_cut_and_counted(tmp_path, small_limit):
    huge = "valley " * 150_000  # 1,050,000 characters
    outputs = [
        PipelineOutput(huge, (RetrievedChunk("c1", TEXT[:60] + huge, doc_id="geo"),)),
        {"answer": "U-shaped valleys.", "retrieved": [{"id": "c1", "text": TEXT[:80]}]},
    ]

    def pipeline(question: str) -> object:
        return outputs[int(question.rstrip("?").split()[-1])]

    done = rageval_core.evaluate(
        pipeline,
        _dataset(tmp_path / "data", 2),
        results=tmp_path / "r",
        run_id="big",
        progress=False,
    )
    rows = _rows(done.path)
    big, small = rows["q0"], rows["q1"]
    assert big["answer"] == huge[:LIMIT] and len(big["retrieved_texts"][0]) == LIMIT
    assert big["n_chars_cut"] == 2 * len(huge) + 60 - 2 * LIMIT
    assert big["error"] is None
    assert small["n_chars_cut"] == 0 and small["answer"] == "U-shaped valleys."
    manifest = json.loads((done.path / "manifest.json").read_text())
    assert manifest["totals"]["n_chars_cut"] == big["n_chars_cut"]


def test_a_harness_records_huge_texts_are_cut_and_counted(tmp_path, small_limit):
    huge = "moraine " * 2_000
    with RunWriter("h", results_dir=tmp_path / "r", run_id="w") as w:
        w.add("q0", question=huge, answer=huge, retrieved=[{"id": "c", "text": huge}])
        w.add("q1", question="Short?", answer="Short.", retrieved=None)
    rows = _rows(tmp_path / "r" / "w")
    assert rows["q0"]["question"] == huge[:LIMIT] and rows["q0"]["answer"] == huge[:LIMIT]
    assert rows["q0"]["n_chars_cut"] == 3 * (len(huge) - LIMIT)
    assert rows["q1"]["n_chars_cut"] == 0


def test_a_run_that_cut_nothing_says_nothing_of_it(tmp_path):
    with RunWriter("h", results_dir=tmp_path / "r", run_id="w") as w:
        w.add("q0", question="Short?", answer="Short.")
    manifest = json.loads((tmp_path / "r" / "w" / "manifest.json").read_text())
    assert "n_chars_cut" not in manifest["totals"]


@given(st.text(max_size=60), st.integers(0, 50))
def test_a_cut_keeps_the_start_and_counts_the_rest(text, limit):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(models, "MAX_TEXT_CHARS", limit)
        kept, cut = capped(text)
    assert text.startswith(kept) and len(kept) == min(len(text), limit)
    assert cut == len(text) - len(kept)
