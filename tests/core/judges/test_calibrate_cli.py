"""`rageval calibrate` on a real run folder: results on stdout, warnings on stderr,
`--faithful-min` checked."""

from __future__ import annotations

import pytest

from rageval_core import cli
from rageval_core.models import DatasetRef, JudgeRef, RunManifest
from rageval_core.runs.atomic import atomic_write_json, write_parquet
from rageval_core.runs.manifest import manifest_to_dict
from rageval_core.runs.rows import rows_to_table

RUN_ID = "20260101-000000-test"
ROWS = [
    {"question_id": "q1", "faithfulness": 0.5, "judge_error": None, "claims": []},
    {"question_id": "q3", "faithfulness": 1.0, "judge_error": None, "claims": []},
]


@pytest.fixture
def project(tmp_path):
    """A complete two-shard run whose shard 1 Parquet is corrupt, and question labels."""
    run_dir = tmp_path / "results" / RUN_ID
    manifest = RunManifest(
        run_id=RUN_ID,
        status="complete",
        created_at="2026-01-01T00:00:00Z",
        config={},
        dataset=DatasetRef("d", "1", "0" * 64, 2),
        judge=JudgeRef("offline"),
        shards=2,
    )
    atomic_write_json(run_dir / "manifest.json", manifest_to_dict(manifest))
    rows = [{**r, "run_id": RUN_ID} for r in ROWS]
    write_parquet(run_dir / "questions-0.parquet", rows_to_table(rows))
    (run_dir / "questions-1.parquet").write_bytes(b"PAR1 not parquet")
    labels = tmp_path / "labels.yaml"
    labels.write_text(
        "labels:\n  - {question_id: q1, faithful: false}\n  - {question_id: q3, faithful: true}\n"
    )
    return tmp_path


def calibrate(project, *extra: str) -> int:
    return cli.main(
        [
            "calibrate",
            str(project / "labels.yaml"),
            "--run",
            RUN_ID,
            "--results",
            str(project / "results"),
            *extra,
        ]
    )


def test_warnings_go_to_stderr_and_results_to_stdout(project, capsys):
    assert calibrate(project) == 0
    captured = capsys.readouterr()
    assert "questions-1.parquet: unreadable Parquet" in captured.err
    assert "warning" in captured.err
    assert "warning" not in captured.out and "questions-1.parquet" not in captured.out
    assert "Questions (faithful): 2 labelled, 2 matched" in captured.out


@pytest.mark.parametrize("value", ["-0.1", "1.5", "nan", "inf"])
def test_faithful_min_outside_0_1_is_a_config_error(project, capsys, value):
    assert calibrate(project, f"--faithful-min={value}") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and "--faithful-min" in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["0", "0.5", "1"])
def test_faithful_min_bounds_are_accepted(project, capsys, value):
    assert calibrate(project, "--faithful-min", value) == 0
    assert "Questions (faithful): 2 labelled, 2 matched" in capsys.readouterr().out


def test_library_refuses_faithful_min_outside_0_1(project):
    from rageval_core.errors import ConfigError
    from rageval_core.labels import LabelSet
    from rageval_core.query import judge_reports
    from rageval_core.store.results import ResultsStore

    with (
        ResultsStore(project / "results") as store,
        pytest.raises(ConfigError, match="faithful_min"),
    ):
        judge_reports(store, LabelSet(), faithful_min=2.0)
