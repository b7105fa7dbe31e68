"""A short or common judge key (issue 23: `the`, `k`, the `EMPTY`/`ollama` placeholders
local servers take) is not a secret to mask by substring: questions, answers, claims and
the run id stay as written, while the key itself still never reaches a file (it only
travels in the Authorization header). A real key is masked everywhere (rule 2 of
rageval_core/redact.py)."""

from __future__ import annotations

import json

import pytest

import rageval_core
from rageval_core.dataset import example_dataset_path, load_dataset
from rageval_core.redact import MASK, Redactor, can_be_secret
from tests.core.judges.chat_server import ChatServer, echoing

DATASET = example_dataset_path()
BY_TEXT = {q.question: q for q in load_dataset(DATASET).questions}
VERDICTS = {
    "claims": [{"text": "-", "verdict": "supported", "evidence_chunk_id": None, "reason": "ok"}],
    "refused": False,
    "answer_correctness": 1.0,
}


def answer(question: str) -> dict:
    q = BY_TEXT[question]
    return {"answer": q.reference_answer or "I think the key is not known.", "retrieved": []}


@pytest.mark.parametrize("key", ["the", "k", "EMPTY", "ollama", "none"])
def test_a_short_or_placeholder_key_rewrites_no_answer_or_run_id(key, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_TEST_SHORT_KEY", key)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with ChatServer(echoing(VERDICTS)) as srv:
        run = rageval_core.evaluate(
            answer,
            DATASET,
            judge={
                "kind": "openai",
                "base_url": srv.base_url,
                "model": "m",
                "api_key_env": "RAGEVAL_TEST_SHORT_KEY",
            },
            results=tmp_path / "results",
            run_id="killed-the-none-k",
            progress=False,
        )
        sent = srv.requests[0].headers["Authorization"]
    assert sent == f"Bearer {key}"
    assert run.run_id == "killed-the-none-k"
    rows = run.rows.set_index("question_id")
    for q in BY_TEXT.values():
        assert rows.loc[q.id, "question"] == q.question
        assert rows.loc[q.id, "answer"] == answer(q.question)["answer"]
    assert MASK not in " ".join(rows["answer"]) + " ".join(rows["question"])
    manifest = json.loads((tmp_path / "results" / run.run_id / "manifest.json").read_text())
    assert manifest["run_id"] == "killed-the-none-k"


def test_a_real_key_is_still_masked_everywhere():
    key = "sk-real-7f3a9c2e1b"
    r = Redactor([key, "the", "EMPTY"])
    assert r.text(f"the answer quotes {key} and EMPTY") == f"the answer quotes {MASK} and EMPTY"
    assert can_be_secret(key) and not can_be_secret("ollama") and not can_be_secret("short")
