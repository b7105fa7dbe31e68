"""Run ids are folder names: no entry point may turn one into a path outside the results."""

from __future__ import annotations

from pathlib import Path

import pytest

from rageval_core import query
from rageval_core.cli import main
from rageval_core.errors import ConfigError, RagevalError, ResultsError
from rageval_core.runs.layout import validate_run_id
from rageval_core.runs.reading import inspect_run
from rageval_core.runs.remote import upload_run

TRAVERSAL = [
    "..",
    ".",
    "../etc",
    "../../../../etc/passwd",
    "/etc/passwd",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e%2f%2e%2e%2f",
    "a/../../b",
    "run\\..\\..\\x",
    "ok-run\x00.txt",
    "C:\\Windows\\win.ini",
    "~root",
    "file:///etc/passwd",
    "s3://other-bucket/x",
    "x" * 200,
    "",
    " ",
    "a..b",
]


@pytest.mark.parametrize("bad", TRAVERSAL)
def test_results_layer_rejects(bad, demo_results):
    with pytest.raises(ResultsError):
        validate_run_id(bad)
    with pytest.raises(ResultsError):
        inspect_run(str(demo_results), bad)
    with pytest.raises(ResultsError):
        upload_run(demo_results, "memory://bucket/x", bad)


@pytest.mark.parametrize("bad", TRAVERSAL)
def test_query_functions_reject(bad, store, helpers, demo_results):
    good = helpers.run_ids(demo_results)[0]
    calls = [
        lambda: store.run_info(bad),
        lambda: query.question_rows(store, bad),
        lambda: query.question_detail(store, bad, "q001"),
        lambda: query.bottom_questions(store, bad, "faithfulness"),
        lambda: query.metric_distribution(store, bad, "faithfulness"),
        lambda: query.rerank_candidates(store, bad),
        lambda: query.compare_runs(store, [good, bad]),
        lambda: query.compare_runs(store, [bad, good]),
        lambda: query.check_run(store, bad),
        lambda: query.check_run(store, good, baseline=bad),
    ]
    for call in calls:
        with pytest.raises((ResultsError, ConfigError)):
            call()


@pytest.mark.parametrize("bad", ["../etc", "/etc/passwd", "a/../../b"])
def test_cross_run_functions_do_not_touch_files(bad, store):
    # These read the derived cache with the id as a bound parameter: nothing matches.
    for call in (
        lambda: query.failure_counts(store, [bad]),
        lambda: query.recall_curve(store, [bad]),
        lambda: query.cost_quality(store, run_ids=[bad]),
    ):
        try:
            assert call().empty
        except RagevalError:
            pass


@pytest.mark.parametrize("bad", ["../../etc", "/etc/passwd", "..%2F..%2Fetc"])
def test_cli_commands_reject(bad, demo_results, tmp_path, helpers, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = helpers.run_ids(demo_results)[0]
    config = Path(__file__).resolve().parents[2] / "rageval_core/example/configs/bm25-top5.yaml"
    res = ["--results", str(demo_results)]
    commands = [
        ["check", bad, *res],
        ["check", good, "--baseline", bad, *res],
        ["compare", good, bad, *res],
        ["report", bad, "--out", str(tmp_path / "r.html"), *res],
        ["run", str(config), "--run-id", bad, "--results", str(tmp_path / "out")],
        ["run", str(config), "--resume", bad, "--results", str(tmp_path / "out")],
    ]
    for argv in commands:
        code = main(argv)
        err = capsys.readouterr().err
        assert code in (1, 2), argv
        assert "invalid run id" in err and len(err.strip().splitlines()) == 1, (argv, err)
    assert not (tmp_path / "r.html").exists()
    assert not any((tmp_path / "out").glob("**/*.parquet"))


@pytest.mark.parametrize("bad", ["../../../../etc/passwd", "/etc/passwd", "..%2F..%2Fetc"])
def test_dashboard_deep_links_reject(bad, demo_results, app, helpers):
    at = app(demo_results, run=bad, baseline=bad, runs=[bad, bad], question="../q")
    at.run()
    assert not at.exception
    for page in helpers.PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        text = " ".join(t for _, _, t in helpers.page_strings(at))
        assert "root:x:0:0" not in text, page
