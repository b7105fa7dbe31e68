"""Figure builders (dashboard and report): the traces say what the data says (frontier,
gaps, intervals), and no untrusted text reaches a figure unescaped."""

from __future__ import annotations

import html
import inspect
import json

import pandas as pd
import plotly.io as pio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core import charts


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
    fig = charts.pareto(
        df, "latency_p95_ms", "dominated_latency", "answer_correctness", "total_ms_p95"
    )
    frontier, dominated = fig.data
    assert list(frontier.customdata) == ["fast · f", "good · g"]
    assert list(frontier.x) == [100.0, 900.0]
    assert list(dominated.customdata) == ["bad · b"] and dominated.marker.symbol == "x"
    assert fig.layout.title.text == "correctness (answerable) vs p95 latency (ms)"
    # runs are named on hover, never as text on the points (clipped, overlapping)
    assert all("text" not in t.mode for t in fig.data) and not any(t.text for t in fig.data)
    assert fig.layout.xaxis.ticksuffix == " ms" and "%{x:,.0f} ms" in frontier.hovertemplate


def test_a_dollar_axis_has_no_si_prefix_and_legends_stay_off_titles():
    df = pd.DataFrame(
        {
            "run_id": ["a"],
            "config_name": ["c"],
            "quality": [0.5],
            "cost_per_question": [7e-05],
            "dominated_cost": [False],
        }
    )
    fig = charts.pareto(
        df, "cost_per_question", "dominated_cost", "recall_at_5", "total_cost_per_question"
    )
    assert fig.layout.xaxis.tickformat == "$.2~r"  # `$0.00007`, not plotly's `70µ`
    for f in (fig, charts.mean_and_p10(pd.DataFrame({"run_id": ["a"]}), ["faithfulness"])):
        legend, title = f.layout.legend, f.layout.title
        # right of the plot, top-aligned: never in the title's band above it
        assert legend.x > 1 and legend.xanchor == "left" and legend.orientation == "v"
        assert title.xanchor == "left" and title.yanchor == "top"


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
    df = pd.DataFrame(
        {
            "run_id": ["a"] * 4 + ["b"] * 2,
            "question_id": ["q4", "q1", "q3", "q2", "q5", "q6"],
            "value": [0.4, 0.1, 0.3, 0.2, 1, 0],
        }
    )
    ecdf = charts.distributions(df, "faithfulness", "ecdf")
    assert [t.name for t in ecdf.data] == ["a", "b"]
    assert list(ecdf.data[0].x) == [0.1, 0.2, 0.3, 0.4]
    assert list(ecdf.data[0].y) == [0.25, 0.5, 0.75, 1.0]
    assert list(ecdf.data[0].text) == ["q1", "q2", "q3", "q4"]  # hover names the question
    hist = charts.distributions(df, "faithfulness", "histogram")
    assert hist.layout.barmode == "overlay" and hist.data[0].type == "histogram"
    # the same bin edges for every run, so overlaid bars compare
    assert {t.xbins.size for t in hist.data} == {0.05}


def test_failure_breakdown_leaves_out_ok_and_colours_by_group():
    df = pd.DataFrame({"failure_type": ["unfaithful", "ok", "retrieval_miss"], "n": [2, 9, 3]})
    fig = charts.failure_breakdown(df)
    assert [t.name for t in fig.data] == ["retrieval", "generation"]
    assert fig.data[0].marker.color == charts.GROUP_COLORS["retrieval"]
    assert list(fig.data[0].x) == ["retrieval miss"]  # the catalogue's label


def test_failure_breakdown_draws_groups_then_types_in_order():
    types = ["ok", "incorrect", "retrieval_miss", "false_refusal", "error", "ranking_miss"]
    counts = pd.DataFrame({"failure_type": types, "n": [5, 4, 3, 2, 1, 1]})
    fig = charts.failure_breakdown(counts)
    assert [(t.name, list(t.x)) for t in fig.data] == [
        ("retrieval", ["retrieval miss", "ranking miss"]),
        ("generation", ["incorrect"]),
        ("abstention", ["false refusal"]),
        ("error", ["error"]),
    ]


def test_mean_and_p10_puts_each_runs_mean_beside_its_p10():
    runs = pd.DataFrame(
        {"run_id": ["a"], "faithfulness": [0.8], "faithfulness_p10": [0.2], "mrr": [0.5]}
    )
    fig = charts.mean_and_p10(runs, ["faithfulness", "mrr"])
    assert [t.name for t in fig.data] == ["a mean", "a p10"]
    assert list(fig.data[0].x) == ["faithfulness", "MRR"]
    assert list(fig.data[1].y) == [0.2, None]  # a figure with no p10 is left out, not zero


