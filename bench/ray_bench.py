"""The Ray engine against local threads: N questions, a pipeline that takes 50 ms, and the
HTTP judge against a loopback chat-completions server that takes 50 ms per call.

    .venv/bin/python bench/ray_bench.py [--questions 2000] [--concurrency 8]

Prints, for the same run config:
- local threads (`--engine local`), and Ray on a two-node cluster started here (`ray start
  --head` and `ray start --address`, one CPU each, files under a temporary folder, stopped
  at the end), both against the ideal n × (pipeline + judge) / concurrency;
- Ray's start-up (place the workers, build the pipeline once in each), measured apart by
  opening the engine once, and the run's time after it (total − that start-up);
- Ray's overhead per question: the round trip of one question to a worker whose pipeline
  returns at once, against calling that pipeline in-process.

On 2 shared cores Ray cannot be faster than threads — both wait on sleeps and HTTP, and the
"two nodes" are the same machine — so the point is correctness and overhead, not speed-up:
Ray pays off when the pipeline needs a GPU or more cores than one machine has.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from runner_bench import start_server  # noqa: E402 - the same loopback judge

from rageval_core.config import parse_config  # noqa: E402
from rageval_core.engines import (  # noqa: E402
    LocalEngine,
    PipelineSource,
    RayEngine,
    ask,
    load_pipeline,
)
from rageval_core.runner import RunOptions, run  # noqa: E402
from tests.core.engines.conftest import RayCluster  # noqa: E402 - the tests' own cluster

PIPELINE = """
import time


def build(delay_ms=50.0):
    def pipe(question):
        time.sleep(delay_ms / 1000)
        n = int(question.split()[-1].rstrip("?"))
        return {"answer": f"Fact {n} is {n * 7}.",
                "retrieved": [{"id": f"f{n}", "text": f"Fact {n} is {n * 7}."}],
                "retrieval_ms": delay_ms / 2, "generation_ms": delay_ms / 2}

    return pipe
