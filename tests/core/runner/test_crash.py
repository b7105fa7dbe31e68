"""Nothing is lost when a run dies: real subprocesses killed with SIGKILL and SIGINT."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pyarrow.parquet as pq

from rageval_core import results

N_QUESTIONS = 32  # the toy dataset: 30 answerable + 2 unanswerable


def journal_lines(path: Path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


def wait_for_lines(path: Path, n: int, proc, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while journal_lines(path) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never journalled enough questions"
        time.sleep(0.02)


def test_sigkill_keeps_finished_questions_and_resume_finishes_exactly_once(toy):
    config = toy.config(params={"delay": 0.1}, concurrency=2)
    proc = toy.cli("run", str(config), "--results", "results", "--run-id", "k", "--no-progress")
    journal = toy.results / "k" / "questions.jsonl"
    wait_for_lines(journal, 6, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()

    rows, problems = results.read_journal(str(journal))
    done = {r["question_id"] for r in rows}
    assert len(done) >= 6 and not [p for p in problems if "bad line" in p]
    assert len(done) < N_QUESTIONS
    assert json.loads((toy.results / "k" / "manifest.json").read_text())["status"] == "running"

    resumed = toy.cli("run", str(config), "--results", "results", "--resume", "k", "--no-progress")
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    assert f"resuming k: {len(done)} of {N_QUESTIONS} done" in err

    ids = pq.read_table(toy.results / "k" / "questions.parquet").column("question_id").to_pylist()
    assert len(ids) == len(set(ids)) == N_QUESTIONS
    manifest = json.loads((toy.results / "k" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["totals"]["n_questions"] == N_QUESTIONS


def test_ctrl_c_marks_the_run_failed_keeps_the_journal_and_exits_130(toy):
    config = toy.config(params={"delay": 0.1}, concurrency=2)
    proc = toy.cli("run", str(config), "--results", "results", "--run-id", "c", "--no-progress")
    journal = toy.results / "c" / "questions.jsonl"
    wait_for_lines(journal, 4, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)

    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    manifest = json.loads((toy.results / "c" / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    kept = journal_lines(journal)
    assert 4 <= kept < N_QUESTIONS and manifest["totals"]["n_questions"] == kept
    assert results.inspect_run(str(toy.results), "c").status == "failed"

    resumed = toy.cli("run", str(config), "--results", "results", "--resume", "c", "--no-progress")
    _, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    ids = pq.read_table(toy.results / "c" / "questions.parquet").column("question_id").to_pylist()
    assert sorted(ids) == sorted(set(ids)) and len(ids) == N_QUESTIONS