# ---------------------------------------------------------------------------- escaping

XSS = "<img src=x onerror=alert(1)>"
RUNS = [XSS, "plain"]


def _frames() -> dict[str, tuple[tuple, dict]]:
    """Arguments for every builder, each untrusted text field holding XSS."""
    two = pd.DataFrame(
        {
            "run_id": RUNS,
            "created_at": pd.to_datetime(["2026-01-01", "2026-01-02"]),
            "config_name": [XSS, "c"],
            "dataset_name": [XSS, "qa"],
            "dataset_version": ["1", XSS],
            "value": [0.5, 0.6],
            "p10": [0.1, 0.2],
            "quality": [0.5, 0.6],
            "latency_p95_ms": [10.0, 20.0],
            "dominated_latency": [False, True],
            "recall_at_5": [0.5, 0.6],
            "recall_at_20": [0.7, 0.9],
            "mrr": [0.4, 0.5],
            "faithfulness": [0.8, 0.9],
            "faithfulness_p10": [0.3, 0.4],
            "retrieval_ms_p50": [1.0, 2.0],
            "retrieval_ms_p95": [3.0, 4.0],
            "generation_ms_p50": [5.0, 6.0],
            "generation_ms_p95": [7.0, 8.0],
            "failure_type": ["unfaithful", XSS],
            "answer_correctness": [0.1, 0.9],
        }
    )
    long = pd.DataFrame(
        {
            "run_id": RUNS,
            "question_id": [XSS, "q"],
            "failure_type": ["unfaithful", "ok"],
            "n": [3, 4],
            "share": [0.4, 0.6],
            "k": [5, 5],
            "recall": [0.5, 0.6],
            "value": [0.2, 0.3],
            "metric": [XSS, "mrr"],
            "delta": [0.1, 0.2],
            "ci_low": [0.0, 0.1],
            "ci_high": [0.2, 0.3],
        }
    )
    breakdown = pd.DataFrame({"failure_type": [XSS, "ok"], "n": [2, 1]})
    spans = pd.DataFrame(
        {
            "run_id": RUNS,
            "k": [5, 5],
            "span_recall": [0.5, 0.6],
            "span_precision": [0.2, 0.1],
            "span_iou": [0.2, 0.1],
            "input_tokens": [300.0, None],
        }
    )
    return {
        "config_trend": ((two, XSS), {}),
        "failure_shares": ((long,), {}),
        "failure_breakdown": ((breakdown,), {}),
        "distributions": ((long, XSS, "ecdf"), {}),
        "mean_and_p10": ((two, ["faithfulness", XSS]), {}),
        "recall_curves": ((long,), {}),
        "recall_gap": ((two,), {}),
        "per_run_bar": ((two, "mrr"), {}),
        "pareto": ((two, "latency_p95_ms", "dominated_latency", XSS, XSS), {}),
        "stage_latency": ((two,), {}),
        "metric_deltas": ((long,), {}),
        "question_history": ((two, ["answer_correctness"]), {}),
        "confusion": (([XSS, "b"], [[1, 2], [3, 4]], XSS), {"rows": XSS, "cols": XSS}),
        "span_curves": ((spans,), {}),
        "span_tradeoff": ((spans,), {}),
        "span_map": ((XSS, 100, [(10, 20)], [(1, XSS, 5, 30)]), {}),
    }


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    if hasattr(value, "tolist"):
        return _strings(value.tolist())
    return []


def test_every_builder_is_covered_by_the_escaping_test():
    builders = {
        n
        for n, f in inspect.getmembers(charts, inspect.isfunction)
        if f.__module__ == charts.__name__ and not n.startswith("_")
    }
    assert builders == set(_frames())


@pytest.mark.parametrize("name", sorted(_frames()))
def test_untrusted_text_reaches_every_figure_escaped(name):
    # Plotly renders a subset of HTML in titles, ticks, legends and hover text; a run id,
    # question id, config name or metric name must arrive there as text.
    args, kw = _frames()[name]
    fig = getattr(charts, name)(*args, **kw)
    texts = _strings(fig.to_plotly_json())
    assert not [t for t in texts if "<img" in t], name
    assert any(html.escape(XSS) in t for t in texts), name


def test_failure_shares_keep_the_runs_in_the_order_given():
    # "new" has no retrieval miss: drawn first, that trace alone would put "old" first
    df = pd.DataFrame(
        {
            "run_id": ["new", "old", "old"],
            "failure_type": ["ok", "retrieval_miss", "ok"],
            "n": [4, 1, 3],
            "share": [1.0, 0.25, 0.75],
        }
    )
    assert list(charts.failure_shares(df).layout.xaxis.categoryarray) == ["new", "old"]


