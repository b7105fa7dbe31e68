"""The writer API: same files as `rageval run`, honest NULLs, crash-safe (real kill -9)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rageval_core.dataset import example_dataset_path, load_dataset
from rageval_core.errors import ConfigError, ResultsError, SourceError
from rageval_core.runs.journal import read_journal
from rageval_core.runs.reading import inspect_run
from rageval_core.writer import RunWriter

DATASET = example_dataset_path()
REPO = Path(__file__).resolve().parents[3]


def rows(folder: Path) -> dict[str, dict]:
    return {r["question_id"]: r for r in pq.read_table(folder / "questions.parquet").to_pylist()}


def test_writes_the_files_rageval_run_writes_with_our_retrieval_metrics(tmp_path):
    ds = load_dataset(DATASET)
    q1, q2 = ds.questions[0], ds.questions[1]
    gold = list(q1.gold_chunk_ids)
    with RunWriter(
        "harness", results_dir=tmp_path, dataset=ds, metrics={"tone": {"label": "Tone"}}
    ) as run:
        run.add(q1.id, answer="a", retrieved=["nope", *gold], scores={"tone": 0.25})
        run.add(q2.id, answer="b")  # no retrieved list: retrieval unknown, not a miss
    folder = tmp_path / run.run_id
    assert {p.name for p in folder.iterdir() if not p.name.startswith(".")} == {
        "manifest.json",
        "questions.parquet",
        "summary.json",
    }
    got = rows(folder)
    assert got[q1.id]["mrr"] == 0.5 and got[q1.id]["recall_at_1"] == 0.0
    assert got[q1.id]["recall_at_5"] == 1.0 and got[q1.id]["gold_ranks"][0] == 2
    assert got[q1.id]["tone"] == 0.25 and got[q1.id]["question"] == q1.question
    assert got[q2.id]["mrr"] is None and got[q2.id]["recall_at_5"] is None
    assert got[q2.id]["faithfulness"] is None and got[q2.id]["tone"] is None
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["totals"]["n_questions"] == 2
    assert manifest["config"]["origin"] == {"kind": "writer", "tool": "harness"}
    assert manifest["metrics"]["tone"]["label"] == "Tone"
    assert manifest["dataset"]["sha256"] == ds.sha256
    info = inspect_run(str(tmp_path), run.run_id)
    assert info.ok and info.status == "complete", info.problems


def test_without_a_dataset_gold_is_unknown_and_claims_give_faithfulness(tmp_path):
    with RunWriter("h", results_dir=tmp_path, run_id="r") as run:
        run.add(
            "x1",
            question="Q?",
            answer="A. B.",
            retrieved=[{"id": "c1", "text": "t1"}],
            claims=[
                {"text": "A", "verdict": "supported", "evidence": "t1"},
                {"text": "B", "verdict": "contradicted", "reason": "says not B"},
            ],
        )
        run.add("x2", question="Q2?", answer="A", gold_ids=["c9"], retrieved=["c1"])
    got = rows(tmp_path / "r")
    assert got["x1"]["answerable"] is None and got["x1"]["recall_at_5"] is None
    assert got["x1"]["faithfulness"] == 0.5 and got["x1"]["unsupported_claims"] == ["B"]
    assert got["x1"]["claims"][1]["reason"] == "says not B"
    assert got["x1"]["failure_type"] == "unfaithful"
    assert got["x2"]["recall_at_20"] == 0.0 and got["x2"]["failure_type"] == "retrieval_miss"


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"scores": {"typo": 1.0}}, "undeclared score(s) 'typo'"),
        ({"faithfulness": "high"}, "faithfulness must be a number"),
        ({"claims": [{"text": "a"}]}, "claims[0]: verdict must be one of"),
        ({"retrieved": "c1"}, "retrieved must be a list"),
        ({"colour": "red"}, "unexpected keyword argument 'colour'"),
    ],
)
def test_a_bad_field_names_the_question_and_records_nothing(tmp_path, fields, message):
    with RunWriter("h", results_dir=tmp_path, run_id="r") as run:
        with pytest.raises(SourceError, match="question 'q1'") as err:
            run.add("q1", answer="a", **fields)
        assert message in str(err.value)
        assert run.done == frozenset()
    assert read_journal(str(tmp_path / "r" / "questions.jsonl"))[0] == []


def test_unknown_question_of_the_dataset_is_refused(tmp_path):
    with RunWriter("h", results_dir=tmp_path, dataset=DATASET, run_id="r") as run:
        with pytest.raises(SourceError, match="not in dataset"):
            run.add("no-such-question", answer="a")


def test_an_exception_in_the_loop_marks_the_run_failed_and_resume_finishes_it(tmp_path):
    with pytest.raises(RuntimeError):
        with RunWriter("h", results_dir=tmp_path, run_id="r") as run:
            run.add("a", answer="1")
            raise RuntimeError("harness crashed")
    assert json.loads((tmp_path / "r" / "manifest.json").read_text())["status"] == "failed"
    with RunWriter("h", results_dir=tmp_path, resume="r") as again:
        assert again.done == {"a"}
        again.add("b", answer="2")
    assert sorted(rows(tmp_path / "r")) == ["a", "b"]
    with pytest.raises(ConfigError, match="other settings"):
        RunWriter("h", results_dir=tmp_path, resume="r", metrics={"m": {}})


def test_an_existing_run_is_never_overwritten_and_a_second_writer_is_refused(tmp_path):
    RunWriter("h", results_dir=tmp_path, run_id="r").close()
    with pytest.raises(ResultsError, match="already exists"):
        RunWriter("h", results_dir=tmp_path, run_id="r")
    first = RunWriter("h", results_dir=tmp_path, run_id="s")
    try:
        with pytest.raises(ResultsError, match="already being written"):
            RunWriter("h", results_dir=tmp_path, resume="s")
    finally:
        first.close()


def test_secrets_in_the_config_never_reach_the_files(tmp_path):
    key = "sk-live-0123456789abcdefXYZ"
    with RunWriter("h", results_dir=tmp_path, run_id="r", config={"api_key": key}) as run:
        run.add("q", answer=f"the key is {key}", error=f"HTTP 401 for {key}")
    for p in (tmp_path / "r").iterdir():
        assert key.encode() not in p.read_bytes(), p.name
    got = rows(tmp_path / "r")["q"]  # the Parquet is compressed: look at its values
    assert key not in json.dumps(got, default=str) and "***" in got["answer"]


HARNESS = """
import sys, time
from rageval_core.writer import RunWriter

