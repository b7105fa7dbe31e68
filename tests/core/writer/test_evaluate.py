"""`rageval_core.evaluate`: a notebook's callable through the real runner, no YAML."""

from __future__ import annotations

import json

import rageval_core
from rageval_core.dataset import example_dataset_path, load_dataset
from rageval_core.runs.reading import inspect_run

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
        "factory": "rageval_core.notebook:registered",
        "params": {"pipeline": f"{__name__}:retrieve_gold_first", "top_k": 2},
    }
    assert manifest["judge"]["kind"] == "offline"
    assert inspect_run(str(tmp_path), "nb").ok


def test_evaluate_with_an_http_judge_records_its_verdicts_and_never_its_key(tmp_path, monkeypatch):
    from tests.core.judges.chat_server import ChatServer, echoing

    secret = "sk-test-EVALUATE-0a1b2c3d4e5f"
    monkeypatch.setenv("RAGEVAL_TEST_EVAL_KEY", secret)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # no other test's replies
    verdicts = {
        "claims": [
            {
                "text": "A claim.",
                "verdict": "contradicted",
                "evidence_chunk_id": None,
                "evidence": None,
                "reason": "the chunk says otherwise",
            }
        ],
        "refused": False,
        "answer_correctness": 0.25,
    }
    with ChatServer(echoing(verdicts)) as srv:
        run = rageval_core.evaluate(
            retrieve_gold_first,
            DATASET,
            judge={
                "kind": "openai",
                "base_url": srv.base_url,
                "model": "judge-model",
                "api_key_env": "RAGEVAL_TEST_EVAL_KEY",
            },
            results=tmp_path,
            run_id="judged",
            metrics={"length": {"range": "count"}},
            concurrency=4,
            progress=False,
        )
        calls = srv.requests
    assert len(calls) == len(BY_TEXT)  # one chat-completions call per question, for real
    assert calls[0].headers.get("Authorization") == f"Bearer {secret}"
    answered = run.rows[run.rows["answerable"]]
    assert (answered["faithfulness"] == 0.0).all()
    assert (answered["answer_correctness"] == 0.25).all()
    assert answered["claims"].map(lambda c: c[0]["reason"]).eq("the chunk says otherwise").all()
    for f in (tmp_path / "judged").iterdir():
        assert secret.encode() not in f.read_bytes(), f.name
    manifest = json.loads((tmp_path / "judged" / "manifest.json").read_text())
    assert manifest["judge"]["kind"] == "openai" and manifest["judge"]["model"] == "judge-model"
