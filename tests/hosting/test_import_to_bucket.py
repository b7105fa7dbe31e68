"""`rageval import … --results s3://…`: the run is written whole locally, then uploaded
manifest last, against a real S3 API (moto_server on 127.0.0.1)."""

from __future__ import annotations

from rageval_core import query
from rageval_core.cli import main
from tests.core.importers.conftest import FILES


def test_import_writes_one_complete_run_into_a_bucket(bucket, tmp_path, capsys):
    location = f"s3://{bucket}/imports"
    args = ["import", "promptfoo", str(FILES["promptfoo"]), "--results", location]
    assert main([*args, "--run-id", "pf"]) == 0
    assert f"{location}/pf" in capsys.readouterr().out
    with query.ResultsStore(location, read_only=True, cache_dir=tmp_path / "c") as store:
        (info,) = store.runs()
        assert info.run_id == "pf" and info.status == "complete" and not store.problems
        assert info.manifest.config["origin"]["tool"] == "promptfoo"
        overview = query.runs_overview(store)
        assert overview["n_questions"].tolist() == [10]
    assert main([*args, "--run-id", "pf"]) == 2  # never overwrites a run in the bucket
    assert "already exists" in capsys.readouterr().err
