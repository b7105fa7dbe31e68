"""`rageval_core.evaluate`: a notebook's callable through the real runner, no YAML."""

from __future__ import annotations

import json

import rageval_core
from rageval_core import results
from rageval_core.dataset import example_dataset_path, load_dataset

DATASET = example_dataset_path()


def retrieve_gold_first(question: str) -> dict:
    """Answers with the gold chunk of the question at rank 2 (behind a wrong one)."""
    q = BY_TEXT[question]
    gold = list(q.gold_chunk_ids)
    return {
        "answer": q.reference_answer or "I don't know.",
        "retrieved": [{"id": "nope", "text": "x"}, *({"id": g, "text": g} for g in gold)],
        "scores": {"length": float(len(q.reference_answer or ""))},
    }


BY_TEXT = {q.question: q for q in load_dataset(DATASET).questions}


def test_evaluate_runs_a_callable_and_returns_the_run_and_its_rows(tmp_path):
    run = rageval_core.evaluate(
        retrieve_gold_first,
        DATASET,
        results=tmp_path,
        run_id="nb",
        params={"top_k": 2},
        metrics={"length": {"label": "Answer length", "range": "count"}},
        progress=False,
    )
    assert run.run_id == "nb" and run.status == "complete"
    assert len(run.rows) == len(BY_TEXT)
    answerable = run.rows[run.rows["answerable"]]
    assert (answerable["mrr"] == 0.5).all() and answerable["length"].gt(0).all()
    manifest = json.loads((tmp_path / "nb" / "manifest.json").read_text())
    assert manifest["config"]["pipeline"] == {
        "factory": f"{__name__}:retrieve_gold_first",
        "params": {"top_k": 2},
    }
    assert manifest["judge"]["kind"] == "offline"
    assert results.inspect_run(str(tmp_path), "nb").ok
