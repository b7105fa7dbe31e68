"""A streamed import holds one batch of rows, not the run: memory does not grow with the
file (issue 23: a 1,000,000-row RAGAS JSONL peaked at 4.8 GB)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pyarrow.parquet as pq

from rageval_core import writer
from rageval_core.importers import import_run
from rageval_core.runs import folder


def _ragas_jsonl(path: Path, n: int) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            row = {
                "user_input": f"What is question number {i}?",
                "response": f"It is {i}. " + "x" * 400,
                "faithfulness": (i % 10) / 10,
            }
            fh.write(json.dumps(row) + "\n")
    return path


def _peak_import(tmp_path: Path, n: int) -> tuple[int, Path]:
    src = _ragas_jsonl(tmp_path / f"r{n}.jsonl", n)
    results = tmp_path / f"results{n}"
    tracemalloc.start()
    try:
        import_run("ragas", src, results_dir=results, run_id="r")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, results / "r" / "questions.parquet"


def test_four_times_the_rows_costs_far_less_than_four_times_the_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(folder, "PART_ROWS", 250)
    monkeypatch.setattr(writer, "PART_ROWS", 250)
    small, _ = _peak_import(tmp_path, 1500)
    large, parquet = _peak_import(tmp_path, 6000)
    assert large < 1.6 * small, (small, large)  # the old writer: about 4x
    table = pq.read_table(parquet)
    assert table.num_rows == 6000
    assert table.column("answer").to_pylist()[5999].startswith("It is 5999.")


def test_rows_written_in_many_batches_read_as_rows_written_in_one(tmp_path, monkeypatch):
    src = _ragas_jsonl(tmp_path / "r.jsonl", 700)
    import_run("ragas", src, results_dir=tmp_path / "one", run_id="r")
    monkeypatch.setattr(folder, "PART_ROWS", 64)
    monkeypatch.setattr(writer, "PART_ROWS", 64)
    import_run("ragas", src, results_dir=tmp_path / "many", run_id="r")
    one = pq.read_table(tmp_path / "one" / "r" / "questions.parquet")
    many = pq.read_table(tmp_path / "many" / "r" / "questions.parquet")
    assert many.schema == one.schema and many.to_pylist() == one.to_pylist()
    totals = [
        json.loads((tmp_path / d / "r" / "manifest.json").read_text())["totals"]
        for d in ("one", "many")
    ]
    assert {k: v for k, v in totals[0].items() if k != "duration_s"} == {
        k: v for k, v in totals[1].items() if k != "duration_s"
    }
    assert not (tmp_path / "many" / "r" / ".parts").exists()
