"""An id like `a..b` is refused by every writer of a run, into a local folder and into a
bucket (moto_server on 127.0.0.1), before anything is written: one rule
(`runs.layout.is_run_id`) for the runner, rescore, the importers, `RunWriter` and the
upload of a staged run."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from rageval_core.cli import main
from rageval_core.errors import ResultsError
from rageval_core.runs.folder import RunFolder
from rageval_core.runs.lease import bucket_lease
from rageval_core.runs.remote import staged, upload_run
from rageval_core.writer import RunWriter
from tests.core.importers.conftest import FILES
from tests.core.rescore.helpers import SOURCE

CONFIG = Path(__file__).resolve().parents[2] / "rageval_core/example/configs/bm25-top5.yaml"
BAD = ["a..b", "..", "x..", "../x", "a/b", ".hidden", "-x", "x" * 129, "a b"]


def commands(results: str, source: Path, judge: Path, bad: str) -> list[list[str]]:
    """Every command that writes a run, told to write run `bad` into `results`."""
    run = ["run", str(CONFIG), "--results", results, "--no-progress"]
    rescore = ["rescore", SOURCE, "--judge", str(judge), "--results", str(source)]
    run_id, resume = f"--run-id={bad}", f"--resume={bad}"  # `-x` is a value, not an option
    return [
        [*run, run_id],
        [*run, resume],
        [*rescore, "--out", results, run_id, "--no-progress"],
        [*rescore, "--out", results, resume, "--no-progress"],
        ["import", "promptfoo", str(FILES["promptfoo"]), "--results", results, run_id],
    ]


def refused(args: list[str], capsys) -> bool:
    code = main(args)
    return code != 0 and "invalid run id" in capsys.readouterr().err


def objects(bucket: str) -> list[str]:
    listed = boto3.client("s3").list_objects_v2(Bucket=bucket)
    return [o["Key"] for o in listed.get("Contents", [])]


@pytest.fixture
def judge(tmp_path) -> Path:
    path = tmp_path / "judge.yaml"
    path.write_text("kind: offline\n")
    return path


@pytest.mark.parametrize("bad", BAD)
def test_every_command_refuses_the_id_into_a_local_folder(bad, demo_copy, judge, tmp_path, capsys):
    results = tmp_path / "out"
    for args in commands(str(results), demo_copy, judge, bad):
        assert refused(args, capsys), args
    assert not results.exists() or not any(results.iterdir())


@pytest.mark.parametrize("bad", BAD)
def test_the_library_writers_refuse_the_id(bad, tmp_path):
    for make in (
        lambda: RunWriter("harness", results_dir=tmp_path, run_id=bad),
        lambda: RunWriter("harness", results_dir=tmp_path, resume=bad),
        lambda: RunFolder(tmp_path, bad),
        lambda: upload_run(tmp_path, "memory://bucket/x", bad),
    ):
        with pytest.raises(ResultsError, match="invalid run id"):
            make()
    assert list(tmp_path.iterdir()) == []


def test_every_command_refuses_the_ids_into_a_bucket(bucket, demo_copy, judge, capsys):
    location = f"s3://{bucket}/results"
    for bad in BAD:
        for args in commands(location, demo_copy, judge, bad):
            assert refused(args, capsys), args
        with pytest.raises(ResultsError, match="invalid run id"):
            bucket_lease(location, bad, None)
    assert objects(bucket) == []


def test_a_staged_folder_named_like_no_run_is_never_uploaded(bucket, tmp_path):
    """The staging folder may hold any folder (a harness wrote there): only run folders go
    up, by the same rule the readers list runs by."""
    location = f"s3://{bucket}/results"
    with staged(location) as stage:
        for name in ("a..b", "x..", "ok-run"):
            (stage.local_root / name).mkdir()
            (stage.local_root / name / "notes.txt").write_text("x")
        urls = stage.upload()
    assert urls == [f"{location}/ok-run"]
    assert objects(bucket) == ["results/ok-run/notes.txt"]
