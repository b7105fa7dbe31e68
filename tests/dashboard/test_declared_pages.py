"""Runs that declare their own metrics (`groundedness`, higher is better, `toxicity`,
lower is better) beside ordinary runs: every page offers them, with their labels, and a
run with a hostile declaration is still listed with its problem shown."""

from __future__ import annotations

import json

import pytest

from tests.core.query.conftest import row, write_run
from tests.dashboard.apptest import figure, no_exception, open_page, texts


def test_runs_page_offers_declared_metrics_in_the_trend_and_latest_figures(app, declared_results):
    at = no_exception(app(declared_results, metric="groundedness").run())
    assert at.selectbox(key="runs_metric").value == "groundedness"
    assert "groundedness" in figure(at, 0)["layout"]["title"]["text"]
    labels = [m.label for m in at.metric]
    assert "groundedness" in labels and "toxicity" in labels
    latest = {m.label: m.value for m in at.metric}
    assert latest["groundedness"] == "0.225"  # decl-b, the newest run
    table = at.dataframe[0].value
    assert set(table["run_id"]) == {"plain", "decl-a", "decl-b", "hostile"}
    assert "groundedness" in table.columns
    # the hostile declaration is a problem of a run that is still listed
    banner = " ".join(texts(at.warning))
    assert "hostile" in banner and "lowercase letters" in banner


def test_tails_page_shows_a_declared_metric(app, declared_results):
    at = open_page(app(declared_results, metric="toxicity", run="decl-b"), "tails")
    assert at.selectbox(key="tails_metric").value == "toxicity"
    assert "toxicity" in figure(at, 0)["layout"]["title"]["text"]
    bottom = at.dataframe[0].value
    assert bottom["question_id"].tolist() == ["q9"]  # lower is better: the highest is worst


def test_diagnose_filters_sorts_and_shows_a_declared_metric(app, declared_results):
    at = open_page(
        app(
            declared_results,
            run="decl-a",
            sort="groundedness",
            range="groundedness:0.5:1",
        ),
        "diagnose",
    )
    assert at.selectbox(key="diagnose_range_metric").value == "groundedness"
    assert at.selectbox(key="diagnose_sort").value == "groundedness"
    table = at.dataframe[-1].value
    assert table["question_id"].tolist() == [f"q{i}" for i in range(5, 10)]
    assert table["groundedness"].tolist()[0] == pytest.approx(0.5)


def test_diagnose_range_filter_spans_a_declared_metrics_own_range(app, scratch):
    root = scratch / "results"
    rating = {"rating": {"label": "rating", "direction": "higher", "range": [1, 5]}}
    rows = [row(f"q{i}", rating=1 + i / 2) for i in range(9)]  # 1.0, 1.5, ... 5.0
    write_run(root, "rated", rows, metrics=rating)
    at = open_page(app(root, run="rated", range="rating:3:5"), "diagnose")
    slider = at.slider(key="diagnose_range_rating")
    assert (slider.min, slider.max, slider.value) == (1.0, 5.0, (3.0, 5.0))
    table = at.dataframe[-1].value
    assert sorted(table["rating"]) == [3.0, 3.5, 4.0, 4.5, 5.0]


def test_compare_page_pairs_declared_metrics(app, declared_results):
    at = open_page(app(declared_results, runs=["decl-a", "decl-b"], baseline="decl-a"), "compare")
    (metrics,) = [d.value for d in at.dataframe if "ci_low" in d.value.columns]
    assert {"groundedness", "toxicity"} <= set(metrics["metric"])  # by their labels
    # the delta chart names them by their declared labels
    assert "groundedness" in json.dumps(figure(at, 0)["data"])
    regressions = [d.value for d in at.dataframe if "changes" in d.value.columns]
    assert any(r["changes"].str.contains("groundedness").any() for r in regressions)


def test_cost_page_ranks_by_a_declared_quality(app, declared_results):
    at = open_page(app(declared_results, metric="groundedness"), "cost")
    assert at.selectbox(key="cost_metric").value == "groundedness"
    assert "toxicity" not in at.selectbox(key="cost_metric").options  # lower is better
    table = at.dataframe[0].value
    assert "quality" in table.columns and set(table["run_id"]) == {"decl-a", "decl-b"}
    # the column is headed by the declared label, with the declared-metric help
    header = at.dataframe[0].proto.columns
    assert "groundedness" in header and "declares" in header, header


def test_question_page_shows_the_runs_declared_scores(app, declared_results):
    at = open_page(app(declared_results, run="decl-a", question="q3"), "question")
    values = {m.label: m.value for m in at.metric}
    assert values["groundedness"] == "0.300" and values["toxicity"] == "0.130"
    # the question's history plots them too (runs without them leave gaps, not zeros)
    (history,) = [
        f
        for i in range(len(at.get("plotly_chart")))
        if "across runs" in json.dumps(f := figure(at, i))
    ]
    traces = {t["name"]: t for t in history["data"]}
    assert {"groundedness", "toxicity", "recall@5"} <= set(traces)


def test_latest_run_gets_no_tile_for_a_metric_only_other_runs_declare(app, declared_results):
    """A newest run without the declared metrics shows its built-in figures ("–" where
    unknown) and no groundedness/toxicity tile it could never fill."""
    write_run(
        declared_results,
        "newest",
        [row(f"q{i}") for i in range(10)],
        created_at="2025-02-01T00:00Z",
    )
    at = no_exception(app(declared_results).run())
    latest = {m.label: m.value for m in at.metric}
    assert not {"groundedness", "toxicity"} & set(latest)
    assert latest["p95 latency (ms)"] == "–"  # built-in figures stay, known or not
    assert "groundedness" in at.dataframe[0].value.columns  # the table still has them
