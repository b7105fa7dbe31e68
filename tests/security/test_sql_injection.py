"""Every query parameter is bound or whitelisted: injection attempts match nothing or fail
with a clear ConfigError/ResultsError, and the data is unchanged afterwards."""

from __future__ import annotations

import re

import pyarrow.parquet as pq
import pytest

from rageval_core import query
from rageval_core.errors import ConfigError, ResultsError

SQLI = [
    "' OR '1'='1",
    "x'; DROP TABLE t; --",
    "\"; SELECT * FROM read_text('/etc/passwd'); --",
    "1) UNION SELECT 1, 2, 3 --",
    'faithfulness" FROM x; --',
    "$run_paths",
    "?",
    "read_csv_auto('/etc/passwd')",
    "%' OR 1=1 OR '%",
]


@pytest.fixture(scope="module")
def run_id(demo_results, helpers):
    return helpers.run_ids(demo_results)[-1]


@pytest.mark.parametrize("payload", SQLI)
def test_identifiers_come_from_whitelists(payload, store, run_id):
    calls = [
        ("unknown sort key", lambda: query.question_rows(store, run_id, sort=payload)),
        ("unknown metric", lambda: query.bottom_questions(store, run_id, payload)),
        ("unknown metric", lambda: query.metric_distribution(store, run_id, payload)),
        ("unknown metric", lambda: query.metric_trend(store, payload)),
        ("cost_quality:", lambda: query.cost_quality(store, quality=payload)),
        (
            "unknown metric",
            lambda: query.compare_runs(store, [store.runs()[0].run_id, run_id], metrics=[payload]),
        ),
        ("unknown metric", lambda: query.QuestionFilter(metric_ranges=((payload, 0.0, 1.0),))),
    ]
    for what, call in calls:
        # the whitelist refused the name, not some later failure that happens to be a
        # ConfigError; and the hostile text is quoted cut short, never run
        with pytest.raises(ConfigError, match=f"^{re.escape(what)} ") as err:
            call()
        assert len(str(err.value).split(";")[0]) <= len(what) + 80


@pytest.mark.parametrize("payload", SQLI)
def test_values_are_bound(payload, store, run_id, demo_results):
    before = query.question_rows(store, run_id, limit=1000).total
    found = query.question_rows(store, run_id, query.QuestionFilter(search=payload)).total
    assert found == literal_matches(demo_results / run_id, payload)
    assert query.question_rows(store, run_id, query.QuestionFilter(tags=(payload,))).total == 0
    assert (
        query.question_rows(store, run_id, query.QuestionFilter(failure_types=(payload,))).total
        == 0
    )
    with pytest.raises(ResultsError):
        query.question_detail(store, run_id, payload)
    assert query.question_history(store, payload).empty
    for kw in ("tags", "config", "dataset", "dataset_version", "status"):
        assert query.runs_overview(store, **{kw: payload}).empty, kw
        if kw != "status":
            assert query.metric_trend(store, "faithfulness", **{kw: payload}).empty, kw
    # Nothing was changed by any of it.
    assert query.question_rows(store, run_id, limit=1000).total == before
    assert pq.read_table(demo_results / run_id / "questions.parquet").num_rows == before


def literal_matches(run_dir, text: str) -> int:
    """Rows whose question or answer contains `text` literally, case-insensitive."""
    rows = pq.read_table(run_dir / "questions.parquet").to_pylist()
    t = text.lower()
    return sum(t in (r["question"] or "").lower() or t in (r["answer"] or "").lower() for r in rows)


def test_like_wildcards_are_literal(store, run_id, demo_results):
    for char in ("%", "_", "\\", "?"):
        got = query.question_rows(store, run_id, query.QuestionFilter(search=char)).total
        assert got == literal_matches(demo_results / run_id, char), char
