"""Nothing is lost when a run dies: real subprocesses killed with SIGKILL and SIGINT."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pyarrow.parquet as pq

from rageval_core.runs.journal import read_journal
from rageval_core.runs.reading import inspect_run
from tests.core.runner.conftest import N_QUESTIONS, journal_lines, wait_for_lines


def test_sigkill_keeps_finished_questions_and_resume_finishes_exactly_once(toy):
    config = toy.config(params={"delay": 0.1}, concurrency=2)
    proc = toy.cli("run", str(config), "--results", "results", "--run-id", "k", "--no-progress")
    journal = toy.results / "k" / "questions.jsonl"
    wait_for_lines(journal, 6, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()

    rows, problems = read_journal(str(journal))
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
    assert inspect_run(str(toy.results), "c").status == "failed"

    resumed = toy.cli("run", str(config), "--results", "results", "--resume", "c", "--no-progress")
    _, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    ids = pq.read_table(toy.results / "c" / "questions.parquet").column("question_id").to_pylist()
    assert sorted(ids) == sorted(set(ids)) and len(ids) == N_QUESTIONS


def test_second_ctrl_c_abandons_the_questions_in_flight_without_waiting(toy):
    # q001, q002 answer at once; every later question takes a minute, so a run that waited
    # for its questions in flight (on the second Ctrl-C, or at interpreter exit) would
    # outlast the timeout below by far.
    config = toy.config(params={"slow_from": 3, "slow_delay": 60.0}, concurrency=2)
    proc = toy.cli("run", str(config), "--results", "results", "--run-id", "a", "--no-progress")
    journal = toy.results / "a" / "questions.jsonl"
    wait_for_lines(journal, 2, proc)
    time.sleep(0.3)  # q003 and q004 are now in their minute-long sleep
    proc.send_signal(signal.SIGINT)
    first = proc.stderr.readline()
    assert "interrupted: finishing the questions in flight" in first, first
    interrupted_at = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("the second Ctrl-C still waited for the questions in flight") from None
    assert time.monotonic() - interrupted_at < 15
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "abandon" in err, err

    manifest = json.loads((toy.results / "a" / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    assert journal_lines(journal) == 2 and manifest["totals"]["n_questions"] == 2
    assert inspect_run(str(toy.results), "a").status == "failed"
