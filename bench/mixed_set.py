"""A 20-run results set whose runs do not all have the same metrics, for looking at every
page's defaults (and for `bench/browser_bench.py`) beside the demo's nine uniform runs.

    python bench/mixed_set.py --out /tmp/mixed-20

The runs, oldest first:

- the nine demo runs (`rageval demo`: retrieval, spans for the re-chunked two, generation);
- `questions-only`: production questions without gold — no retrieval figure at all;
- six more example-pipeline runs with other knobs (top_k 3 and 8, chunks of 60 and 90
  words, a reranked top 10, offsets not reported), dated after the demo;
- four runs imported from the other tools' real result files (`tests/fixtures/imports`):
  RAGAS, DeepEval, promptfoo and Inspect — each with its own handful of metrics and no
  retrieval ranks.

Every run is written by the product's own doors (`rageval_core.runner.run` and `rageval
import`), with pinned dates so the set is the same bytes twice. A run already present is
left alone.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT)]

from rageval_core.config import load_config  # noqa: E402
from rageval_core.demo import CONFIGS, write_demo  # noqa: E402
from rageval_core.job import RunOptions  # noqa: E402
from rageval_core.runner import run  # noqa: E402
from rageval_core.runs.layout import default_run_id  # noqa: E402

IMPORTS = ROOT / "tests" / "fixtures" / "imports"
# (run name, base config, pipeline params over the base's, day of December 2026)
VARIANTS = (
    ("questions-only", "questions-only", {}, 1),
    ("bm25-top3", "bm25-top5", {"top_k": 3}, 2),
    ("bm25-top8", "bm25-top5", {"top_k": 8}, 3),
    ("chunks-60", "chunks-40", {"chunk_size": 60}, 4),
    ("chunks-90", "chunks-40", {"chunk_size": 90}, 5),
    ("bm25-rerank-top10", "bm25-rerank-top5", {"top_k": 10}, 6),
    ("no-offsets", "bm25-top5", {"offsets": False}, 7),
)
# (tool, file, day of December 2026)
IMPORTED = (
    ("ragas", IMPORTS / "ragas" / "scores.csv", 8),
    ("deepeval", IMPORTS / "deepeval" / "latest_test_run.json", 9),
    ("promptfoo", IMPORTS / "promptfoo" / "results.json", 10),
    ("inspect", IMPORTS / "inspect" / "fixture.eval", 11),
)


def _day(day: int) -> datetime:
    return datetime(2026, 12, day, 10, 0, tzinfo=UTC)


def build(out: Path) -> list[str]:
    """Write the set under `out`; the run ids, oldest first."""
    out.mkdir(parents=True, exist_ok=True)
    write_demo(str(out), progress=False)
    for name, base, params, day in VARIANTS:
        config = load_config(CONFIGS / f"{base}.yaml")
        pipeline = replace(config.pipeline, params={**config.pipeline.params, **params})
        config = replace(config, name=name, pipeline=pipeline)
        run_id = default_run_id(name, _day(day))
        if not (out / run_id).exists():
            run(config, RunOptions(str(out), run_id, pinned_time=_day(day), progress=False))
    for tool, file, day in IMPORTED:
        run_id = default_run_id(f"{tool}-import", _day(day))
        if not (out / run_id).exists():
            cmd = [sys.executable, "-m", "rageval_core.cli", "import", tool, str(file)]
            cmd += ["--results", str(out), "--run-id", run_id, "--name", f"{tool}-import"]
            subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return sorted(p.name for p in out.iterdir() if (p / "manifest.json").exists())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=Path("/tmp/rageval-mixed-20"))
    args = p.parse_args(argv)
    ids = build(args.out)
    print(f"{len(ids)} runs in {args.out}:")
    for run_id in ids:
        print(f"  {run_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
