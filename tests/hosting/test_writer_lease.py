"""One writer per run on object storage, where each writer stages the run in a private
folder: the lease object in the bucket (real S3 API: moto_server on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import boto3
import yaml

from rageval_core.cli import main
from rageval_core.runs.journal import read_journal
from rageval_core.runs.layout import lease_name
from rageval_core.runs.lease import STALE_ENV
from rageval_core.runs.reading import inspect_run
from rageval_core.runs.remote import upload_run

EXAMPLE = Path(__file__).resolve().parents[2] / "rageval_core" / "example"

# The example pipeline, plus: `gate` (wait at start-up until the file exists, having said
# so), `calls` (log every question asked) and `hold` (from the `hold_after`+1-th question
# on, wait while the file exists).
GATED_PIPELINE = """
import os
import threading
import time

from rageval_core.example.pipeline import build as build_example


def build(gate=None, calls=None, hold=None, hold_after=0, **params):
    pipe = build_example(**params)
    if gate:
        open(f"{gate}.{os.getpid()}.ready", "w").close()
        while not os.path.exists(gate):
            time.sleep(0.02)
    lock, asked = threading.Lock(), [0]

    def call(question):
        with lock:
            asked[0] += 1
            n = asked[0]
        if calls:
            with open(calls, "a") as fh:
                fh.write(question + "\\n")
        while hold and n > hold_after and os.path.exists(hold):
            time.sleep(0.02)
        return pipe(question)

    return call
"""


class Project:
    def __init__(self, root: Path, location: str):
        self.root, self.location = root, location
        (root / "gated_pipeline.py").write_text(GATED_PIPELINE)
        self.gate, self.calls, self.hold = root / "gate", root / "calls.log", root / "hold"

    def config(self, **params) -> Path:
        path = self.root / "run.yaml"
        config = {
            "name": "leased",
            "dataset": str(EXAMPLE / "dataset.yaml"),
            "pipeline": {"factory": "gated_pipeline:build", "params": {"top_k": 5, **params}},
            "concurrency": 2,
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def cli(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "rageval_core.cli", *args, "--no-progress"],
            cwd=self.root,
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def wait_for_lines(path: Path, n: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 90
    while not path.exists() or path.read_text().count("\n") < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never reached {n} lines"
        time.sleep(0.02)


def keys(bucket: str, prefix: str) -> set[str]:
    listing = boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix)
    return {o["Key"].removeprefix(prefix) for o in listing.get("Contents", [])}


def test_two_resumes_of_a_bucket_run_at_once_one_finishes_it(bucket, tmp_path):
    location = f"s3://{bucket}/team"
    p = Project(tmp_path, location)
    config = p.config(gate=str(p.gate), calls=str(p.calls), hold=str(p.hold), hold_after=20)
    # A run that died after 20 questions, uploaded as CI would have left it.
    p.gate.touch()
    p.hold.touch()
    first = p.cli("run", str(config), "--results", "local", "--run-id", "k")
    journal = tmp_path / "local" / "k" / "questions.jsonl"
    wait_for_lines(journal, 20, first)
    first.send_signal(signal.SIGKILL)
    first.communicate()
    done = len(read_journal(str(journal))[0])
    upload_run(tmp_path / "local" / "k", location, "k")
    for f in (p.gate, p.hold, p.calls):
        f.unlink()

    procs = [p.cli("run", str(config), "--results", location, "--resume", "k") for _ in range(2)]
    deadline = time.monotonic() + 90
    while not all(q.poll() is not None or Path(f"{p.gate}.{q.pid}.ready").exists() for q in procs):
        assert time.monotonic() < deadline, "the writers never reached the gate"
        time.sleep(0.02)
    p.gate.touch()
    outcomes = [(q, *q.communicate(timeout=120)) for q in procs]

    winners = [q.pid for q, _, _ in outcomes if q.returncode == 0]
    assert len(winners) == 1, [err for _, _, err in outcomes]
    loser_err = next(err for q, _, err in outcomes if q.returncode != 0)
    assert loser_err.startswith("rageval run: error: run k is already being written by "), loser_err
    assert f" pid {winners[0]} since " in loser_err and len(loser_err.strip().splitlines()) == 1
    asked = p.calls.read_text().splitlines()
    assert len(asked) == len(set(asked)) == 99 - done  # the remaining questions, once each
    info = inspect_run(location, "k")
    assert info.status == "complete" and info.ok, info.problems
    assert lease_name() not in keys(bucket, "team/k/")  # let go after the upload


def test_a_live_lease_refuses_and_a_dead_writers_lease_is_taken_over(
    bucket, tmp_path, monkeypatch, capsys
):
    location = f"s3://{bucket}/team"
    config = Project(tmp_path, location).config()
    owner = {"host": "ci-runner-7", "pid": 4242, "since": "2026-12-01T10:00:00Z", "token": "t"}
    boto3.client("s3").put_object(
        Bucket=bucket, Key=f"team/x/{lease_name()}", Body=json.dumps(owner).encode()
    )
    monkeypatch.chdir(tmp_path)
    args = ["run", str(config), "--results", location, "--run-id", "x", "--no-progress"]

    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "rageval run: error: run x is already being written by ci-runner-7 pid 4242 since "
        "2026-12-01T10:00:00Z, last heartbeat "
    )
    assert err.endswith(
        " s ago (taken over once silent for 120 s); wait for it to finish, or stop it and run "
        "`rageval run CONFIG.yaml --resume x`\n"
    )
    assert keys(bucket, "team/x/") == {lease_name()}  # nothing written

    # No heartbeat for longer than the bound: that writer is dead, the lease is taken over.
    monkeypatch.setenv(STALE_ENV, "1")
    time.sleep(2.5)
    assert main(args) == 0, capsys.readouterr().err
    info = inspect_run(location, "x")
    assert info.status == "complete" and info.ok, info.problems
    assert lease_name() not in keys(bucket, "team/x/")


def test_a_writer_whose_lease_was_taken_over_stops_and_uploads_nothing(bucket, tmp_path):
    location = f"s3://{bucket}/team"
    p = Project(tmp_path, location)
    config = p.config(calls=str(p.calls), hold=str(p.hold), hold_after=5)
    p.hold.touch()
    proc = p.cli(
        "run", str(config), "--results", location, "--run-id", "y",
        env={"RAGEVAL_HEARTBEAT_S": "0.2"},
    )  # fmt: skip
    wait_for_lines(p.calls, 6, proc)
    # Another writer judged this one dead and took the lease over.
    s3 = boto3.client("s3")
    s3.put_object(Bucket=bucket, Key=f"team/y/{lease_name()}", Body=b'{"host": "other"}')
    time.sleep(2.0)  # ten heartbeats: the first renewal fails, the writer knows
    p.hold.unlink()
    _, err = proc.communicate(timeout=120)

    assert proc.returncode == 1, err
    assert "Traceback" not in err and "run y: another writer took the run over" in err, err
    assert keys(bucket, "team/y/") == {lease_name()}  # nothing uploaded, its lease untouched
    assert s3.get_object(Bucket=bucket, Key=f"team/y/{lease_name()}")["Body"].read() == (
        b'{"host": "other"}'
    )
