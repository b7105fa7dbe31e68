"""`rageval rescore` of a demo run (99 questions): the offline judge, and the HTTP judge
against a loopback chat-completions server that takes 50 ms per call — with a cold reply
cache, then again into another results folder with the cache warm.

    .venv/bin/python bench/rescore_bench.py [--latency-ms 50] [--concurrency 16] [--rounds 3]

The cold HTTP figure is compared with the ideal n × latency / concurrency; the warm one
must make zero calls (the server counts them). Everything is written to a temporary
folder, the reply cache included (XDG_CACHE_HOME points there).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from runner_bench import start_server

from rageval_core.cli import main as rageval
from rageval_core.demo import DEMO_RUNS, demo_run_id


def timed(*args: str) -> float:
    start = time.perf_counter()
    assert rageval(["rescore", *args, "--no-progress"]) == 0
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3, help="median of this many rescores")
    args = parser.parse_args()
    source = demo_run_id(DEMO_RUNS[0])

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["XDG_CACHE_HOME"] = str(folder / "cache")
        results = folder / "results"
        assert rageval(["demo", "--results", str(results)]) == 0
        n = json.loads((results / source / "manifest.json").read_text())["totals"]["n_questions"]
        base = [source, "--results", str(results), "--concurrency", str(args.concurrency)]
        print(f"rescore of {source} ({n} questions), concurrency {args.concurrency}")

        offline = folder / "offline.yaml"
        offline.write_text("kind: offline\n")
        t = statistics.median(
            timed(*base, "--judge", str(offline), "--run-id", f"off-{i}")
            for i in range(args.rounds)
        )
        print(f"offline judge: {t:6.2f} s  {n / t:6.0f} questions/s")

        latency = args.latency_ms / 1000
        server, base_url = start_server(latency)
        judge = folder / "judge.yaml"
        judge.write_text(
            json.dumps(
                {
                    "kind": "openai",
                    "base_url": base_url,
                    "model": "bench",
                    "concurrency": args.concurrency,
                    "max_retries": 0,
                }
            )
        )
        try:
            cold = timed(*base, "--judge", str(judge), "--run-id", "http-cold")
            warm = timed(
                *base, "--judge", str(judge), "--out", str(folder / "elsewhere"), "--run-id", "w"
            )
        finally:
            server.stdin.write("\n")
            server.stdin.flush()
            calls = int(server.stdout.readline())
            server.stdin.close()
            server.wait(timeout=10)
        ideal = n * latency / args.concurrency
        print(
            f"HTTP judge {args.latency_ms:.0f} ms/call, cold cache: {cold:6.2f} s "
            f"(ideal {ideal:5.2f} s, efficiency {ideal / cold:5.1%})"
        )
        print(f"HTTP judge, warm cache into another folder: {warm:6.2f} s")
        print(f"calls made by the server over both rescores: {calls} (questions: {n})")


if __name__ == "__main__":
    main()
