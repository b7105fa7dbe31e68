"""`Comparison.questions` (the per-question fold, in SQL) against the pandas fold it replaced.

The reference (`changes_reference.pandas_question_changes`) is the library's code as it was;
every frame must come out identical: columns, dtypes, values, the `changes` text character
for character, and the order, ties included. Inputs are seeded synthetic runs (bench/synth,
realistic spreads at scale) and hypothesis-drawn runs built to hit the corners: equal
deltas, moves of exactly the tolerance, NaN and missing values, unanswerable questions,
missing failure types, latency and cost in exponent notation, question ids that sort
differently by case or as numbers, questions missing from some runs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.query import QUESTION_CHANGE_COLUMNS, Comparison, ResultsStore, compare_runs

from .changes_reference import pandas_question_changes
from .conftest import row, synth_generate, write_run


def assert_same_as_reference(c: Comparison) -> None:
    want = pandas_question_changes(c)
    # the fold's columns; `flaky` / `flaky_note` come after it from the runs' history
    assert list(c.questions.columns) == [*QUESTION_CHANGE_COLUMNS, "flaky", "flaky_note"]
    got = c.questions[list(QUESTION_CHANGE_COLUMNS)]
    if want.empty:
        # The reference built its empty frame from nothing (object columns); SQL types them.
        assert got.empty
        return
    pd.testing.assert_frame_equal(got, want)


# ---------------------------------------------------------------------------- synthetic runs


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> ResultsStore:
    root = tmp_path_factory.mktemp("synth")
    synth_generate(root, 4, 120, seed=11)
    return ResultsStore(root)


SYNTH_CASES = [
    # (runs compared, by position oldest first, baseline first; metrics; tolerance)
    ((0, 1), None, 0.05),
    ((3, 0, 2), None, 0.05),
    ((1, 0), ("total_ms", "faithfulness", "cost_usd", "answer_correctness"), 0.0),
    ((0, 1, 2, 3), ("mrr", "recall_at_5", "retrieval_ms", "ttft_ms", "recall_at_20"), 0.1),
    ((3, 2), ("faithfulness", "answer_correctness", "ndcg_at_10"), 0.3),
]


@pytest.mark.parametrize(("picks", "metrics", "tolerance"), SYNTH_CASES)
def test_sql_fold_equals_the_pandas_fold_on_synthetic_runs(synthetic, picks, metrics, tolerance):
    ids = sorted(r.run_id for r in synthetic.runs())
    c = compare_runs(
        synthetic, [ids[i] for i in picks], metrics=metrics, tolerance=tolerance, n_resamples=50
    )
    assert len(c.questions) > 20  # enough moved to make the check mean something
    assert_same_as_reference(c)


# ---------------------------------------------------------------------------- drawn corners

QIDS = ["a", "B", "b", "a b", "é", "10", "9", "q|x", "Z", "a_1"]
SCORES = [None, float("nan"), 0.0, 0.25, 0.45, 0.5, 0.55, 0.7, 0.75, 1.0]
LATENCIES = [None, 0.001, 100.0, 100.04, 150.0, 12345.5, 1e6]
COSTS = [None, 0.0, 0.00012, 0.5, 2.675]
FAILURES = ["ok", "ok", "unfaithful", "incorrect", None]
METRICS = ["faithfulness", "answer_correctness", "recall_at_5", "total_ms", "cost_usd"]


@st.composite
def question(draw, qid: str) -> dict:
    return row(
        qid,
        answerable=draw(st.booleans()),
        faithfulness=draw(st.sampled_from(SCORES)),
        answer_correctness=draw(st.sampled_from(SCORES)),
        recall_at_5=draw(st.sampled_from(SCORES)),
        total_ms=draw(st.sampled_from(LATENCIES)),
        cost_usd=draw(st.sampled_from(COSTS)),
        failure_type=draw(st.sampled_from(FAILURES)),
    )


@st.composite
def runs(draw) -> list[list[dict]]:
    n = draw(st.integers(2, 4))
    out = []
    for _ in range(n):
        qids = draw(st.lists(st.sampled_from(QIDS), unique=True, min_size=2, max_size=len(QIDS)))
        out.append([draw(question(q)) for q in qids])
    return out


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    drawn=runs(),
    metrics=st.lists(st.sampled_from(METRICS), min_size=1, max_size=5, unique=True),
    tolerance=st.sampled_from([0.0, 0.05, 0.25]),
)
def test_sql_fold_equals_the_pandas_fold_on_drawn_runs(drawn, metrics, tolerance):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ids = [f"run{i}" for i in range(len(drawn))]
        for i, (run_id, rows) in enumerate(zip(ids, drawn, strict=True)):
            write_run(root, run_id, rows, created_at=f"2025-01-0{i + 1}T00:00:00Z")
        store = ResultsStore(root)
        try:
            c = compare_runs(store, ids, metrics=metrics, tolerance=tolerance, n_resamples=20)
            assert_same_as_reference(c)
        finally:
            store.close()


def test_equal_moves_keep_the_metric_order_and_ties_sort_by_run_then_question(results):
    # Every question drops 0.5 on both metrics: `changes` lists them in the order asked,
    # and the rows (one size, one kind) fall back to run order, then question id.
    base = [row(q, faithfulness=1.0, answer_correctness=1.0) for q in ("b", "a", "B")]
    cand = [row(q, faithfulness=0.5, answer_correctness=0.5) for q in ("b", "a", "B")]
    write_run(results, "base", base)
    write_run(results, "z-cand", cand, created_at="2025-01-02T00:00:00Z")
    write_run(results, "a-cand", cand, created_at="2025-01-03T00:00:00Z")
    metrics = ["answer_correctness", "faithfulness"]
    c = compare_runs(ResultsStore(results), ["base", "z-cand", "a-cand"], metrics=metrics)
    assert c.questions[["run_id", "question_id"]].values.tolist() == [
        ["z-cand", "B"],
        ["z-cand", "a"],
        ["z-cand", "b"],
        ["a-cand", "B"],
        ["a-cand", "a"],
        ["a-cand", "b"],
    ]
    assert set(c.questions["changes"]) == {
        "answer_correctness 1.00→0.50 (−0.50); faithfulness 1.00→0.50 (−0.50)"
    }
    assert_same_as_reference(c)
