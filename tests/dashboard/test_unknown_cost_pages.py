"""An unknown cost on the pages (issue 37, item 3): the Runs tile and table and the Cost
page show no value ("–", NULL), never $0.00, and the Cost page leaves the run off its cost
frontier with a note; a cost some questions lack says how many it covers."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from streamlit.testing.v1 import AppTest

from rageval_core.links import md_escape
from rageval_core.runs.layout import SUMMARY

from .conftest import LATEST


def _costs(results, run_id: str, known: int) -> int:
    """Keep the pipeline cost of the first `known` questions of `run_id`, drop the rest's
    (a pipeline that stopped reporting token counts); its number of questions."""
    path = results / run_id / "questions.parquet"
    t = pq.read_table(path)
    cost = t["cost_usd"].to_pylist()
    cost = [c if i < known else None for i, c in enumerate(cost)]
    t = t.set_column(t.schema.get_field_index("cost_usd"), "cost_usd", pa.array(cost, pa.float64()))
    pq.write_table(t, path)
    (results / run_id / SUMMARY).unlink(missing_ok=True)
    return len(t)


def _open(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_runs_page_shows_an_unknown_cost_as_a_dash(app, results):
    _costs(results, LATEST, 0)
    at = _open(app(results), "runs")
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["cost / question ($)"] == "–", tiles
    table = next(d.value for d in at.dataframe if "cost / question ($)" in d.value.columns)
    latest = table[table["run_id"] == LATEST]
    assert pd.isna(latest["cost / question ($)"].iloc[0])


def test_runs_tile_says_how_many_questions_a_partial_cost_covers(app, results):
    n = _costs(results, LATEST, 3)
    at = _open(app(results), "runs")
    labels = [m.label for m in at.metric]
    assert f"cost / question ($) (3 of {n} questions)" in labels, labels


def test_cost_page_leaves_an_unknown_cost_off_the_frontier(app, results):
    _costs(results, LATEST, 0)
    at = _open(app(results), "cost")
    notes = [c.value for c in at.caption]
    label = md_escape("cost / question ($)")  # captions are Markdown
    assert any(f"Left off the {label} chart" in c and LATEST in c for c in notes), notes
    table = next(d.value for d in at.dataframe if "dominated_cost" in d.value.columns)
    row = table[table["run_id"] == LATEST].iloc[0]
    assert pd.isna(row["cost_per_question"]) and pd.isna(row["dominated_cost"])
    assert table.loc[table["run_id"] != LATEST, "dominated_cost"].notna().all()
    drawn = [
        json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
        if "cost" in json.loads(c.proto.spec)["layout"]["title"]["text"]
    ]
    on_cost = [d for d in drawn if "left off" in d["layout"]["title"]["text"]]
    assert on_cost, [d["layout"]["title"]["text"] for d in drawn]
    points = [p for t in on_cost[0]["data"] for p in t.get("customdata", [])]
    assert points and not any(LATEST in p for p in points)


@pytest.mark.parametrize("page", ["runs", "cost", "diagnose", "compare", "tails"])
def test_pages_open_with_an_unknown_cost(app, results, page):
    _costs(results, LATEST, 0)
    at = _open(app(results), page)
    assert "$0.00" not in " ".join(m.value for m in at.metric)
