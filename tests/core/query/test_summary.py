"""summarize_run against figures computed independently with numpy on the fixture rows."""

from __future__ import annotations

import numpy as np
import pytest

from rageval_core.query import SUMMARY_KEYS, summarize_run
from rageval_core.runs.reading import inspect_run

from .conftest import row, write_run


def _rows():
    rng = np.random.default_rng(7)
    rows = []
    for i in range(40):
        answerable = i % 5 != 0
        gold_rank = int(rng.integers(1, 25))
        retrieved = [f"c{i}-{j}" for j in range(1, 21)]
        gold = [f"c{i}-{gold_rank}"] if answerable else []
        refused = (not answerable and i % 10 == 0) or (answerable and i % 13 == 0)
        rows.append(
            row(
                f"q{i:03d}",
                answerable=answerable,
                retrieved=retrieved,
                gold=gold,
                refused=refused,
                faithfulness=None if refused else float(rng.random()),
                answer_correctness=float(rng.random()) if answerable else None,
                retrieval_ms=float(rng.uniform(5, 50)),
                generation_ms=float(rng.uniform(100, 900)),
                ttft_ms=float(rng.uniform(10, 90)),
                total_ms=float(rng.uniform(200, 1000)),
                cost_usd=float(rng.uniform(0, 0.01)),
                judge_cost_usd=0.001 if i % 2 else None,
                failure_type=["ok", "incorrect", "ranking_miss", "error"][i % 4],
                error="boom" if i % 4 == 3 else None,
            )
        )
    return rows


def _col(rows, name):
    return np.array([np.nan if r.get(name) is None else r[name] for r in rows], dtype=float)


def test_summary_matches_numpy(results):
    rows = _rows()
    write_run(results, "r1", rows)
    s = summarize_run(inspect_run(str(results), "r1"))
    assert set(SUMMARY_KEYS) <= set(s) and s["problems"] == []
    assert s["n_questions"] == 40
    assert s["n_answerable"] == 32 and s["n_unanswerable"] == 8
    assert s["n_errors"] == 10
    for m in ("recall_at_5", "recall_at_20", "mrr", "faithfulness", "answer_correctness"):
        v = _col(rows, m)
        v = v[~np.isnan(v)]
        assert s[m] == pytest.approx(v.mean())
        assert s[f"{m}_p10"] == pytest.approx(np.quantile(v, 0.1))  # linear = continuous
    gap = _col(rows, "recall_at_5") - _col(rows, "recall_at_20")
    assert s["recall_gap"] == pytest.approx(np.nanmean(gap))
    f = _col(rows, "faithfulness")
    assert s["faithfulness_below_threshold"] == pytest.approx((f[~np.isnan(f)] < 0.8).mean())
    unans = [r for r in rows if not r["answerable"]]
    ans = [r for r in rows if r["answerable"]]
    assert s["missed_refusal_rate"] == pytest.approx(np.mean([not r["refused"] for r in unans]))
    assert s["false_refusal_rate"] == pytest.approx(np.mean([r["refused"] for r in ans]))
    for c in ("retrieval_ms", "generation_ms", "ttft_ms", "total_ms"):
        assert s[f"{c}_p50"] == pytest.approx(np.quantile(_col(rows, c), 0.5))
        assert s[f"{c}_p95"] == pytest.approx(np.quantile(_col(rows, c), 0.95))
    assert s["cost_usd_total"] == pytest.approx(_col(rows, "cost_usd").sum())
    assert s["judge_cost_usd_total"] == pytest.approx(0.02)
    # over the 20 questions the judge priced, not 40 with the unknown ones as $0
    assert s["judge_cost_usd_per_question"] == pytest.approx(0.02 / 20)
    assert s["n_judge_cost_usd"] == 20 and s["n_cost_usd"] == s["n_total_cost"] == 40
    total = _col(rows, "cost_usd") + np.nan_to_num(_col(rows, "judge_cost_usd"))
    assert s["total_cost_per_question"] == pytest.approx(total.mean())
    assert s["failure_ok"] == 10 and s["failure_error"] == 10 and s["failure_unfaithful"] == 0


def test_summary_of_unreadable_run_reports_problem(results):
    write_run(results, "bad", [row("q1")])
    (results / "bad" / "questions.parquet").write_bytes(b"PAR1 not really parquet")
    s = summarize_run(inspect_run(str(results), "bad"))
    assert s["n_questions"] == 0
    assert any("unreadable Parquet" in p for p in s["problems"])
