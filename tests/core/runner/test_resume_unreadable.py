"""`--resume` of a run whose files cannot be read: one line naming the file, exit 1."""

from __future__ import annotations

import shutil

import pytest

from rageval_core.cli import main


def resume(toy, run_id: str, capsys) -> tuple[int, str]:
    code = main(
        [
            "run",
            str(toy.config()),
            "--results",
            str(toy.results),
            "--resume",
            run_id,
            "--no-progress",
        ]
    )
    return code, capsys.readouterr().err


def one_line_naming(err: str, name: str) -> None:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("rageval run: error: ") and name in err, err


@pytest.fixture
def finished(toy, capsys):
    """A complete run `r` of the toy config."""
    args = ["run", str(toy.config()), "--results", str(toy.results), "--run-id", "r"]
    assert main([*args, "--no-progress"]) == 0
    capsys.readouterr()
    return toy.results / "r"


def test_manifest_that_is_a_folder(toy, finished, capsys):
    (finished / "manifest.json").unlink()
    (finished / "manifest.json").mkdir()
    code, err = resume(toy, "r", capsys)
    assert code == 2
    one_line_naming(err, "manifest.json")
    assert "cannot read" in err


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", "\xff\xfe"])
def test_manifest_that_is_not_a_manifest(toy, finished, capsys, text):
    (finished / "manifest.json").write_bytes(text.encode("latin-1"))
    code, err = resume(toy, "r", capsys)
    assert code == 2
    one_line_naming(err, "manifest.json")


def test_corrupt_final_parquet(toy, finished, capsys):
    (finished / "questions.parquet").write_bytes(b"PAR1 this is not parquet")
    code, err = resume(toy, "r", capsys)
    assert code == 2
    one_line_naming(err, "questions.parquet")


def test_parquet_that_is_a_folder(toy, finished, capsys):
    parquet = finished / "questions.parquet"
    parquet.unlink()
    parquet.mkdir()
    code, err = resume(toy, "r", capsys)
    assert code == 2
    one_line_naming(err, "questions.parquet")
    shutil.rmtree(parquet)
