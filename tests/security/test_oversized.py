"""A pathological row — a 10 MB answer with 10,000 claims — must not hang the report, the
question query or the highlighter. Times are printed; the bound is deliberately generous."""

from __future__ import annotations

import shutil
import time

import pytest

from dashboard.shaping import answer_marks, marked_block
from rageval_core import query
from rageval_core.report import write_report

BOUND_S = 60.0
ANSWER = ("The dock opens at 6am. <b>Trucks</b> wait & idle. " * 200_000)[:10_000_000]
N_CLAIMS = 10_000


@pytest.fixture(scope="module")
def huge(demo_results, helpers, tmp_path_factory):
    out = tmp_path_factory.mktemp("huge") / "results"
    shutil.copytree(demo_results, out, ignore=shutil.ignore_patterns(".rageval"))
    run_id = helpers.run_ids(out)[-1]
    first = {"done": False}

    def blow_up(r: dict) -> None:
        if first["done"]:
            return
        first["done"] = True
        r["answer"] = ANSWER
        r["failure_type"] = "error"  # first among the worst questions
        r["claims"] = [
            {
                "text": f"claim {i} that is not in the answer",
                "verdict": "unsupported",
                "evidence_chunk_id": None,
                "evidence": None,
                "reason": f"reason {i} " * 20,
            }
            for i in range(N_CLAIMS)
        ]
        r["unsupported_claims"] = [c["text"] for c in r["claims"]]

    helpers.rewrite_rows(out / run_id, blow_up)
    return out, run_id


def timed(label: str, fn):
    t = time.perf_counter()
    value = fn()
    took = time.perf_counter() - t
    print(f"{label}: {took:.2f} s")
    assert took < BOUND_S, label
    return value


def test_question_detail_and_highlight(huge, tmp_path):
    results, run_id = huge
    with query.ResultsStore(str(results), read_only=True, cache_dir=tmp_path / "c") as store:
        worst = query.question_rows(store, run_id, limit=1).rows["question_id"].iloc[0]
        d = timed("question_detail", lambda: query.question_detail(store, run_id, worst))
    assert len(d.answer) == len(ANSWER) and len(d.claims) == N_CLAIMS
    body, missed = timed("marked_block", lambda: marked_block(d.answer, answer_marks(d.claims)))
    assert len(missed) == N_CLAIMS
    assert "<b>" not in body


def test_report_stays_small(huge, tmp_path):
    results, run_id = huge
    out = timed("report", lambda: write_report(str(results), run_id, tmp_path / "r.html"))
    size = out.stat().st_size
    print(f"report size: {size / 1e6:.1f} MB")
    assert size < 1_000_000  # gzipped plotly.js (0.66 MB) + bounded text, not the 10 MB answer
    text = out.read_text()
    assert "more characters]" in text and "more claims" in text
