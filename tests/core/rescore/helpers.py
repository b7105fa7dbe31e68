"""Helpers of the rescore tests: the source run and the scripted judge's replies."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rageval_core.demo import DEMO_RUNS, demo_run_id
from tests.core.judges.chat_server import ChatServer, Request, Step

SOURCE = demo_run_id(DEMO_RUNS[0])
VERDICTS = ("supported", "unsupported", "contradicted")


def verdict_of(question: str) -> str:
    """The scripted judge's verdict for a question: fixed per question, all three used."""
    return VERDICTS[hashlib.sha256(question.encode()).digest()[0] % 3]


def reply(n: int, request: Request, delay_s: float = 0.0) -> Step:
    """A valid judge reply for any request: one claim quoting the answer, its verdict
    `verdict_of(question)`, evidence the first retrieved chunk."""
    seen = json.loads(request.body["messages"][1]["content"])
    chunks = seen["retrieved_chunks"]
    claim = {
        "text": f"Claim of: {seen['answer'][:60]}",
        "verdict": verdict_of(seen["question"]),
        "evidence_chunk_id": chunks[0]["id"] if chunks else None,
        "evidence": chunks[0]["text"][:40] if chunks else None,
        "reason": "scripted",
    }
    body = {"claims": [claim], "refused": False, "answer_correctness": 0.75}
    return Step(content=body, usage=(200, 30), delay_s=delay_s)


def judge_yaml(folder: Path, server: ChatServer, **extra) -> Path:
    """A JUDGE.yaml for the scripted server (prices so the judge cost is not zero)."""
    config = {
        "kind": "openai",
        "base_url": server.base_url,
        "model": "judge-model",
        "max_retries": 0,
        "prices": {"input_per_1k_tokens": 0.01, "output_per_1k_tokens": 0.03},
        "metrics": ["faithfulness", "answer_correctness"],  # what the scripted replies hold
        **extra,
    }
    path = folder / "judge.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path
