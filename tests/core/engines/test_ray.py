"""`rageval run --engine ray` on a real two-node Ray cluster (tests/core/engines/conftest.py):
the run spreads over both nodes, a worker killed with `kill -9` mid-question loses nothing,
a killed driver's run resumes, every question is recorded exactly once, rows match a local
run's, and results go to S3 (moto on loopback) from a Ray run.

Few tests on purpose: every driver start costs seconds on 2 cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from rageval_core.cli import main
from rageval_core.config import load_config
from rageval_core.runner import RunOptions, run
from tests.conftest import import_or_skip_unless_ci
from tests.core.engines.conftest import (
    RAY_PIPELINE,
    SECRET,
    SECRET_ENV,
    RayCluster,
    free_port,
)
from tests.core.judges.chat_server import ChatServer, echoing
from tests.core.runner.conftest import Toy

N_QUESTIONS = 32  # the toy dataset: 30 fact questions + 2 unanswerable


def project(
    tmp_path: Path, name: str, concurrency: int, judge: dict | None = None, **params
) -> tuple[Toy, Path, Path]:
    """The toy project with the Ray pipeline; (toy, config path, calls file)."""
    toy = Toy(tmp_path)
    (tmp_path / "ray_pipeline.py").write_text(RAY_PIPELINE)
    calls = tmp_path / f"{name}.calls"
    config = toy.config(
        name,
        pipeline={"factory": "ray_pipeline:build", "params": {"calls": str(calls), **params}},
        concurrency=concurrency,
        judge=judge or {"kind": "offline"},
    )
    return toy, config, calls


def rageval(toy: Toy, cluster: RayCluster, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rageval_core.cli", "run", *args, "--no-progress"],
        cwd=toy.root,
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def calls_of(path: Path) -> list[tuple[str, int, int]]:
    """(node tag, pid, question number) per pipeline call."""
    lines = path.read_text().split("\n") if path.exists() else []
    return [(t, int(p), int(n)) for t, p, n in (line.split() for line in lines if line)]


def wait_until(cond, proc: subprocess.Popen, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the run ended before {what}: {err[-3000:]}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def rows_by_id(path: Path) -> dict[str, dict]:
    rows = pq.read_table(path).to_pylist()
    ids = [r["question_id"] for r in rows]
    assert len(ids) == len(set(ids)) == N_QUESTIONS, sorted(ids)
    return {r["question_id"]: r for r in rows}


def test_run_across_two_nodes_survives_kill_9_of_a_worker_and_matches_a_local_run(
    ray_cluster, tmp_path
):
    params = {"hold_first": 5, "always_dies": 9, "fail_n": 7, "secret_env": SECRET_ENV}
    toy, config, calls = project(tmp_path, "spread", 4, **params)
    address = ["--ray-address", ray_cluster.address]
    proc = rageval(toy, ray_cluster, str(config), "--engine", "ray", *address, "--run-id", "r")

    held = Path(f"{calls}.held")
    wait_until(held.exists, proc, "question 5 started on a worker")
    victim = int(held.read_text())
    assert victim != proc.pid  # a Ray worker process, not the driver
    os.kill(victim, signal.SIGKILL)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-3000:]
    assert "ray: 4 worker(s) on 2 node(s)" in err

    rows = rows_by_id(toy.results / "r" / "questions.parquet")
    made = calls_of(calls)
    assert {tag for tag, _, _ in made} == {"head", "second"}  # both nodes answered
    # Killed once mid-question: asked again on another process, recorded once, no error.
    fifth = [pid for _, pid, n in made if n == 5]
    assert len(fifth) == 2 and fifth[0] == victim != fifth[1]
    assert rows["q005"]["error"] is None and rows["q005"]["answer"] == "Fact 5 is 35."
    # Kills every worker it runs on: tried three times, then an error row, never twice.
    assert len([n for _, _, n in made if n == 9]) == 3
    assert rows["q009"]["error"].startswith("WorkerDied:")
    assert rows["q009"]["failure_type"] == "error"

    # The secret the pipeline echoed is redacted on the driver, as in a local run; it
    # never reaches the results, nor any Ray log (errors are caught on the worker).
    assert rows["q007"]["error"].startswith("ValueError: cannot answer question 7")
    assert SECRET not in rows["q007"]["error"]
    for folder in (toy.results, ray_cluster.temp):
        for f in folder.rglob("*"):
            if f.is_file() and not f.is_socket():
                assert SECRET.encode() not in f.read_bytes(), f
    manifest = json.loads((toy.results / "r" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["config"]["engine"] == "ray"
    assert manifest["totals"]["n_questions"] == N_QUESTIONS

    # The results contract is the local run's: same rows, column for column.
    local = load_config(project(tmp_path, "local", 4, fail_n=7, secret_env=SECRET_ENV)[1])
    os.environ[SECRET_ENV] = SECRET
    try:
        run(local, RunOptions(results=str(toy.results), run_id="l", progress=False))
    finally:
        del os.environ[SECRET_ENV]
    local_rows = rows_by_id(toy.results / "l" / "questions.parquet")
    for qid, row in rows.items():
        if qid == "q009":
            continue
        expected = local_rows[qid]
        if row["error"]:  # no timings from a pipeline that raised: wall time, which varies
            row, expected = dict(row, total_ms=None), dict(expected, total_ms=None)
        assert {**row, "run_id": "l"} == expected, qid


def test_killed_driver_resumes_on_the_cluster_exactly_once(ray_cluster, tmp_path):
    toy, config, calls = project(tmp_path, "driver", 2, delay=0.3)
    address = ["--ray-address", ray_cluster.address]
    proc = rageval(toy, ray_cluster, str(config), "--engine", "ray", *address, "--run-id", "d")
    journal = toy.results / "d" / "questions.jsonl"

    def journalled() -> int:
        return journal.read_text().count("\n") if journal.exists() else 0

    wait_until(lambda: journalled() >= 4, proc, "four questions were journalled")
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    before = {r["question_id"] for r in lines}
    assert 4 <= len(before) < N_QUESTIONS
    asked_before = len(calls_of(calls))

    again = rageval(toy, ray_cluster, str(config), "--engine", "ray", *address, "--resume", "d")
    _, err = again.communicate(timeout=240)
    assert again.returncode == 0, err[-3000:]
    assert f"resuming d: {len(before)} of {N_QUESTIONS} done" in err
    rows = rows_by_id(toy.results / "d" / "questions.parquet")
    assert all(r["error"] is None for r in rows.values())
    # The resumed driver asked only what the journal lacked.
    resumed = {f"q{n:03d}" for _, _, n in calls_of(calls)[asked_before:] if n}
    assert not resumed & before
    assert json.loads((toy.results / "d" / "manifest.json").read_text())["status"] == "complete"


def test_ray_run_writes_its_results_to_s3(ray_cluster, tmp_path):
    boto3 = import_or_skip_unless_ci("boto3", "pip install 'rageval[test]'")
    port = free_port()
    moto = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    s3_env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing-key-id",
        "AWS_SECRET_ACCESS_KEY": "testing-secret-key",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    try:
        s3 = boto3.client(
            "s3",
            endpoint_url=s3_env["AWS_ENDPOINT_URL"],
            aws_access_key_id=s3_env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=s3_env["AWS_SECRET_ACCESS_KEY"],
            region_name=s3_env["AWS_DEFAULT_REGION"],
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                s3.create_bucket(Bucket="ray-results")
                break
            except Exception:
                assert moto.poll() is None and time.monotonic() < deadline, "no moto_server"
                time.sleep(0.2)
        toy, config, calls = project(tmp_path, "s3", 2)
        args = ["--engine", "ray", "--ray-address", ray_cluster.address, "--run-id", "s"]
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rageval_core.cli",
                "run",
                str(config),
                *args,
                "--results",
                "s3://ray-results/team",
                "--no-progress",
            ],
            cwd=toy.root,
            env={**ray_cluster.env, **s3_env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-3000:]
        assert "s3://ray-results/team/s" in out
        listed = s3.list_objects_v2(Bucket="ray-results", Prefix="team/s/")["Contents"]
        keys = {o["Key"] for o in listed}
        assert {"team/s/manifest.json", "team/s/questions.parquet"} <= keys
        body = s3.get_object(Bucket="ray-results", Key="team/s/questions.parquet")["Body"]
        (tmp_path / "s.parquet").write_bytes(body.read())
        rows_by_id(tmp_path / "s.parquet")
        assert len(calls_of(calls)) == N_QUESTIONS  # each asked once, on the cluster
    finally:
        moto.terminate()
        moto.wait(timeout=10)


def test_a_pipeline_that_cannot_build_on_the_workers_is_one_redacted_line(ray_cluster, tmp_path):
    toy, config, _ = project(tmp_path, "broken", 2)
    (tmp_path / "ray_pipeline.py").write_text(
        f"import os\ndef build(calls):\n    raise RuntimeError('no model, key=' + "
        f"os.environ[{SECRET_ENV!r}])\n"
    )
    proc = rageval(
        toy, ray_cluster, str(config), "--engine", "ray", "--ray-address", ray_cluster.address
    )
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 1
    assert err.count("\n") == 1, err  # one line, no Ray traceback
    assert "ray_pipeline:build(**params) failed: RuntimeError: no model" in err
    assert "on Ray node" in err and SECRET not in err
    assert not list(toy.results.rglob("manifest.json"))  # no run was started


def test_engine_flags_are_checked_and_a_missing_ray_says_how_to_install(
    tmp_path, monkeypatch, capsys
):
    toy = Toy(tmp_path)
    config = str(toy.config())
    assert main(["run", config, "--ray-address", "auto"]) == 2
    assert "--ray-address needs --engine ray" in capsys.readouterr().err
    assert main(["run", config, "--engine", "ray", "--ray-worker-gpus", "-1"]) == 2
    assert "--ray-worker-gpus must be between 0 and 1024" in capsys.readouterr().err

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    assert main(["run", config, "--engine", "ray", "--results", str(toy.results)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'rageval[ray]'" in err, err
    assert not toy.results.exists()  # refused before anything was written


def test_a_cluster_that_kills_every_worker_stops_the_run_instead_of_hanging(ray_cluster, tmp_path):
    # One worker: two replacements allowed. q001 kills three workers in turn (recorded as
    # WorkerDied); then no worker is left, and the next question must end the run, not wait.
    toy, config, calls = project(tmp_path, "dying", 1, always_dies=1)
    address = ["--ray-address", ray_cluster.address]
    proc = rageval(toy, ray_cluster, str(config), "--engine", "ray", *address, "--run-id", "x")
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 1, err[-3000:]
    assert err.strip().splitlines()[-1].startswith("rageval run: error: Ray workers keep dying")
    lines = (toy.results / "x" / "questions.jsonl").read_text().splitlines()
    assert [json.loads(line)["question_id"] for line in lines] == ["q001"]
    assert json.loads(lines[0])["error"].startswith("WorkerDied:")
    assert [n for _, _, n in calls_of(calls)] == [1, 1, 1]
    assert json.loads((toy.results / "x" / "manifest.json").read_text())["status"] == "failed"


def test_the_judge_runs_on_the_driver_with_its_key_and_its_reply_cache(ray_cluster, tmp_path):
    key, key_env = "sk-judge-on-driver-only-7f3a9c", "RAGEVAL_RAY_TEST_JUDGE_KEY"
    verdict = {
        "claims": [
            {"text": "c", "verdict": "supported", "evidence_chunk_id": None,
             "evidence": None, "reason": "r"}
        ],
        "refused": False,
        "answer_correctness": 1.0,
    }  # fmt: skip
    with ChatServer(echoing(verdict)) as server:
        judge = {
            "kind": "openai",
            "base_url": server.base_url,
            "model": "m",
            "api_key_env": key_env,
            "max_retries": 0,
        }
        toy, config, _ = project(tmp_path, "judged", 2, judge=judge)
        address = ["--ray-address", ray_cluster.address]
        # The key is in the driver's environment only: the cluster's nodes never had it.
        assert key_env not in ray_cluster.env
        ray_cluster.env[key_env] = key
        try:
            for run_id in ("j1", "j2"):
                proc = rageval(
                    toy, ray_cluster, str(config), "--engine", "ray", *address, "--run-id", run_id
                )
                _, err = proc.communicate(timeout=240)
                assert proc.returncode == 0, err[-3000:]
                if run_id == "j1":
                    first = server.calls
        finally:
            del ray_cluster.env[key_env]
        assert first == N_QUESTIONS
        assert server.calls == first  # the second run was answered by the driver's cache
        assert {r.headers.get("Authorization") for r in server.requests} == {f"Bearer {key}"}
    for run_id in ("j1", "j2"):
        rows = rows_by_id(toy.results / run_id / "questions.parquet")
        assert {r["faithfulness"] for r in rows.values()} == {1.0}
        assert all(r["judge_error"] is None for r in rows.values())
    for f in [*toy.results.rglob("*"), *ray_cluster.temp.rglob("*")]:
        if f.is_file() and not f.is_socket():
            assert key.encode() not in f.read_bytes(), f


def test_workers_the_cluster_cannot_place_are_one_line_not_a_wait_for_ever(ray_cluster, tmp_path):
    toy, config, calls = project(tmp_path, "gpus", 2)
    args = ["--engine", "ray", "--ray-address", ray_cluster.address, "--ray-worker-gpus", "1"]
    ray_cluster.env["RAGEVAL_RAY_START_TIMEOUT"] = "3"
    try:
        proc = rageval(toy, ray_cluster, str(config), *args)
        _, err = proc.communicate(timeout=120)
    finally:
        del ray_cluster.env["RAGEVAL_RAY_START_TIMEOUT"]
    assert proc.returncode == 2, err[-3000:]
    assert err.count("\n") == 1, err
    assert "only 0 of 2 Ray workers started within 3 s" in err and "CPU" in err
    assert not calls.exists()
