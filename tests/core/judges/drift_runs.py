"""Runs of one config judged by a loopback chat server that says which model served each
reply (issue 32 item 5, "judge drift"): the project and the server the judge tests and
the Judge page's tests share."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import yaml

from rageval_core.cli import main
from tests.core.judges.chat_server import ChatServer, Request, Step, echoing

APP = """
ANSWERS = {answers!r}


def build():
    def pipeline(question):
        answer = ANSWERS[question]
        return {{"answer": answer, "retrieved": [{{"id": "museum#1", "text": answer}}]}}

    return pipeline
"""
QUESTIONS = {
    "q1": ("When did the museum open?", "The museum opened in 1998."),
    "q2": ("Where is the museum?", "The museum is in Lyon."),
    "q3": ("How many floors has it?", "The building has three floors."),
}
CLAIM = {"verdict": "unsupported", "evidence_chunk_id": None, "evidence": None, "reason": "s"}
_ECHO = echoing({"claims": [CLAIM], "refused": False, "answer_correctness": 0.5})


class Serving:
    """A chat server whose replies say `model` (and `fingerprint`) served them: a test
    sets them between runs, as a provider moves a model name to other weights."""

    def __init__(self, model: str | None = "judge-a", fingerprint: str | None = None):
        self.model = model
        self.fingerprint = fingerprint
        self.server = ChatServer(self._reply)

    def _reply(self, n: int, request: Request) -> Step:
        return replace(_ECHO(n, request), model=self.model, fingerprint=self.fingerprint)

    def __enter__(self) -> Serving:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)


def project(folder: Path, serving: Serving, name: str = "museum", **judge: object) -> Path:
    """A dataset, an app and a run config judged by `serving`'s server (`judge` adds or
    overrides judge keys, e.g. `revision`, `cache`); the config's path."""
    folder.mkdir(parents=True, exist_ok=True)
    questions = [
        {"id": qid, "question": q, "reference_answer": ref} for qid, (q, ref) in QUESTIONS.items()
    ]
    text = " ".join(ref for _, ref in QUESTIONS.values())
    (folder / "documents.jsonl").write_text(json.dumps({"id": "museum", "text": text}))
    dataset = {"name": "museum", "version": "1", "documents": "documents.jsonl"}
    (folder / "dataset.yaml").write_text(yaml.safe_dump({**dataset, "questions": questions}))
    answers = {q: ref for q, ref in QUESTIONS.values()}
    (folder / "drift_app.py").write_text(APP.format(answers=answers))
    config = {
        "name": name,
        "dataset": "dataset.yaml",
        "pipeline": {"factory": "drift_app:build"},
        "judge": {
            "kind": "openai",
            "base_url": serving.server.base_url,
            "model": "judge-model",
            "max_retries": 0,
            "metrics": ["faithfulness", "answer_correctness"],
            **judge,
        },
    }
    path = folder / f"{name}.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def run(config: Path, results: Path, run_id: str) -> None:
    """`rageval run` of `config` into `results` as `run_id`."""
    args = ["run", str(config), "--run-id", run_id, "--results", str(results), "--no-progress"]
    assert main(args) == 0
