"""`rageval demo`: write the example runs — a few weeks of history of the example pipeline.

Each run is one config of `example/configs/`, dated at a fixed time, so the history reads
like a team trying one idea a few days apart. Runs are made in replay mode
(`RunOptions.pinned_time`): every timing comes from the example pipeline's cost model,
no git commit is recorded, and the same rageval produces identical runs, which is why the
generated runs can be committed under `results/` and checked by a test.

The stories the runs tell (all true of the figures they produce):
  bm25-top5 → bm25-top20       more context buys recall@20 with input tokens, cost, latency
  bm25-top20 → bm25-rerank-*   a reranker closes the recall@5 vs recall@20 gap
  memorising                   high answer correctness, low faithfulness
  never-refuse                 no false refusals, but every unanswerable question answered
  verbose                      invented details: unfaithful
  chunks-40 → chunks-120       the pipeline's own chunker at two sizes, on the gold spans:
                               bigger chunks cover more of the evidence (span recall) with
                               more text around it (span precision) and more input tokens
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rageval_core.config import load_config
from rageval_core.runner import RunOptions, RunResult, run
from rageval_core.runs.layout import default_run_id
from rageval_core.runs.reading import inspect_run

CONFIGS = Path(__file__).parent / "example" / "configs"


@dataclass(frozen=True)
class DemoRun:
    config: str
    at: datetime


DEMO_RUNS: tuple[DemoRun, ...] = tuple(
    DemoRun(name, datetime(2026, 11, day, hour, 0, tzinfo=UTC))
    for name, day, hour in (
        ("bm25-top5", 2, 9),
        ("bm25-top20", 5, 14),
        ("bm25-rerank-top20", 9, 10),
        ("bm25-rerank-top5", 12, 16),
        ("chunks-40", 13, 10),
        ("chunks-120", 14, 10),
        ("memorising", 16, 11),
        ("never-refuse", 19, 9),
        ("verbose", 23, 15),
    )
)


def demo_run_id(demo: DemoRun) -> str:
    return default_run_id(demo.config, demo.at)


def write_demo(results_dir: str, *, progress: bool = True) -> list[RunResult]:
    """Write every demo run under `results_dir`; a run already there is left alone."""
    written = []
    for demo in DEMO_RUNS:
        run_id = demo_run_id(demo)
        if Path(results_dir, run_id).exists():
            status = inspect_run(results_dir, run_id).status
            print(f"rageval demo: {run_id} already exists ({status}), skipped", file=sys.stderr)
            continue
        config = load_config(CONFIGS / f"{demo.config}.yaml")
        options = RunOptions(
            results=results_dir, run_id=run_id, pinned_time=demo.at, progress=progress
        )
        written.append(run(config, options))
    return written
