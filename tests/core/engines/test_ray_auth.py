"""Ray's state and token authentication (issue 35): a local `--engine ray` run leaves
`~/.ray/auth_token` (Ray 2.60 turns token auth on for new local clusters), which once made
every cluster test fail; a cluster with token authentication takes its token from
`RAY_AUTH_TOKEN`, and the token reaches no file or log of the run. A question outliving
`--question-timeout` on a Ray worker is its error; the worker is replaced."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

from tests.conftest import import_or_skip_unless_ci
from tests.core.engines.conftest import (
    RAY_PIPELINE,
    RAY_TOKEN,
    RayCluster,
    isolated_ray_env,
    running,
)
from tests.core.runner.conftest import Toy


def ray_run(tmp_path: Path, env: dict[str, str], *args: str, name: str = "r", **params):
    """`rageval run --engine ray ARGS` on the Ray toy project: (process result, toy)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    toy = Toy(tmp_path)
    (tmp_path / "ray_pipeline.py").write_text(RAY_PIPELINE)
    calls = tmp_path / "calls"
    config = toy.config(
        name,
        pipeline={"factory": "ray_pipeline:build", "params": {"calls": str(calls), **params}},
        concurrency=2,
    )
    done = subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", "run", str(config), "--engine", "ray",
         "--run-id", name, "--no-progress", *args],
        cwd=toy.root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return done, toy


def every_file_text(folder: Path) -> str:
    return "".join(
        p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*") if p.is_file()
    )


def test_a_local_ray_run_first_leaves_the_cluster_tests_working(tmp_path, tmp_path_factory):
    import_or_skip_unless_ci("ray", "pip install 'rageval[ray]'")
    # The user's side: a local --engine ray run, auth mode unset as a user has it.
    user = isolated_ray_env(tmp_path)
    del user["RAY_AUTH_MODE"]
    # A short root: Ray's socket paths under it must stay within the 107-byte limit.
    user["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="rt-")
    try:
        local, _ = ray_run(tmp_path / "local", user, name="local")
    finally:
        shutil.rmtree(user["RAY_TMPDIR"], ignore_errors=True)
    assert local.returncode == 0, local.stderr[-3000:]
    assert (tmp_path / "home" / ".ray" / "auth_token").exists()  # what Ray 2.60 leaves

    # The tests' side, in that same home: a cluster and a driver started as the engine
    # tests start theirs (an explicit auth mode) still work.
    cluster = RayCluster(tmp_path_factory.mktemp("rayh", numbered=True), nodes=1)
    cluster.env["HOME"] = user["HOME"]
    with running(cluster):
        after, toy = ray_run(tmp_path / "cluster", cluster.env, "--ray-address", cluster.address)
    assert after.returncode == 0, after.stderr[-3000:]
    assert pq.read_table(toy.results / "r" / "questions.parquet").num_rows == 32


def test_a_token_cluster_takes_the_token_from_the_environment_and_never_writes_it(
    ray_token_cluster: RayCluster, tmp_path
):
    env = ray_token_cluster.env
    done, toy = ray_run(tmp_path, env, "--ray-address", ray_token_cluster.address)
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((toy.results / "r" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["totals"]["n_errors"] == 0
    assert RAY_TOKEN not in done.stdout + done.stderr
    assert RAY_TOKEN not in every_file_text(toy.results)


def test_a_token_cluster_without_the_token_is_one_line(ray_token_cluster: RayCluster, tmp_path):
    env = {k: v for k, v in ray_token_cluster.env.items() if k != "RAY_AUTH_TOKEN"}
    done, _ = ray_run(tmp_path, env, "--ray-address", ray_token_cluster.address)
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "cannot connect to" in last and "Traceback" not in done.stderr, done.stderr[-3000:]


def test_a_question_outliving_its_timeout_on_a_worker_is_its_error(ray_cluster, tmp_path):
    # q005 sleeps 120 s on its first attempt: killed at 5 s, a fresh worker takes over.
    done, toy = ray_run(
        tmp_path, ray_cluster.env, "--ray-address", ray_cluster.address,
        "--question-timeout", "5", hold_first=5,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {
        r["question_id"]: r
        for r in pq.read_table(toy.results / "r" / "questions.parquet").to_pylist()
    }
    assert len(rows) == 32
    assert rows["q005"]["error"].startswith("QuestionTimeout:")
    assert [q for q, r in rows.items() if r["error"]] == ["q005"]
    assert "outlived the question timeout" in done.stderr
