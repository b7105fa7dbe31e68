"""One writer per run, and abandoned runs read as stale: real processes started together.

The toy pipeline's `gate` holds every process that got past start-up at the same point
(its factory), so all of them reach the run folder within milliseconds of each other once
the test opens the gate; `calls` logs every pipeline call, so a question evaluated twice
shows even when the final Parquet looks right.
"""

from __future__ import annotations

import os
import signal
import time

from rageval_core.cli import main
from rageval_core.runs.journal import read_journal
from rageval_core.runs.layout import MANIFEST, lease_name
from rageval_core.runs.lease import STALE_ENV
from rageval_core.runs.reading import inspect_run
from tests.core.runner.conftest import N_QUESTIONS, called, open_gate, question_ids


def assert_refused(outcome: tuple, what: str, winner_pid: int, resume: str) -> None:
    code, _, err = outcome
    assert code == 1, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"rageval run: error: {what} is already being written by " in err, err
    assert f" pid {winner_pid} since " in err and f"`{resume}`" in err, err


def test_four_writers_of_one_new_run_id_one_runs(toy):
    gate, calls = toy.root / "gate", toy.root / "calls.log"
    config = toy.config(params={"gate": str(gate), "calls": str(calls)}, concurrency=2)
    args = ("run", str(config), "--results", "results", "--run-id", "r", "--no-progress")
    procs = [toy.cli(*args) for _ in range(4)]
    outcomes = open_gate(procs, gate)

    winners = [p.pid for p, (code, _, _) in zip(procs, outcomes, strict=True) if code == 0]
    assert len(winners) == 1, [o[2] for o in outcomes]
    for outcome in outcomes:
        if outcome[0] != 0:
            assert_refused(outcome, "run r", winners[0], "rageval run CONFIG.yaml --resume r")
    asked = called(calls)
    assert len(asked) == len(set(asked)) == N_QUESTIONS  # every question evaluated once
    assert sorted(question_ids(toy.results / "r")) == sorted(set(question_ids(toy.results / "r")))
    assert inspect_run(str(toy.results), "r").status == "complete"
    assert not (toy.results / "r" / lease_name()).exists()  # let go at the end


def test_two_resumes_at_once_one_finishes_the_run(toy):
    gate, calls, hold = toy.root / "gate", toy.root / "calls.log", toy.root / "hold"
    params = {"gate": str(gate), "calls": str(calls), "hold": str(hold), "hold_from": 7}
    config = toy.config(params=params, concurrency=2)
    gate.touch()
    hold.touch()  # the first writer answers facts 1-6 (and the unanswerable two), then stalls
    first = toy.cli("run", str(config), "--results", "results", "--run-id", "k", "--no-progress")
    journal = toy.results / "k" / "questions.jsonl"
    deadline = time.monotonic() + 60
    while not journal.exists() or journal.read_text().count("\n") < 6:
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.02)
    first.send_signal(signal.SIGKILL)
    first.communicate()
    done = {r["question_id"] for r in read_journal(str(journal))[0]}
    gate.unlink()
    hold.unlink()
    calls.unlink()

    args = ("run", str(config), "--results", "results", "--resume", "k", "--no-progress")
    procs = [toy.cli(*args) for _ in range(2)]
    outcomes = open_gate(procs, gate)

    winners = [p.pid for p, (code, _, _) in zip(procs, outcomes, strict=True) if code == 0]
    assert len(winners) == 1, [o[2] for o in outcomes]
    loser = next(o for o in outcomes if o[0] != 0)
    assert_refused(loser, "run k", winners[0], "rageval run CONFIG.yaml --resume k")
    asked = called(calls)
    assert len(asked) == len(set(asked)) == N_QUESTIONS - len(done)
    ids = question_ids(toy.results / "k")
    assert len(ids) == len(set(ids)) == N_QUESTIONS


def test_one_writer_per_shard_and_shards_do_not_block_each_other(toy):
    gate, calls = toy.root / "gate", toy.root / "calls.log"
    config = toy.config(params={"gate": str(gate), "calls": str(calls)}, concurrency=2)
    base = ("run", str(config), "--results", "results", "--run-id", "s", "--no-progress")
    procs = [toy.cli(*base, "--shard", k) for k in ("1/2", "1/2", "2/2")]
    outcomes = open_gate(procs, gate)

    assert outcomes[2][0] == 0, outcomes[2][2]  # shard 2/2 is nobody else's
    codes = sorted(o[0] for o in outcomes[:2])
    assert codes == [0, 1], [o[2] for o in outcomes]
    winner = next(p.pid for p, o in zip(procs[:2], outcomes, strict=False) if o[0] == 0)
    loser = next(o for o in outcomes[:2] if o[0] != 0)
    resume = "rageval run CONFIG.yaml --resume s --shard 1/2"
    assert_refused(loser, "shard 1/2 of run s", winner, resume)
    asked = called(calls)
    assert len(asked) == len(set(asked)) == N_QUESTIONS
    info = inspect_run(str(toy.results), "s")
    assert info.status == "complete" and info.ok, info.problems


def test_a_killed_run_reads_as_stale_and_resumes_at_once(toy, monkeypatch):
    hold = toy.root / "hold"
    config = toy.config(params={"hold": str(hold), "hold_from": 5}, concurrency=2)
    hold.touch()  # facts 1-4 and the unanswerable two are answered, then fact 5 blocks
    proc = toy.cli(
        "run", str(config), "--results", "results", "--run-id", "z", "--no-progress",
        env={"RAGEVAL_HEARTBEAT_S": "0.2"},
    )  # fmt: skip
    journal = toy.results / "z" / "questions.jsonl"
    deadline = time.monotonic() + 60
    while not journal.exists() or journal.read_text().count("\n") < 4:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)

    monkeypatch.setenv(STALE_ENV, "3")
    time.sleep(4.0)  # no journal line for longer than the bound: only the heartbeat shows life
    live = inspect_run(str(toy.results), "z")
    assert live.status == "running" and not live.stale, live.last_active
    assert time.time() - live.last_active < 3

    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    time.sleep(3.5)
    dead = inspect_run(str(toy.results), "z")
    assert dead.status == "running" and dead.stale
    monkeypatch.delenv(STALE_ENV)
    assert not inspect_run(str(toy.results), "z").stale  # default bound: 2 minutes

    # The dead writer's lock went with its process: a resume starts at once.
    hold.unlink()
    resumed = toy.cli("run", str(config), "--results", "results", "--resume", "z", "--no-progress")
    _, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    info = inspect_run(str(toy.results), "z")
    assert info.status == "complete" and not info.stale and info.last_active is None


def test_a_run_from_before_heartbeats_is_judged_by_its_journal(toy, monkeypatch):
    config = toy.config()
    assert main(["run", str(config), "--results", str(toy.results), "--run-id", "o"]) == 0
    folder = toy.results / "o"
    manifest = folder / MANIFEST
    manifest.write_text(manifest.read_text().replace('"complete"', '"running"'))
    (folder / "questions.jsonl").write_text("")
    monkeypatch.setenv(STALE_ENV, "60")
    assert not inspect_run(str(toy.results), "o").stale  # written just now
    old = time.time() - 61
    for f in folder.iterdir():
        os.utime(f, (old, old))
    assert inspect_run(str(toy.results), "o").stale
