"""Figure builders: the traces say what the data says (frontier, gaps, intervals)."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard import charts


def test_pareto_joins_frontier_runs_left_to_right_and_marks_the_rest():
    df = pd.DataFrame(
        {
            "run_id": ["fast", "good", "bad"],
            "config_name": ["f", "g", "b"],
            "quality": [0.6, 0.9, 0.5],
            "latency_p95_ms": [100.0, 900.0, 950.0],
            "dominated_latency": [False, False, True],
        }
    )
    fig = charts.pareto(df, "latency_p95_ms", "dominated_latency", "answer_correctness", "p95")
    frontier, dominated = fig.data
    assert list(frontier.customdata) == ["fast", "good"] and list(frontier.x) == [100.0, 900.0]
    assert list(dominated.customdata) == ["bad"] and dominated.marker.symbol == "x"
    assert fig.layout.title.text == "correctness (answerable) vs p95"


def test_recall_gap_annotates_each_run():
    df = pd.DataFrame(
        {"run_id": ["a", "b"], "recall_at_5": [0.5, 0.8], "recall_at_20": [0.9, 0.85]}
    )
    fig = charts.recall_gap(df)
    assert [a.text for a in fig.layout.annotations] == ["gap 0.40", "gap 0.05"]
    assert "ranking problem, not embedding" in fig.layout.title.text


def test_metric_deltas_draw_asymmetric_intervals():
    df = pd.DataFrame(
        {"metric": ["mrr"], "run_id": ["b"], "delta": [0.1], "ci_low": [0.02], "ci_high": [0.25]}
    )
    (trace,) = charts.metric_deltas(df).data
    assert list(trace.y) == ["MRR"]
    assert list(trace.error_x.array) == pytest.approx([0.15])
    assert list(trace.error_x.arrayminus) == pytest.approx([0.08])


def test_ecdf_steps_to_one_and_histogram_overlays():
    df = pd.DataFrame({"run_id": ["a"] * 4 + ["b"] * 2, "value": [0.4, 0.1, 0.3, 0.2, 1, 0]})
    ecdf = charts.distributions(df, "faithfulness", "ecdf")
    assert [t.name for t in ecdf.data] == ["a", "b"]
    assert list(ecdf.data[0].x) == [0.1, 0.2, 0.3, 0.4]
    assert list(ecdf.data[0].y) == [0.25, 0.5, 0.75, 1.0]
    hist = charts.distributions(df, "faithfulness", "histogram")
    assert hist.layout.barmode == "overlay" and hist.data[0].type == "histogram"


def test_failure_breakdown_leaves_out_ok_and_colours_by_group():
    df = pd.DataFrame(
        {
            "failure_type": ["retrieval_miss", "unfaithful", "ok"],
            "n": [3, 2, 9],
            "group": ["retrieval", "generation", "ok"],
        }
    )
    fig = charts.failure_breakdown(df)
    assert [t.name for t in fig.data] == ["retrieval", "generation"]
    assert fig.data[0].marker.color == charts.GROUP_COLORS["retrieval"]
