"""A tiny golden dataset, a toy pipeline module and run configs, all as real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

# The toy pipeline under test: question "What is fact N?" -> chunk fN, answer N*7.
# Driven by params only, so the module is the same file in every test folder.
TOY_PIPELINE = """
import os
import time


def build(delay=0.0, fail_word="boom", secret_env=None, timings=True, swap=(),
          slow_from=None, slow_delay=0.0, gate=None, calls=None, hold=None, hold_from=0):
    secret = os.environ.get(secret_env) if secret_env else None
    if gate:  # say this process got this far, then wait for the test to open the gate
        open(f"{gate}.{os.getpid()}.ready", "w").close()
        while not os.path.exists(gate):
            time.sleep(0.02)

    def pipe(question):
        if calls:  # one short O_APPEND write per call: lines never interleave
            with open(calls, "a") as fh:
                fh.write(f"{os.getpid()} {question}\\n")
        n = int(question.rstrip("?").split()[-1]) if "fact" in question else 0
        while hold and n >= hold_from and os.path.exists(hold):
            time.sleep(0.02)
        time.sleep(delay)
        if slow_from is not None and "fact" in question:
            if int(question.rstrip("?").split()[-1]) >= slow_from:
                time.sleep(slow_delay)
        if fail_word in question:
            raise ValueError(f"cannot handle {question!r}" + (f" key={secret}" if secret else ""))
        if "fact" not in question:
            out = {"answer": "I don't know.", "retrieved": [{"id": "f1", "text": "Fact 1 is 7."}]}
        else:
            n = int(question.rstrip("?").split()[-1])
            ids = [f"f{n}", f"f{n % 30 + 1}"]
            if n in swap:
                ids.reverse()
            out = {
                "answer": f"Fact {n} is {n * 7}." + (f" Key {secret}." if secret else ""),
                "retrieved": [{"id": i, "text": f"Fact {i[1:]} is {int(i[1:]) * 7}.", "score": 1.0}
                              for i in ids],
            }
        if timings:
            out.update(retrieval_ms=10.0, generation_ms=20.0, ttft_ms=5.0,
                       input_tokens=1000, output_tokens=100)
        return out

    return pipe
"""


N_QUESTIONS = 32  # the toy dataset: 30 answerable + 2 unanswerable


def journal_lines(path: Path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


def wait_for_lines(path: Path, n: int, proc: subprocess.Popen, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while journal_lines(path) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never journalled enough questions"
        time.sleep(0.02)


class Toy:
    """A project folder: data/dataset.yaml, the toy pipeline module, configs, the CLI."""

    def __init__(self, root: Path):
        self.root = root
        self.results = root / "results"
        (root / "toy_pipeline.py").write_text(TOY_PIPELINE)
        self.dataset()

    def dataset(self, n: int = 30, unanswerable: int = 2, extra: tuple[str, ...] = ()) -> Path:
        """`n` answerable fact questions, `unanswerable` ones, plus `extra` question texts."""
        folder = self.root / "data"
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "corpus.jsonl", "w") as fh:
            for i in range(1, max(n, 30) + 1):
                chunk = {"id": f"f{i}", "doc_id": "facts", "text": f"Fact {i} is {i * 7}."}
                fh.write(json.dumps(chunk) + "\n")
        questions = [
            {
                "id": f"q{i:03d}",
                "question": f"What is fact {i}?",
                "reference_answer": str(i * 7),
                "gold_chunk_ids": [f"f{i}"],
                "tags": ["single-hop"],
            }
            for i in range(1, n + 1)
        ]
        questions += [
            {"id": f"u{i:03d}", "question": f"What colour is sky {i} today?", "gold_chunk_ids": []}
            for i in range(1, unanswerable + 1)
        ]
        questions += [
            {"id": f"x{i:03d}", "question": t, "reference_answer": "x", "gold_chunk_ids": ["f1"]}
            for i, t in enumerate(extra, start=1)
        ]
        path = folder / "dataset.yaml"
        data = {"name": "toy", "version": "1", "corpus": "corpus.jsonl", "questions": questions}
        path.write_text(yaml.safe_dump(data))
        return path

    def config(self, name: str = "toy", params: dict | None = None, **overrides) -> Path:
        """A run config in the project folder; `overrides` replace top-level keys."""
        config = {
            "name": name,
            "dataset": "data/dataset.yaml",
            "pipeline": {"factory": "toy_pipeline:build", "params": params or {}},
            "prices": {"input_per_1k_tokens": 0.002, "output_per_1k_tokens": 0.01},
            "concurrency": 4,
            "tags": ["test"],
        }
        config.update(overrides)
        path = self.root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config))
        return path

    def cli(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start the real `rageval` CLI in a subprocess, in the project folder."""
        return subprocess.Popen(
            [sys.executable, "-m", "rageval_core.cli", *args],
            cwd=self.root,
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


@pytest.fixture
def toy(tmp_path: Path) -> Toy:
    return Toy(tmp_path)


# Racing real writer processes (test_writers.py, test_daily_loop.py)
N_QUESTIONS = 32  # the toy dataset: 30 answerable + 2 unanswerable


def open_gate(procs: list[subprocess.Popen], gate: Path, timeout: float = 90.0) -> list[tuple]:
    """Wait until every process is at the gate or gone, open it; (code, stdout, stderr)."""
    deadline = time.monotonic() + timeout
    while not all(p.poll() is not None or Path(f"{gate}.{p.pid}.ready").exists() for p in procs):
        assert time.monotonic() < deadline, "the writers never reached the gate"
        time.sleep(0.02)
    gate.touch()
    outputs = [p.communicate(timeout=timeout) for p in procs]
    return [(p.returncode, *out) for p, out in zip(procs, outputs, strict=True)]


def called(calls: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in calls.read_text().splitlines()]


def question_ids(folder: Path, name: str = "questions.parquet") -> list[str]:
    return pq.read_table(folder / name).column("question_id").to_pylist()
