"""Run folders with claims and a chosen judge, and labels, for the label tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rageval_core.labels import HumanLabel
from rageval_core.models import DatasetRef, JudgeRef, RunManifest
from rageval_core.results import atomic_write_json, manifest_to_dict, rows_to_table, write_parquet
from tests.core.query.conftest import row

SHA = "a" * 64
OFFLINE = JudgeRef("offline", "overlap>=0.6", "offline-1")
LLM = JudgeRef("openai", "gpt-test", "v3")


def claim(text: str, verdict: str) -> dict[str, Any]:
    return {
        "text": text,
        "verdict": verdict,
        "evidence_chunk_id": None,
        "evidence": None,
        "reason": "",
    }


def judged_row(qid: str, claims: list[tuple[str, str]], **kw: Any) -> dict[str, Any]:
    """A question row whose faithfulness follows its claims' verdicts."""
    cs = [claim(t, v) for t, v in claims]
    faith = sum(v == "supported" for _, v in claims) / len(claims) if claims else None
    return row(qid, claims=cs, faithfulness=faith, **kw)


def write_run(
    root: Path,
    run_id: str,
    rows: list[dict[str, Any]],
    judge: JudgeRef = OFFLINE,
    sha: str = SHA,
    status: str = "complete",
) -> Path:
    d = root / run_id
    d.mkdir(parents=True, exist_ok=True)
    rows = [{**r, "run_id": run_id} for r in rows]
    m = RunManifest(
        run_id=run_id,
        status=status,
        created_at="2026-01-01T00:00:00Z",
        config={"name": "t"},
        dataset=DatasetRef("qa", "1", sha, len(rows)),
        judge=judge,
    )
    atomic_write_json(d / "manifest.json", manifest_to_dict(m))
    if status == "running":
        import json

        (d / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        write_parquet(d / "questions.parquet", rows_to_table(rows))
    return d


def label(
    qid: str,
    claim_text: str | None,
    value: str,
    reviewer: str = "ann",
    at: str = "2026-02-01T00:00:00Z",
    **kw: Any,
) -> HumanLabel:
    return HumanLabel(
        dataset=kw.pop("dataset", "qa"),
        dataset_sha256=kw.pop("sha", SHA),
        question_id=qid,
        claim=claim_text,
        verdict=value if claim_text is not None else None,
        question_label=value if claim_text is None else None,
        reviewer=reviewer,
        created_at=at,
        **kw,
    )
