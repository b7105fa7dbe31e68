"""Results on S3 through fsspec, against a real S3 API (moto_server on 127.0.0.1).

Several CI jobs upload runs into one bucket prefix; the query layer and `rageval check`
read them from there, and a read-only store never writes into the bucket.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest

from rageval_core import query
from rageval_core.runs.layout import MANIFEST
from rageval_core.runs.reading import inspect_run, list_runs
from rageval_core.runs.remote import upload_run

EXAMPLE = Path(__file__).resolve().parents[2] / "rageval_core" / "example" / "configs"


def objects(bucket: str) -> dict[str, str]:
    """Every key in the bucket with its ETag: a write anywhere changes this."""
    s3 = boto3.client("s3")
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        out.update({o["Key"]: o["ETag"] for o in page.get("Contents", [])})
    return out


def rageval(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=os.environ.copy(),
        timeout=120,
    )


def upload_demo(demo_results: Path, location: str) -> list[str]:
    ids = sorted(p.name for p in demo_results.iterdir() if not p.name.startswith("."))
    for run_id in ids:
        upload_run(demo_results / run_id, location, run_id)
    return ids


def test_endpoint_comes_from_standard_variables(bucket):
    # No endpoint passed anywhere: s3fs must pick up AWS_ENDPOINT_URL via botocore.
    from rageval_core.runs.layout import filesystem

    fs, root = filesystem(f"s3://{bucket}/x")
    fs.pipe(f"{root}/probe.txt", b"ok")
    assert "x/probe.txt" in objects(bucket)


def test_ci_jobs_upload_runs_and_query_layer_reads_them_all(bucket, demo_results, tmp_path):
    location = f"s3://{bucket}/team/results"
    demo_ids = upload_demo(demo_results, location)
    # Two more CI jobs, each `rageval run --results s3://…` on its own machine.
    for name, run_id in [("bm25-top5", "ci-job-a"), ("bm25-rerank-top5", "ci-job-b")]:
        out = rageval(
            "run",
            str(EXAMPLE / f"{name}.yaml"),
            "--results",
            location,
            "--run-id",
            run_id,
            "--no-progress",
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr
        assert f"{location}/{run_id}" in out.stdout
    assert not any(tmp_path.iterdir()), "the run must not leave files in the working folder"

    all_ids = sorted(demo_ids + ["ci-job-a", "ci-job-b"])
    runs = list_runs(location)
    assert [r.run_id for r in runs] == all_ids
    assert all(r.ok and r.status == "complete" for r in runs), [r.problems for r in runs]

    before = objects(bucket)
    with query.ResultsStore(location, read_only=True, cache_dir=tmp_path / "cache") as store:
        overview = query.runs_overview(store)
        assert sorted(overview["run_id"]) == all_ids
        assert not store.problems
        for run_id in all_ids:
            page = query.question_rows(store, run_id, query.QuestionFilter(), limit=500)
            assert page.total == 99
        detail = query.question_detail(store, "ci-job-a", page.rows["question_id"].iloc[0])
        assert detail.question_id == page.rows["question_id"].iloc[0]
        curve = query.recall_curve(store)
        assert set(curve["run_id"]) == set(all_ids)
        comparison = query.compare_runs(store, ["ci-job-a", "ci-job-b"])
        assert comparison is not None
    assert objects(bucket) == before, "a read-only store wrote into the bucket"


def test_upload_puts_manifest_last(bucket, demo_results, monkeypatch):
    import s3fs

    order: list[str] = []
    real_put = s3fs.S3FileSystem.put_file

    def recording_put(self, lpath, rpath, *args, **kwargs):
        order.append(rpath.rsplit("/", 1)[-1])
        return real_put(self, lpath, rpath, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "put_file", recording_put)
    run_id = next(p.name for p in sorted(demo_results.iterdir()) if not p.name.startswith("."))
    upload_run(demo_results / run_id, f"s3://{bucket}/r", run_id)
    assert order[-1] == MANIFEST
    assert order.index("summary.json") > order.index("questions.parquet")


def test_sharded_run_across_two_jobs(bucket, tmp_path):
    location = f"s3://{bucket}/sharded"
    config = str(EXAMPLE / "bm25-top5.yaml")
    first = rageval(
        "run",
        config,
        "--results",
        location,
        "--run-id",
        "nightly",
        "--shard",
        "1/2",
        "--no-progress",
        cwd=tmp_path,
    )
    assert first.returncode == 0, first.stderr
    assert "1 of 2 shards still missing (2/2)" in first.stdout
    assert inspect_run(location, "nightly").status == "running"  # shard 2/2 still missing
    second = rageval(
        "run",
        config,
        "--results",
        location,
        "--run-id",
        "nightly",
        "--shard",
        "2/2",
        "--no-progress",
        cwd=tmp_path,
    )
    assert second.returncode == 0, second.stderr
    info = inspect_run(location, "nightly")
    assert info.status == "complete" and info.ok, info.problems
    with query.ResultsStore(location, read_only=True, cache_dir=tmp_path / "c") as store:
        assert query.question_rows(store, "nightly", query.QuestionFilter()).total == 99


def test_new_runs_appear_after_refresh(bucket, demo_results, tmp_path):
    location = f"s3://{bucket}/live"
    ids = sorted(p.name for p in demo_results.iterdir() if not p.name.startswith("."))
    upload_run(demo_results / ids[0], location, ids[0])
    with query.ResultsStore(location, read_only=True, cache_dir=tmp_path / "c") as store:
        assert [r.run_id for r in store.runs()] == ids[:1]
        # A CI job uploads through another client while the dashboard keeps its store open.
        for key in (demo_results / ids[1]).iterdir():
            boto3.client("s3").upload_file(str(key), bucket, f"live/{ids[1]}/{key.name}")
        store.refresh()
        assert [r.run_id for r in store.runs()] == ids[:2]


def test_check_against_the_bucket(bucket, demo_results, capsys):
    from rageval_core.cli import main

    location = f"s3://{bucket}/gate"
    ids = upload_demo(demo_results, location)
    before = objects(bucket)
    assert main(["check", ids[3], "--baseline", ids[2], "--results", location]) in (0, 1)
    assert "recall@5" in capsys.readouterr().out
    md = main(
        ["check", ids[3], "--baseline", "latest", "--format", "markdown", "--results", location]
    )
    assert md in (0, 1)
    assert "|" in capsys.readouterr().out
    assert main(["check", "no-such-run", "--results", location]) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert objects(bucket) == before


def test_unreachable_bucket_is_one_line_error(s3_endpoint, tmp_path):
    out = rageval("check", "x1", "--results", "s3://no-such-bucket-here/p", cwd=tmp_path)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr


@pytest.mark.parametrize("bad", ["../escape", "/abs", "a/b"])
def test_upload_refuses_unsafe_run_ids(bucket, tmp_path, bad):
    from rageval_core.errors import ResultsError

    with pytest.raises(ResultsError):
        upload_run(tmp_path, f"s3://{bucket}/p", bad)


def test_demo_writes_into_a_bucket(bucket, tmp_path, capsys):
    from rageval_core.cli import main
    from rageval_core.demo import DEMO_RUNS, demo_run_id

    location = f"s3://{bucket}/demo"
    assert main(["demo", "--results", location, "--no-progress"]) == 0
    assert f"uploaded to {location}" in capsys.readouterr().out
    with query.ResultsStore(location, read_only=True, cache_dir=tmp_path / "c") as store:
        runs = store.runs()
        assert sorted(r.run_id for r in runs) == sorted(demo_run_id(d) for d in DEMO_RUNS)
        assert {r.status for r in runs} == {"complete"} and not store.problems


GATED_PIPELINE = """
import os
import time
from pathlib import Path

