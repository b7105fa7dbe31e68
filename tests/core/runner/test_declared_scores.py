"""A run config may declare metrics; the pipeline returns them as `scores` and they become
columns of the run's rows, figures of its summary, and entries of its manifest."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from rageval_core.config import load_config
from rageval_core.errors import ConfigError
from rageval_core.runner import RunOptions, run

SCORING = """
def build(score="relevancy"):
    def pipe(question):
        n = int(question.rstrip("?").split()[-1]) if "fact" in question else 0
        out = {"answer": f"Fact {n} is {n * 7}.",
               "retrieved": [{"id": f"f{max(n, 1)}", "text": f"Fact {n} is {n * 7}."}]}
        if n == 2:
            out["scores"] = {score: 0.5}
        elif n == 3:
            out["scores"] = {"relevancy": "high"}
        else:
            out["scores"] = {"relevancy": n / 100, "toxicity": 0.0}
        return out
    return pipe
"""
METRICS = {
    "relevancy": {"label": "answer relevancy"},
    "toxicity": {"label": "toxicity", "direction": "lower"},
}


def _run(toy, run_id: str, **params):
    (toy.root / "scoring.py").write_text(SCORING)
    path = toy.config(
        name=run_id, pipeline={"factory": "scoring:build", "params": params}, metrics=METRICS
    )
    return run(load_config(path), RunOptions(results=str(toy.results), run_id=run_id))


def test_declared_scores_become_columns_figures_and_manifest_entries(toy):
    _run(toy, "s")
    folder = toy.results / "s"
    rows = {r["question_id"]: r for r in pq.read_table(folder / "questions.parquet").to_pylist()}
    assert rows["q010"]["relevancy"] == pytest.approx(0.1) and rows["q010"]["toxicity"] == 0.0
    assert rows["q002"]["toxicity"] is None  # not returned for that question: NULL
    # a non-numeric score is an error of that question, naming it
    assert rows["q003"]["error"].startswith("PipelineError: question 'q003': score")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["metrics"]["toxicity"]["direction"] == "lower"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["declared"]["relevancy"] is not None


def test_an_undeclared_score_is_a_pipeline_error_naming_the_question(toy):
    _run(toy, "u", score="relevancy_typo")
    rows = {
        r["question_id"]: r
        for r in pq.read_table(toy.results / "u" / "questions.parquet").to_pylist()
    }
    assert "question 'q002'" in rows["q002"]["error"]
    assert "undeclared score(s) 'relevancy_typo'" in rows["q002"]["error"]


def test_a_hostile_declaration_in_the_config_is_refused(toy):
    path = toy.config(metrics={'x"; DROP TABLE --': {}})
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "lowercase letters" in str(err.value)
