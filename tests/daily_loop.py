"""A results folder with a history for the daily-loop tests: more runs of the demo's
`bm25-top5` config in which question q001 flips between ok and incorrect (a known flaky
question) with a changed answer — real Parquet, manifests and summaries, written the way
the runner writes them."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from rageval_core.query import summarize_run
from rageval_core.runs.atomic import atomic_write_json, write_parquet
from rageval_core.runs.layout import MANIFEST, SUMMARY
from rageval_core.runs.reading import inspect_run
from rageval_core.runs.rows import rows_to_table

SOURCE = "20261102-090000-bm25-top5"
QUESTION = "q001"
WRONG = "Northwind Cold Chain is a dry-goods courier founded in 1999 by Tomas Okafor in Oslo."


@dataclass(frozen=True)
class FlakySeries:
    question: str
    ok_run: str  # the question answered right, just before `broken_run`
    broken_run: str  # the question answered wrong: a regression on a known flaky question
    runs: tuple[str, ...]


def _copy(
    results: Path,
    run_id: str,
    day: int,
    broken: bool,
    wrong: str,
    params: dict | None = None,
    total_ms: float | None = None,
) -> None:
    folder = results / run_id
    shutil.copytree(results / SOURCE, folder)
    rows = pq.read_table(folder / "questions.parquet").to_pylist()
    for r in rows:
        r["run_id"] = run_id
        if total_ms is not None:
            r["total_ms"] = total_ms
        if broken and r["question_id"] == QUESTION:
            r.update(
                answer=wrong,
                answer_correctness=0.0,
                failure_type="incorrect",
                claims=[
                    {
                        "text": wrong,
                        "verdict": "contradicted",
                        "evidence_chunk_id": None,
                        "evidence": None,
                        "reason": "the handbook says Rotterdam, 2009",
                    }
                ],
                unsupported_claims=[wrong],
            )
    write_parquet(folder / "questions.parquet", rows_to_table(rows))
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest.update(
        run_id=run_id,
        created_at=f"2026-11-{day:02d}T09:00:00Z",
        finished_at=f"2026-11-{day:02d}T09:00:02Z",
    )
    manifest["config"]["pipeline"]["params"].update(params or {})
    atomic_write_json(folder / MANIFEST, manifest)
    atomic_write_json(folder / SUMMARY, summarize_run(inspect_run(str(results), run_id)))


def add_flaky_series(results: Path, wrong: str = WRONG) -> FlakySeries:
    """Three more `bm25-top5` runs after the demo's: q001 wrong, right, wrong again
    (answering `wrong`)."""
    plan = [(25, True), (26, False), (27, True)]
    ids = [f"202611{day:02d}-090000-bm25-top5" for day, _ in plan]
    for run_id, (day, broken) in zip(ids, plan, strict=True):
        _copy(results, run_id, day, broken, wrong)
    return FlakySeries(QUESTION, ok_run=ids[1], broken_run=ids[2], runs=(SOURCE, *ids))


def add_changed_settings(results: Path, wrong: str = WRONG) -> FlakySeries:
    """One more `bm25-top5` run after the demo's with `top_k` 5 -> 3 in which q001 is
    wrong: a parameter changed under one config name, not a flaky question."""
    run_id = "20261125-090000-bm25-top5"
    _copy(results, run_id, 25, True, wrong, params={"top_k": 3})
    return FlakySeries(QUESTION, ok_run=SOURCE, broken_run=run_id, runs=(SOURCE, run_id))


def add_latency_series(results: Path) -> str:
    """Five more `bm25-top5` runs after the demo's, every question taking one time: top_k 3
    in 100 or 120 ms, top_k 4 in 400, 410 and, last, 430 ms — slower than top_k 4 has
    been, though within the spread of every run under the name. The last run's id."""
    plan = [(3, 100.0), (4, 400.0), (3, 120.0), (4, 410.0), (4, 430.0)]
    ids = [f"202611{21 + i}-090000-bm25-top5" for i in range(len(plan))]
    for i, (run_id, (k, ms)) in enumerate(zip(ids, plan, strict=True)):
        _copy(results, run_id, 21 + i, False, WRONG, params={"top_k": k}, total_ms=ms)
    return ids[-1]
