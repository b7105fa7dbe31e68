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


# a process saving 40 labels as one reviewer from a start time: two at once race the store
SAVER = """
import sys, time
from rageval_core.labels import LabelStore
from tests.core.labels.helpers import label
location, who, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
store = LabelStore(location)
while time.time() < start:
    pass
for i in range(40):
    store.save([label(f"q{i}", f"Claim {i}.", "supported", reviewer=who)])
"""


# label lines a careless or hostile writer leaves, by what is wrong with them
GOOD = {
    "dataset": "qa",
    "dataset_sha256": SHA,
    "question_id": "q9",
    "claim": "A fine claim.",
    "verdict": "supported",
    "reviewer": "eve",
    "created_at": "2026-02-01T00:00:00Z",
}
HOSTILE = {
    "claim-number": json.dumps({**GOOD, "claim": 5}),
    "claim-list": json.dumps({**GOOD, "claim": ["a"]}),
    "verdict-dict": json.dumps({**GOOD, "verdict": {"x": 1}}),
    "question-label-list": json.dumps({**GOOD, "claim": None, "question_label": ["pass"]}),
    "deep": "[" * 5000 + "]" * 5000,
    "deep-object": '{"a":' * 3000 + "1" + "}" * 3000,
    "note-surrogate": json.dumps({**GOOD, "note": "x"})[:-1] + ', "note": "\\ud800"}',
    "claim-surrogate": json.dumps(GOOD).replace("A fine claim.", "\\udfff"),
    "reviewer-surrogate": json.dumps(GOOD).replace('"eve"', '"\\ud800"'),
    "dataset-surrogate": json.dumps(GOOD).replace('"qa"', '"q\\ud800"'),
    "qid-surrogate": json.dumps(GOOD).replace('"q9"', '"\\udbff"'),
    "huge-int-qid": json.dumps({**GOOD, "question_id": 10**4000}),
}
