"""For each tool, a run imported from a file that tool wrote (tests/fixtures/imports) shows
on every dashboard page with its own metrics and its origin, compares against a native run
of the same dataset, and gates in `rageval check`."""

from __future__ import annotations

import shutil

import pytest

from rageval_core.cli import main
from rageval_core.dataset import example_dataset_path
from rageval_core.importers import import_run
from tests.core.importers.conftest import CASES, FILES
from tests.dashboard.apptest import figure, no_exception, open_page, texts
from tests.dashboard.conftest import LATEST

# tool -> (fixture, one of its declared metrics, that metric's label)
TOOLS = {
    "promptfoo": ("promptfoo", "correctness", "correctness"),
    "inspect": ("inspect", "includes", "includes"),
    "ragas": ("ragas", "id_based_context_recall", "id_based_context_recall"),
    "deepeval": ("deepeval", "reference_overlap", "Reference Overlap"),
}
NATIVE = LATEST  # a demo run made by `rageval run` on the example dataset
QUESTION = "q001"


@pytest.fixture(params=list(TOOLS))
def imported(request, demo_results, scratch):
    tool = request.param
    kind, metric, label = TOOLS[tool]
    if not FILES[kind].exists():
        pytest.fail(f"{FILES[kind]} is missing: run tests/fixtures/imports/make_fixtures.sh")
    root = scratch / "results"
    shutil.copytree(demo_results, root, ignore=shutil.ignore_patterns(".rageval"))
    run_id = f"zz-imported-{tool}"  # sorts last, but is the newest run by created_at
    import_run(tool, FILES[kind], results_dir=root, run_id=run_id, dataset=example_dataset_path())
    return tool, root, run_id, metric, label


def test_the_imported_run_is_on_runs_with_its_origin_and_metric(app, imported):
    tool, root, run_id, metric, label = imported
    at = no_exception(app(root, metric=metric).run())
    assert at.selectbox(key="runs_metric").value == metric
    assert label in figure(at, 0)["layout"]["title"]["text"]
    table = at.dataframe[0].value
    row = table[table["run_id"] == run_id].iloc[0]
    assert row["origin"] == f"imported from {tool} ({FILES[TOOLS[tool][0]].name})"
    assert set(table.loc[table["run_id"] == NATIVE, "origin"]) == {"rageval run"}
    assert label in [m.label for m in at.metric]  # the latest run's own figure


def test_the_imported_run_opens_on_every_run_page(app, imported):
    tool, root, run_id, metric, label = imported
    diagnose = open_page(app(root, run=run_id), "diagnose")
    assert set(diagnose.dataframe[-1].value["question_id"]) == set(CASES)
    tails = open_page(app(root, run=run_id, metric=metric), "tails")
    assert tails.selectbox(key="tails_metric").value == metric
    assert label in figure(tails, 0)["layout"]["title"]["text"]
    no_exception(open_page(app(root, run=run_id), "retrieval"))
    no_exception(open_page(app(root, metric=metric), "cost"))
    question = open_page(app(root, run=run_id, question=QUESTION), "question")
    assert any("2009" in t for t in texts(question.markdown))  # the imported answer
    assert label in {m.label for m in question.metric}


def test_the_imported_run_compares_against_a_native_run(app, imported):
    tool, root, run_id, metric, _ = imported
    at = open_page(app(root, runs=[NATIVE, run_id], baseline=NATIVE), "compare")
    diffs = [d.value for d in at.dataframe if "key" in d.value.columns]
    diff = next(d for d in diffs if d["key"].eq("config.origin.tool").any())
    origin = diff[diff["key"] == "config.origin.tool"].iloc[0]
    assert origin[run_id] == f'"{tool}"' and origin[NATIVE] == "(not set)"
    (metrics,) = [d.value for d in at.dataframe if "ci_low" in d.value.columns]
    assert "recall@5" in set(metrics["metric"])  # paired over the questions both hold


def test_the_imported_run_gates_in_check(imported, tmp_path, capsys):
    tool, root, run_id, metric, label = imported
    ok, breach = tmp_path / "ok.yaml", tmp_path / "breach.yaml"
    ok.write_text(f"{metric}: {{min: 0.1}}\nrecall_at_5: {{min: 0.5}}\n")
    breach.write_text(f"{metric}: {{min: 1.01}}\n")
    args = ["check", run_id, "--results", str(root)]
    assert main([*args, "--thresholds", str(ok), "--baseline", NATIVE]) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert label in out or metric in out
    assert main([*args, "--thresholds", str(breach)]) == 1
    assert "below min 1.01" in capsys.readouterr().out
