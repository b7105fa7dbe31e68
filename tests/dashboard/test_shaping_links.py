"""The fast link and option builders of `dashboard.shaping` give what the slow ones did."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.shaping import distinct, question_links, run_links, run_tags
from rageval_core.links import ViewState, relative_url

ids = st.text(min_size=0, max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(ids, max_size=8), st.sampled_from(["diagnose", "runs", "question", "compare"]))
def test_run_links_are_relative_url_of_each_run(run_ids, page):
    assert run_links(run_ids, page) == [relative_url(page, ViewState(run=r)) for r in run_ids]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(ids, ids), max_size=8), st.one_of(st.none(), ids))
def test_question_links_are_relative_url_of_each_row(pairs, run_id):
    rows = pd.DataFrame(pairs, columns=["run_id", "question_id"], dtype="object")
    want = [
        relative_url("question", ViewState(run=str(r if run_id is None else run_id), question=q))
        for r, q in pairs
    ]
    assert list(question_links(rows, run_id)) == want


@given(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "", "c d"])), max_size=20))
def test_distinct_is_the_sorted_non_empty_strings(values):
    for dtype in ("object", "string[pyarrow]"):
        series = pd.Series(values, dtype=dtype)
        assert distinct(series) == sorted({v for v in values if v})


@given(st.lists(st.one_of(st.none(), st.lists(st.sampled_from(["a", "b b", "é"]), max_size=3))))
def test_run_tags_are_every_tag_once_sorted(tag_lists):
    want = sorted({t for ts in tag_lists if ts is not None for t in ts})
    arrow = pd.ArrowDtype(pa.list_(pa.string()))
    for series in (pd.Series(tag_lists, dtype="object"), pd.Series(tag_lists, dtype=arrow)):
        assert run_tags(pd.DataFrame({"tags": series})) == want
