"""The daily loop in the terminal (issue 14): 1-based shards run by real worker processes,
the headline `rageval run` ends with, and `rageval runs` (a stale run included)."""

from __future__ import annotations

import json
import os
import re
import time

from rageval_core.cli import main
from rageval_core.runs.journal import Journal
from rageval_core.runs.layout import MANIFEST
from rageval_core.runs.lease import STALE_ENV
from rageval_core.runs.reading import inspect_run, read_run_rows
from tests.core.runner.conftest import N_QUESTIONS, called, open_gate, question_ids


def test_two_shard_workers_answer_every_question_exactly_once(toy):
    gate, calls = toy.root / "gate", toy.root / "calls.log"
    config = toy.config(params={"gate": str(gate), "calls": str(calls)}, concurrency=2)
    base = ("run", str(config), "--results", "results", "--run-id", "s", "--no-progress")
    procs = [toy.cli(*base, "--shard", k) for k in ("1/2", "2/2")]
    outcomes = open_gate(procs, gate)

    assert [o[0] for o in outcomes] == [0, 0], [o[2] for o in outcomes]
    asked = called(calls)
    assert len(asked) == len(set(asked)) == N_QUESTIONS
    pids = {line.split(" ", 1)[0] for line in calls.read_text().splitlines()}
    assert len(pids) == 2  # both workers evaluated questions
    a, b = (question_ids(toy.results / "s", f"questions-{k}.parquet") for k in (0, 1))
    assert a and b and not set(a) & set(b) and len(a) + len(b) == N_QUESTIONS
    info = inspect_run(str(toy.results), "s")
    assert info.status == "complete" and info.ok, info.problems
    finals = [o[1] for o in outcomes if o[1].startswith("complete:")]
    assert finals, [o[1] for o in outcomes]  # the last to finish says the run is complete
    assert "open: http://127.0.0.1:8501/diagnose?run=s" in finals[-1]
    for out in (o[1] for o in outcomes):
        if not out.startswith("complete:"):  # the first to finish: its part only
            assert re.search(r"^shard [12]/2 of s finished: \d+ questions", out), out
            assert "1 of 2 shards still missing" in out and "complete:" not in out


def test_the_first_shard_to_finish_says_how_many_are_missing(toy, capsys):
    config = str(toy.config())
    args = ["run", config, "--results", str(toy.results), "--run-id", "m", "--no-progress"]
    assert main([*args, "--shard", "2/3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("shard 2/3 of m finished: ")
    assert "2 of 3 shards still missing (1/3, 3/3)" in out
    assert "complete" not in out.split("still missing")[0]
    assert main([*args, "--shard", "3/3"]) == 0
    assert "1 of 3 shards still missing (1/3)" in capsys.readouterr().out
    assert main([*args, "--shard", "1/3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"complete: shard 1/3 of m — {N_QUESTIONS} questions")
    assert "recall@5" in out and "open: " in out


def test_shard_zero_or_beyond_n_is_one_line_naming_the_value(toy, capsys):
    config = str(toy.config())
    for bad, k in (("0/2", 0), ("3/2", 3)):
        args = ["run", config, "--results", str(toy.results), "--run-id", "z", "--shard", bad]
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and f"--shard {bad}" in err and f"K = {k}" in err, err
    assert not (toy.results / "z").exists()  # refused before anything was written


def test_run_ends_with_headline_deltas_failures_and_link(toy, capsys, monkeypatch):
    monkeypatch.setenv("RAGEVAL_DASHBOARD_URL", "https://evals.example.org/team/")
    common = ["--results", str(toy.results), "--no-progress"]
    assert main(["run", str(toy.config()), "--run-id", "a", *common]) == 0
    first = capsys.readouterr().out
    assert "a: 32 questions (no earlier complete run of this config and dataset version)" in first
    # the same config, now ranking the gold chunk second for facts 1-10: recall@5 stays,
    # MRR drops; a different config name is not "the previous run" of this one
    assert main(["run", str(toy.config(name="other")), "--run-id", "b", *common]) == 0
    capsys.readouterr()
    swapped = toy.config(params={"swap": list(range(1, 31)), "fail_word": "fact 3?"})
    assert main(["run", str(swapped), "--run-id", "c", *common]) == 0
    out = capsys.readouterr().out
    assert "c: 32 questions (vs a)" in out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ")}
    # one question of 30 lost its gold chunk: its paired interval includes 0, so the
    # change is written but not called worse (docs/metrics.md, "Reading a change")
    # recall covers the 30 answerable questions of 32, and says so
    recall = r"recall@5\s+0\.96\d \(30 of 32 questions\)\s+−0\.03\d ~ within noise"
    assert re.search(recall, lines["recall@5"]), out
    assert "failures: error 1" in out
    assert "open: https://evals.example.org/team/diagnose?run=c" in out


def test_runs_lists_newest_first_with_a_stale_run(toy, capsys, monkeypatch):
    common = ["--results", str(toy.results), "--no-progress"]
    assert main(["run", str(toy.config()), "--run-id", "old", *common]) == 0
    # a run whose writer died: manifest says running, journal half written, no heartbeat
    assert main(["run", str(toy.config()), "--run-id", "dead", *common]) == 0
    folder = toy.results / "dead"
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest.update(status="running", created_at="2099-01-01T00:00:00Z", finished_at=None)
    (folder / MANIFEST).write_text(json.dumps(manifest))
    rows = read_run_rows(inspect_run(str(toy.results), "dead"))[0].to_pylist()
    (folder / "questions.parquet").unlink()
    (folder / "summary.json").unlink()
    with Journal(folder / "questions.jsonl") as j:
        for r in rows[:5]:
            j.append(r)
    past = time.time() - 3600
    for p in folder.iterdir():
        os.utime(p, (past, past))
    monkeypatch.setenv(STALE_ENV, "60")
    capsys.readouterr()

    assert main(["runs", "--results", str(toy.results)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:4] == ["run", "status", "created", "questions"]
    assert [ln.split()[:2] for ln in table[1:]] == [["dead", "stale"], ["old", "complete"]]
    assert main(["runs", "--results", str(toy.results), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["status"], r["n_questions"]) for r in data] == [
        ("dead", "stale", 5),
        ("old", "complete", 32),
    ]
    assert data[1]["figures"]["recall_at_5"] == 1.0 and data[1]["dataset"] == "toy v1"
    monkeypatch.setenv(STALE_ENV, "7200")  # the same run with a live writer
    assert main(["runs", "--results", str(toy.results), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] == "running"