from rageval_core.example.pipeline import build as build_example


def build(**params):
    pipe = build_example(**params)
    gate = os.environ.get("TEST_GATE")

    def gated(question):
        if gate:
            Path(gate + ".started").touch()
            while Path(gate).exists():
                time.sleep(0.05)
        return pipe(question)

    return gated
"""


def test_sharded_run_completes_when_the_first_started_shard_finishes_last(bucket, tmp_path):
    # Shard 0 starts (seeing no other shard), shard 1 starts and finishes, then shard 0
    # finishes: only shard 0 can see that both are done, from the bucket, not its start-up
    # download. It must write summary.json and the complete manifest.
    import json

    import yaml

    location = f"s3://{bucket}/sharded-late"
    (tmp_path / "gated_pipeline.py").write_text(GATED_PIPELINE)
    config = yaml.safe_load((EXAMPLE / "bm25-top5.yaml").read_text())
    config["dataset"] = str((EXAMPLE / config["dataset"]).resolve())
    config["pipeline"]["factory"] = "gated_pipeline:build"
    (tmp_path / "gated.yaml").write_text(yaml.safe_dump(config))
    gate = tmp_path / "gate"
    gate.touch()

    def shard(k: int, env: dict[str, str]) -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rageval_core.cli",
                "run",
                "gated.yaml",
                "--results",
                location,
                "--run-id",
                "nightly",
                "--shard",
                f"{k + 1}/2",  # the CLI numbers shards from 1
                "--no-progress",
            ],
            cwd=tmp_path,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    first = shard(0, {"TEST_GATE": str(gate)})
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "gate.started").exists():  # shard 0 is evaluating questions
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "shard 0 never started"
            time.sleep(0.05)
        second = shard(1, {})
        out, err = second.communicate(timeout=120)
        assert second.returncode == 0, err
        assert inspect_run(location, "nightly").summary_file is None  # shard 0 still running
    finally:
        gate.unlink()
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err

    s3 = boto3.client("s3")
    manifest = json.loads(
        s3.get_object(Bucket=bucket, Key="sharded-late/nightly/manifest.json")["Body"].read()
    )
    assert manifest["status"] == "complete", manifest
    assert manifest["totals"]["n_questions"] == 99
    info = inspect_run(location, "nightly")
    assert info.status == "complete" and info.ok, info.problems
    assert info.summary_file is not None, "the last shard to finish wrote no summary.json"
    assert len(info.parquet_files) == 2
    with query.ResultsStore(location, read_only=True, cache_dir=tmp_path / "c") as store:
        assert query.question_rows(store, "nightly", query.QuestionFilter()).total == 99
