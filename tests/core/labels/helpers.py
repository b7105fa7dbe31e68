"""Run folders with claims and a chosen judge, and labels, for the label tests."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rageval_core import cli
from rageval_core.labels import HumanLabel
from rageval_core.models import JudgeRef
from rageval_core.runs.atomic import atomic_write_json
from tests.core.query.conftest import row
from tests.core.query.conftest import write_run as query_run

SHA = "a" * 64
OFFLINE = JudgeRef("offline", "overlap>=0.6", "offline-1")
LLM = JudgeRef("openai", "gpt-test", "v3")
TOWERS_WHY = "no retrieved sentence says how many towers"
R1, R2, R3 = "20260101-000000-a", "20260102-000000-b", "20260103-000000-c"
EXAMPLE = Path(__file__).resolve().parents[3] / "rageval_core" / "example" / "dataset.yaml"


def claim(text: str, verdict: str, reason: str = "") -> dict[str, Any]:
    return {
        "text": text,
        "verdict": verdict,
        "evidence_chunk_id": None,
        "evidence": None,
        "reason": reason,
    }


def judged_row(qid: str, claims: list[tuple[str, ...]], **kw: Any) -> dict[str, Any]:
    """A question row whose faithfulness follows its claims' verdicts; a claim is
    (text, verdict) or (text, verdict, the judge's reason)."""
    cs = [claim(*c) for c in claims]
    faith = sum(c[1] == "supported" for c in claims) / len(claims) if claims else None
    return row(qid, claims=cs, faithfulness=faith, **kw)


def write_run(
    root: Path,
    run_id: str,
    rows: list[dict[str, Any]],
    judge: JudgeRef = OFFLINE,
    sha: str = SHA,
    status: str = "complete",
) -> Path:
    """A run folder (tests/core/query's) whose manifest names `judge`."""
    d = query_run(root, run_id, rows, status=status, dataset=("qa", "1", sha))
    manifest = json.loads((d / "manifest.json").read_text())
    atomic_write_json(d / "manifest.json", {**manifest, "judge": asdict(judge)})
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


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def chunk_label(qid: str, chunk_id: str, relevant: bool, reviewer: str = "ann", **kw) -> HumanLabel:
    return HumanLabel(
        dataset=kw.pop("dataset", "qa"),
        dataset_sha256=kw.pop("sha", "b" * 64),
        question_id=qid,
        claim=None,
        verdict=None,
        question_label=None,
        reviewer=reviewer,
        created_at=kw.pop("at", "2026-02-01T00:00:00Z"),
        chunk_id=chunk_id,
        relevant=relevant,
        **kw,
    )


def write_jsonl(path: Path, items: list[dict]) -> None:
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