"""


def project(folder: Path, n: int) -> Path:
    """A dataset of `n` fact questions and the bench pipeline module, in `folder`."""
    with open(folder / "corpus.jsonl", "w") as fh:
        for i in range(1, n + 1):
            fh.write(json.dumps({"id": f"f{i}", "doc_id": "d", "text": f"Fact {i} is {i * 7}."}))
            fh.write("\n")
    questions = [
        {"id": f"q{i:05d}", "question": f"What is fact {i}?", "gold_chunk_ids": [f"f{i}"]}
        for i in range(1, n + 1)
    ]
    data = {"name": "ray-bench", "version": "1", "corpus": "corpus.jsonl", "questions": questions}
    (folder / "dataset.yaml").write_text(yaml.safe_dump(data))
    (folder / "bench_pipeline.py").write_text(PIPELINE)
    return folder / "dataset.yaml"


def config(folder: Path, judge: dict, concurrency: int, delay_ms: float):
    raw = {
        "name": "ray-bench",
        "dataset": "dataset.yaml",
        "pipeline": {"factory": "bench_pipeline:build", "params": {"delay_ms": delay_ms}},
        "judge": judge,
        "concurrency": concurrency,
    }
    return parse_config(raw, folder / "run.yaml")


def timed_run(cfg, folder: Path, label: str, engine) -> float:
    start = time.perf_counter()
    # A fresh results folder per run (the judge's reply cache is off: see the judge config).
    result = run(cfg, RunOptions(results=str(folder / label), progress=False, engine=engine))
    took = time.perf_counter() - start
    assert result.status == "complete" and result.totals["n_errors"] == 0, result.totals
    return took


def startup(cfg, engine: RayEngine, concurrency: int) -> float:
    """Place the workers and build the pipeline in each, then tear them down."""
    source = PipelineSource(cfg.pipeline, cfg.folder, cfg.dataset_path, Path.cwd())
    start = time.perf_counter()
    with engine.open(source, concurrency, lambda _: None):
        took = time.perf_counter() - start
    return took


def round_trips(cfg, engine: RayEngine, reps: int) -> tuple[float, float]:
    """Median ms of one question with a pipeline that returns at once: on a Ray worker
    (one at a time, so nothing overlaps) and called in this process."""
    source = PipelineSource(cfg.pipeline, cfg.folder, cfg.dataset_path, Path.cwd())
    with engine.open(source, 1, lambda _: None) as remote:
        remote("What is fact 1?")  # warm: first call imports on the worker
        ray_ms = []
        for i in range(reps):
            t = time.perf_counter()
            remote(f"What is fact {i + 1}?")
            ray_ms.append((time.perf_counter() - t) * 1000)
    pipeline = load_pipeline(cfg.pipeline, cfg.folder, cfg.dataset_path)
    local_ms = []
    for i in range(reps):
        t = time.perf_counter()
        ask(pipeline, f"What is fact {i + 1}?")
        local_ms.append((time.perf_counter() - t) * 1000)
    return statistics.median(ray_ms), statistics.median(local_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency-ms", type=float, default=50.0, help="pipeline and judge")
    parser.add_argument("--reps", type=int, default=300, help="round trips for the overhead")
    args = parser.parse_args()
    n, c, ms = args.questions, args.concurrency, args.latency_ms

    with tempfile.TemporaryDirectory(prefix="rgb") as tmp:
        folder = Path(tmp)
        project(folder, n)
        os.chdir(folder)
        server, base_url = start_server(ms / 1000)
        judge = {
            "kind": "openai",
            "base_url": base_url,
            "model": "bench",
            "concurrency": c,
            "max_retries": 0,
            "cache": False,  # every run pays its calls: the server's time is measured
        }
        (folder / "ray").mkdir()
        cluster = RayCluster(folder / "ray")
        try:
            cfg = config(folder, judge, c, ms)
            ideal = n * 2 * ms / 1000 / c
            print(
                f"{n} questions, pipeline {ms:.0f} ms + loopback judge {ms:.0f} ms, "
                f"concurrency {c}; ideal n × {2 * ms:.0f} ms / {c} = {ideal:.2f} s"
            )
            local = timed_run(cfg, folder, "local", LocalEngine())
            print(
                f"local threads:      {local:7.2f} s  {n / local:6.1f} q/s  "
                f"ideal/actual {ideal / local:5.1%}"
            )

            t = time.perf_counter()
            cluster.start()
            print(f"two-node Ray cluster started in {time.perf_counter() - t:.1f} s")
            os.environ.update(RAY_TMPDIR=cluster.env["RAY_TMPDIR"], RAY_USAGE_STATS_ENABLED="0")
            import ray

            ray.init(address=cluster.address, logging_level="ERROR")
            engine = RayEngine(cluster.address)
            up = startup(cfg, engine, c)
            total = timed_run(cfg, folder, "ray", engine)
            steady = total - up
            print(
                f"Ray, two nodes:     {total:7.2f} s  {n / total:6.1f} q/s  "
                f"ideal/actual {ideal / total:5.1%}  (start-up {up:.2f} s for {c} workers; "
                f"after it {steady:.2f} s, ideal/actual {ideal / steady:5.1%})"
            )
            print(
                f"Ray / local: {total / local:.2f}× in all, {steady / local:.2f}× after start-up; "
                f"busy time added per question: {(steady - local) * c / n * 1000:+.1f} ms"
            )
            instant = config(folder, judge, 1, 0.0)
            remote_ms, local_ms = round_trips(instant, engine, args.reps)
            print(
                f"one question to a Ray worker and back (0 ms pipeline, median of {args.reps}): "
                f"{remote_ms:.2f} ms, in-process {local_ms:.3f} ms → Ray's overhead "
                f"{remote_ms - local_ms:.2f} ms per question"
            )
            ray.shutdown()
        finally:
            cluster.stop()
            server.stdin.close()  # the server exits when its stdin ends
            server.wait(timeout=10)
            os.chdir(ROOT)
        print(
            "On 2 shared cores the point is correctness and overhead, not speed-up: both "
            "engines wait on sleeps and HTTP, and both 'nodes' are this machine."
        )


if __name__ == "__main__":
    main()
