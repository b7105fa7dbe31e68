"""Runner throughput: the example pipeline with the offline judge, and with the HTTP judge
against a loopback chat-completions server that takes 50 ms per call.

    .venv/bin/python bench/runner_bench.py [--repeat N] [--latency-ms 50]

The HTTP figures are compared with the ideal n × latency / concurrency: what a runner
that only ever waits on the judge would take. Everything is written to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from rageval_core.config import parse_config
from rageval_core.dataset import example_dataset_path, load_dataset
from rageval_core.example.pipeline import build
from rageval_core.judges import make_judge
from rageval_core.models import JudgeInput
from rageval_core.runner import RunOptions, run

ROOT = Path(__file__).resolve().parents[1]
# The judges' test server, in its own process so it does not compete for our GIL. It prints
# its address, then the calls it had so far for each line on its stdin; EOF stops it.
SERVER = """
import json, sys
sys.path.insert(0, sys.argv[1])
from chat_server import ChatServer, Step
with ChatServer([Step(content=json.loads(sys.argv[2]), delay_s=float(sys.argv[3]))]) as srv:
    print(srv.base_url, flush=True)
    for _ in sys.stdin:
        print(srv.calls, flush=True)
"""

VERDICT = {
    "claims": [
        {
            "text": "claim",
            "verdict": "supported",
            "evidence_chunk_id": None,
            "evidence": None,
            "reason": "bench",
        }
    ],
    "refused": False,
    "answer_correctness": 1.0,
}


def start_server(latency_s: float) -> tuple[subprocess.Popen, str]:
    """The loopback judge (`SERVER`, replying `VERDICT` after `latency_s`) and its base URL;
    close its stdin to stop it."""
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SERVER,
            str(ROOT / "tests" / "core" / "judges"),
            json.dumps(VERDICT),
            str(latency_s),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    return server, server.stdout.readline().strip()


def scaled_dataset(folder: Path, repeat: int) -> tuple[Path, int]:
    """The example dataset with every question repeated `repeat` times under new ids."""
    example = example_dataset_path()
    ds = load_dataset(example)
    questions = [
        {
            "id": f"{q.id}-{r}",
            "question": q.question if r == 0 else f"{q.question} ({r})",
            "reference_answer": q.reference_answer,
            "gold_chunk_ids": list(q.gold_chunk_ids),
        }
        for r in range(repeat)
        for q in ds.questions
    ]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "dataset.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "bench",
                "version": "1",
                "corpus": str(example.parent / "corpus.jsonl"),
                "questions": questions,
            }
        )
    )
    return path, len(questions)


def timed_run(folder: Path, dataset: Path, judge: dict, concurrency: int, label: str) -> float:
    config = parse_config(
        {
            "name": label,
            "dataset": str(dataset),
            "pipeline": {"factory": "rageval_core.example.pipeline:build", "params": {"top_k": 5}},
            "judge": judge,
            "concurrency": concurrency,
        },
        folder / f"{label}.yaml",
    )
    start = time.perf_counter()
    # A fresh results folder per run (the judge's reply cache is off: see the judge config).
    run(config, RunOptions(results=str(folder / label), run_id=label, progress=False))
    return time.perf_counter() - start


def judge_alone(judge_config: dict, dataset: Path, concurrency: int) -> float:
    """The same judge calls from a bare thread pool: the floor the runner sits on."""
    pipeline = build(top_k=5, dataset=dataset)
    inputs = [
        JudgeInput(q.question, out.answer, out.retrieved, q.reference_answer)
        for q in pipeline.dataset.questions
        for out in [pipeline(q.question)]
    ]
    judge = make_judge(judge_config)
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(judge.judge, inputs))
    judge.close()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="copies of the example questions")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--rounds", type=int, default=3, help="median of this many runs")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        dataset, n = scaled_dataset(folder, args.repeat)
        print(f"{n} questions, example pipeline (top_k 5); median of {args.rounds} runs")

        for c in (1, 4):
            times = [
                timed_run(folder, dataset, {"kind": "offline"}, c, f"offline-c{c}-{i}")
                for i in range(args.rounds)
            ]
            t = statistics.median(times)
            print(f"offline judge, concurrency {c:>2}: {t:6.2f} s  {n / t:7.0f} questions/s")

        latency = args.latency_ms / 1000
        http_dataset, http_n = scaled_dataset(folder / "http", 2)
        server, base_url = start_server(latency)
        try:
            for c in (1, 16):
                judge = {
                    "kind": "openai",
                    "base_url": base_url,
                    "model": "bench",
                    "concurrency": c,
                    "max_retries": 0,
                    "cache": False,  # every run pays its calls: the server's time is measured
                }
                t = timed_run(folder, http_dataset, judge, c, f"http-c{c}")
                ideal = http_n * latency / c
                alone = judge_alone(judge, http_dataset, c)
                print(
                    f"HTTP judge {args.latency_ms:.0f} ms/call, concurrency {c:>2}: {t:6.2f} s "
                    f"({http_n / t:5.0f} q/s), ideal {ideal:5.2f} s, efficiency {ideal / t:5.1%}; "
                    f"the judge alone on a bare thread pool: {alone:5.2f} s"
                )
        finally:
            server.stdin.close()  # the server exits when its stdin ends
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
