"""Fixture results directories written with the real helpers of `rageval_core.runs`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rageval_core.catalogue import parse_declared
from rageval_core.errors import ConfigError
from rageval_core.models import DatasetRef, JudgeRef, RunManifest
from rageval_core.runs.atomic import atomic_write_json, write_parquet
from rageval_core.runs.layout import journal_name, parquet_name
from rageval_core.runs.manifest import manifest_to_dict
from rageval_core.runs.rows import rows_to_table


def synth_generate(root: Path, runs: int, questions: int, seed: int) -> None:
    """Synthetic results from `bench/synth.py` (the bench's own generator, so the tests and
    the figures in docs/scale.md read the same files)."""
    from bench.synth import generate

    generate(root, runs, questions, seed=seed)


def row(qid: str, **kw: Any) -> dict[str, Any]:
    """A question row; retrieval metrics derived from ranks of `gold` in `retrieved`."""
    answerable = kw.pop("answerable", True)
    retrieved = kw.pop("retrieved", [f"c{qid}-{i}" for i in range(1, 21)])
    gold = kw.pop("gold", [f"c{qid}-1"] if answerable else [])
    base: dict[str, Any] = {
        "question_id": qid,
        "question": f"question {qid}",
        "reference_answer": "ref" if answerable else None,
        "answerable": answerable,
        "tags": [],
        "answer": f"answer {qid}",
        "retrieved_ids": retrieved,
        "retrieved_texts": [f"text of {c}" for c in retrieved],
        "retrieved_scores": [1.0 / (i + 1) for i in range(len(retrieved))],
        "gold_ids": gold,
        "gold_ranks": [retrieved.index(g) + 1 for g in gold if g in retrieved],
        "claims": [],
        "unsupported_claims": [],
        "refused": False,
        "failure_type": "ok",
    }
    if answerable:
        for k in (1, 3, 5, 10, 20):
            found = len(set(retrieved[:k]) & set(gold))
            base[f"recall_at_{k}"] = found / len(gold)
            base[f"precision_at_{k}"] = found / k
            base[f"hit_at_{k}"] = float(found > 0)
        ranks = [retrieved.index(g) + 1 for g in gold if g in retrieved]
        base["mrr"] = 1 / min(ranks) if ranks else 0.0
        base["ndcg_at_10"] = base["hit_at_10"]
    base.update(kw)
    return base


def write_run(
    root: Path,
    run_id: str,
    rows: list[dict[str, Any]],
    *,
    created_at: str = "2025-01-01T00:00:00Z",
    status: str = "complete",
    config: dict[str, Any] | None = None,
    dataset: tuple[str, str, str] = ("qa", "1", "a" * 64),
    tags: tuple[str, ...] = (),
    journal: bool = False,
    metrics: dict[str, Any] | None = None,
) -> Path:
    """A run folder; `metrics` is the manifest's raw `metrics:` mapping (declarations),
    written as is so invalid and hostile ones can be tested."""
    d = root / run_id
    d.mkdir(parents=True, exist_ok=True)
    rows = [{**r, "run_id": run_id} for r in rows]
    m = RunManifest(
        run_id=run_id,
        status=status,
        created_at=created_at,
        config=config or {"name": run_id.split("-")[0], "pipeline": {"params": {"top_k": 5}}},
        dataset=DatasetRef(dataset[0], dataset[1], dataset[2], len(rows)),
        judge=JudgeRef("offline"),
        tags=tags,
    )
    raw = manifest_to_dict(m)
    if metrics is not None:
        raw["metrics"] = metrics
    atomic_write_json(d / "manifest.json", raw)
    declared = parse_declared(metrics, "test") if metrics and _valid(metrics) else ()
    if journal or status == "running":
        (d / journal_name()).write_text("".join(json.dumps(r) + "\n" for r in rows))
    if status != "running":
        write_parquet(d / parquet_name(), rows_to_table(rows, declared=declared))
    return d


def _valid(metrics: Any) -> bool:
    try:
        parse_declared(metrics, "test")
    except ConfigError:
        return False
    return True
