"""runs_overview and question_rows select a figure NULL in every row as NaN: the frames
are the ones the plain query gives, and a figure that fills later shows its values."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from rageval_core.query import (
    QuestionFilter,
    ResultsStore,
    _across_runs,
    _run_questions,
    question_rows,
    runs_overview,
)
from rageval_core.runs.layout import journal_name

from .conftest import row, write_run


def _rows(n: int, **kw) -> list[dict]:
    """Rows with NULL text (reference answers, errors), NULL numbers, booleans and lists."""
    return [
        row(
            f"q{i}",
            answerable=i % 3 != 0,
            faithfulness=None if i % 2 else i / n,
            refused=i == 1,
            tags=["multi-hop"] if i % 2 else [],
            error="boom" if i == 4 else None,
            failure_type="error" if i == 4 else "ok",
            **kw,
        )
        for i in range(n)
    ]


def _plain(monkeypatch: pytest.MonkeyPatch, call):
    """`call()` with no column taken for empty: the frame of the plain query."""
    with monkeypatch.context() as m:
        for module in (_across_runs, _run_questions):
            m.setattr(module, "empty_doubles", lambda *a, **k: frozenset())
        return call()


CALLS = {
    "overview": lambda s: runs_overview(s),
    "overview(tag)": lambda s: runs_overview(s, tags=["release"]),
    "page": lambda s: question_rows(s, "b-run", limit=50).rows,
    "page(filter, sort)": lambda s: (
        question_rows(
            s,
            "b-run",
            QuestionFilter(metric_ranges={"faithfulness": (0.0, 0.9)}),
            sort="span_recall_at_5",
        ).rows
    ),
    "page(no rows)": lambda s: (
        question_rows(s, "b-run", QuestionFilter(search="no such text")).rows
    ),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_frames_equal_the_plain_query(results, monkeypatch, name):
    write_run(results, "a-run", _rows(6, span_recall_at_5=0.5), created_at="2025-01-01T00:00:00Z")
    write_run(results, "b-run", _rows(8), created_at="2025-01-02T00:00:00Z", tags=("release",))
    store = ResultsStore(results)
    got = CALLS[name](store)
    want = _plain(monkeypatch, lambda: CALLS[name](store))
    pd.testing.assert_frame_equal(got, want)
    pd.testing.assert_frame_equal(CALLS[name](store), want)  # the memoised second call


def test_a_figure_that_fills_after_a_refresh_shows_its_values(results):
    write_run(results, "b-run", _rows(4), created_at="2025-01-01T00:00:00Z")
    store = ResultsStore(results)
    assert runs_overview(store)["span_recall_at_5"].isna().all()
    assert question_rows(store, "b-run").rows["context_relevance"].isna().all()
    write_run(results, "c-run", _rows(4, span_recall_at_5=0.25), created_at="2025-01-02T00:00:00Z")
    write_run(results, "b-run", _rows(4, context_relevance=0.75), created_at="2025-01-01T00:00:00Z")
    store.refresh()
    overview = runs_overview(store).set_index("run_id")
    assert overview.loc["c-run", "span_recall_at_5"] == pytest.approx(0.25)
    assert pd.isna(overview.loc["b-run", "span_recall_at_5"])
    assert (question_rows(store, "b-run").rows["context_relevance"] == 0.75).all()


def test_a_running_run_shows_values_its_journal_gained_since_the_refresh(results):
    d = write_run(results, "live-run", _rows(2), status="running")
    store = ResultsStore(results)
    assert question_rows(store, "live-run").rows["context_relevance"].isna().all()
    more = [{**r, "run_id": "live-run"} for r in _rows(3, context_relevance=0.5)[2:]]
    with open(d / journal_name(), "a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in more)
    rows = question_rows(store, "live-run").rows.set_index("question_id")
    assert rows.loc["q2", "context_relevance"] == 0.5
