"""Deadlines on the pipeline (issue 35): a question that hangs is that question's error,
the first Ctrl-C stops in a bounded time, an app's `sys.exit()` costs one question.

Real `rageval run` subprocesses on the toy pipeline; every wait is bounded, so a run that
would hang fails the test in seconds (and is killed)."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pyarrow.parquet as pq
import pytest

from rageval_core.config import load_config
from rageval_core.errors import ConfigError
from tests.core.runner.conftest import N_QUESTIONS, journal_lines, wait_for_lines


def finish(proc: subprocess.Popen, limit_s: float) -> tuple[str, str, float]:
    """(stdout, stderr, seconds) of `proc`; fails, killing it, if it outlives `limit_s`."""
    start = time.monotonic()
    try:
        out, err = proc.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"the run was still going after {limit_s} s")
    return out, err, time.monotonic() - start


def rows(toy, run_id: str) -> dict[str, dict]:
    table = pq.read_table(toy.results / run_id / "questions.parquet").to_pylist()
    return {r["question_id"]: r for r in table}


def test_a_hung_question_times_out_and_the_run_goes_on(toy):
    hold = toy.root / "hold"
    hold.touch()  # q029 and q030 wait on it for as long as it exists: for ever, here
    config = toy.config(params={"hold": str(hold), "hold_from": 29}, concurrency=2)
    proc = toy.cli(
        "run", str(config), "--results", "results", "--run-id", "t", "--no-progress",
        "--question-timeout", "1",
    )  # fmt: skip
    out, err, took = finish(proc, limit_s=60)
    print(f"run with 2 hung questions, --question-timeout 1: {took:.2f} s")
    assert proc.returncode == 0, err
    got = rows(toy, "t")
    assert len(got) == N_QUESTIONS
    hung = {q for q, r in got.items() if r["error"]}
    assert hung == {"q029", "q030"}
    assert all("QuestionTimeout" in got[q]["error"] and "1 s" in got[q]["error"] for q in hung)
    # the pool kept its size: the other questions were answered, none waited on the hung
    assert all(r["answer"] for q, r in got.items() if q not in hung)


def test_the_config_timeout_applies_and_is_recorded(toy):
    hold = toy.root / "hold"
    hold.touch()
    config = toy.config(
        pipeline={
            "factory": "toy_pipeline:build",
            "params": {"hold": str(hold), "hold_from": 30},
            "timeout_s": 0.5,
        },
        concurrency=4,
    )
    proc = toy.cli("run", str(config), "--results", "results", "--run-id", "c", "--no-progress")
    _, err, _ = finish(proc, limit_s=60)
    assert proc.returncode == 0, err
    assert "QuestionTimeout" in rows(toy, "c")["q030"]["error"]
    manifest = json.loads((toy.results / "c" / "manifest.json").read_text())
    assert manifest["config"]["pipeline"]["timeout_s"] == 0.5


@pytest.mark.parametrize("value", [0, -1, "10", True, float("inf")])
def test_a_bad_timeout_names_the_file_and_key(toy, value):
    config = toy.config(pipeline={"factory": "toy_pipeline:build", "timeout_s": value})
    with pytest.raises(ConfigError) as err:
        load_config(config)
    assert str(config) in str(err.value) and "pipeline.timeout_s" in str(err.value)


def test_a_bad_question_timeout_flag_is_exit_2(toy):
    proc = toy.cli("run", str(toy.config()), "--question-timeout", "0")
    _, err, _ = finish(proc, limit_s=60)
    assert proc.returncode == 2 and "--question-timeout" in err and "Traceback" not in err


def test_first_ctrl_c_on_a_hung_pipeline_exits_in_bounded_time_keeping_what_finished(toy):
    hold = toy.root / "hold"
    hold.touch()
    config = toy.config(params={"hold": str(hold), "hold_from": 3}, concurrency=2)
    proc = toy.cli(
        "run", str(config), "--results", "results", "--run-id", "i", "--no-progress",
        env={"RAGEVAL_INTERRUPT_GRACE_S": "1"},
    )  # fmt: skip
    journal = toy.results / "i" / "questions.jsonl"
    wait_for_lines(journal, 2, proc)
    time.sleep(0.3)  # q003 and q004 now hang
    proc.send_signal(signal.SIGINT)
    _, err, took = finish(proc, limit_s=20)
    print(f"first Ctrl-C on a hung pipeline, grace 1 s: exit after {took:.2f} s")
    assert proc.returncode == 130, err
    assert "abandoned 2 question(s) still running after 1 s" in err
    assert journal_lines(journal) == 2
    assert json.loads((toy.results / "i" / "manifest.json").read_text())["status"] == "failed"

    hold.unlink()  # the pipeline answers again: --resume finishes the run
    resumed = toy.cli("run", str(config), "--results", "results", "--resume", "i", "--no-progress")
    _, err, _ = finish(resumed, limit_s=60)
    assert resumed.returncode == 0, err
    assert "resuming i: 2 of" in err and len(rows(toy, "i")) == N_QUESTIONS


EXITING_PIPELINE = """
import sys


def build():
    def pipe(question):
        if question == "What is fact 3?":
            sys.exit(4)
        if question == "What is fact 4?":
            raise KeyboardInterrupt("raised by the app")
        n = question.rstrip("?").split()[-1]
        return {"answer": f"answer {n}", "retrieved": []}

    return pipe
"""


@pytest.mark.parametrize("timeout", [None, "30"])
def test_system_exit_and_keyboard_interrupt_from_the_pipeline_are_its_errors(toy, timeout):
    (toy.root / "exiting.py").write_text(EXITING_PIPELINE)
    config = toy.config(pipeline={"factory": "exiting:build"})
    more = ("--question-timeout", timeout) if timeout else ()
    proc = toy.cli("run", str(config), "--results", "results", "--run-id", "x", *more)
    _, err, _ = finish(proc, limit_s=60)
    assert proc.returncode == 0, err
    got = rows(toy, "x")
    assert len(got) == N_QUESTIONS
    assert got["q003"]["error"].startswith("SystemExit: 4")
    assert got["q004"]["error"].startswith("KeyboardInterrupt: raised by the app")
    assert sum(1 for r in got.values() if r["error"]) == 2