def test_confusion_puts_rows_top_down_with_each_count_in_its_cell():
    fig = charts.confusion(["supported", "unsupported"], [[5, 1], [2, 3]], "Claims")
    heat = fig.data[0]
    assert list(heat.y) == ["supported", "unsupported"] and list(heat.x) == list(heat.y)
    assert [list(r) for r in heat.z] == [[5, 1], [2, 3]]
    assert fig.layout.yaxis.autorange == "reversed"  # the first category on top
    assert fig.layout.xaxis.title.text == "judge" and fig.layout.yaxis.title.text == "human"


def test_trend_draws_one_line_per_config_and_marks_dataset_version_changes():
    df = pd.DataFrame(
        {
            "run_id": ["a1", "b1", "a2", "b2", "a3"],
            "created_at": pd.to_datetime([f"2026-01-0{d}" for d in range(1, 6)]),
            "config_name": ["a", "b", "a", "b", "a"],
            "dataset_name": ["qa"] * 5,
            "dataset_version": ["1", "1", "2", "1", "2"],
            "value": [0.5, 0.6, 0.7, 0.8, 0.9],
            "p10": [0.1, 0.2, 0.3, 0.4, 0.5],
        }
    )
    fig = charts.config_trend(df, "recall_at_5")
    by_name = {t.name: t for t in fig.data}
    assert list(by_name) == ["a", "a p10", "a: dataset version changed", "b", "b p10"]
    assert list(by_name["a"].y) == [0.5, 0.7, 0.9] and list(by_name["b"].y) == [0.6, 0.8]
    assert by_name["a p10"].visible == "legendonly"  # two configs: the means first
    # the marker sits on a2, the first run of `a` on v2, and says what it was before
    (changed,) = [t for t in fig.data if "changed" in t.name]
    assert (
        list(changed.y) == [0.7] and "qa v2" in changed.text[0] and "was qa v1" in changed.text[0]
    )
    assert changed.legendgroup == "a"
    single = charts.config_trend(df[df["config_name"] == "b"], "recall_at_5")
    assert [t.name for t in single.data] == ["b", "b p10"] and single.data[1].visible is True


def test_tails_charts_send_each_points_hover_text_as_json_strings():
    # trend and distributions pass their per-point text as a string array (plotly checks
    # a list element by element); the browser must still get the escaped strings
    df = pd.DataFrame(
        {
            "run_id": ["r1", XSS],
            "created_at": ["2025-01-01", "2025-01-02"],
            "value": [0.5, 0.7],
            "p10": [0.1, 0.2],
            "question_id": ["q1", XSS],
            "config_name": ["c", "c"],
            "dataset_name": ["qa", "qa"],
            "dataset_version": ["1", "1"],
        }
    )
    for fig in (
        charts.config_trend(df, "faithfulness"),
        charts.distributions(df, "faithfulness", "ecdf"),
    ):
        sent = json.loads(pio.to_json(fig, validate=False))
        texts = [t for trace in sent["data"] for t in trace["text"]]
        assert any(html.escape(XSS) in t for t in texts)
        assert XSS not in " ".join(texts) and all(isinstance(t, str) for t in texts)


@st.composite
def _document(draw):
    length = draw(st.integers(1, 200_000))
    pair = st.tuples(st.integers(0, length - 1), st.integers(1, 2_000)).map(
        lambda p: (p[0], min(length, p[0] + p[1]))
    )
    return length, draw(st.lists(pair, min_size=1, max_size=3)), draw(st.lists(pair, max_size=5))


@settings(max_examples=300, deadline=None)
@given(_document())
def test_the_span_map_shows_every_range_and_little_else(doc):
    """A 300-character span in a 50,000-character document was a sliver on a 0–50,000
    axis: the map zooms to the region holding the gold spans and the chunks."""
    length, gold, placed = doc
    chunks = [(i + 1, f"c{i}", s, e) for i, (s, e) in enumerate(placed)]
    fig = charts.span_map("d", length, gold, chunks)
    lo, hi = fig.layout.xaxis.range
    ranges = gold + placed
    start, end = min(s for s, _ in ranges), max(e for _, e in ranges)
    assert 0 <= lo <= start and end <= hi <= length
    assert hi - lo <= (end - start) * 1.2 + 80 + 2  # the region and its margins
    assert (f"characters {lo:,}–{hi:,} of {length:,}" in fig.layout.title.text) == (
        (lo, hi) != (0, length)
    )