results, resume = sys.argv[1], sys.argv[2] == "resume"
kw = {"resume": "k"} if resume else {"run_id": "k"}
with RunWriter("loop", results_dir=results, metrics={"s": {}}, **kw) as run:
    for i in range(40):
        qid = f"q{i:02d}"
        if qid in run.done:
            continue
        time.sleep(0.0 if resume else 0.05)
        run.add(qid, question=f"question {i}", answer=str(i), scores={"s": i / 40})
        print("added", qid, flush=True)
"""


def test_kill_9_mid_loop_keeps_every_added_question_and_resume_adds_each_once(tmp_path):
    script = tmp_path / "harness.py"
    script.write_text(HARNESS)
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "res"), "new"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    journal = tmp_path / "res" / "k" / "questions.jsonl"
    deadline = time.monotonic() + 30
    while not journal.exists() or journal.read_text().count("\n") < 8:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate()
    added = out.count("added")
    kept, problems = read_journal(str(journal))
    assert 8 <= len(kept) < 40 and len(kept) >= added and not problems
    assert json.loads((tmp_path / "res" / "k" / "manifest.json").read_text())["status"] == (
        "running"
    )

    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "res"), "resume"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("added") == 40 - len(kept)
    ids = pq.read_table(tmp_path / "res" / "k" / "questions.parquet").column("question_id")
    assert sorted(ids.to_pylist()) == [f"q{i:02d}" for i in range(40)]
    manifest = json.loads((tmp_path / "res" / "k" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["totals"]["n_questions"] == 40
