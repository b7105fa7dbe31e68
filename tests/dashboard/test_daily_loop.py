"""The daily loop on the pages (issue 14): flaky questions on Tails and in the Question
history, compare marking a regression on one, and the answer diff on Compare and Question."""

from __future__ import annotations

import pytest

from rageval_core.catalogue import BUILTIN
from tests.daily_loop import WRONG, add_changed_settings, add_flaky_series, add_latency_series
from tests.dashboard.apptest import seen


@pytest.fixture
def series(results):
    return results, add_flaky_series(results)


def _markdown(at) -> list[str]:
    return [m.value for m in at.markdown]


def test_tails_lists_the_flaky_question_with_how_often(series, app):
    results, s = series
    at = app(results, run=s.broken_run)
    at.run()
    at.switch_page("app_pages/tails.py").run()
    assert not at.exception
    [flaky] = [d for d in at.dataframe if "verdict_flips" in d.value.columns]
    row = flaky.value.set_index("question_id").loc[s.question]
    assert row["flaky_note"] == "flipped 3× in 4 runs of bm25-top5 with the same settings"
    assert (row["n_runs"], row["n_ok"], row["verdict_flips"]) == (4, 2, 3)


def test_compare_marks_the_flaky_regression_and_shows_the_answer_diff(series, app):
    results, s = series
    at = app(results, runs=[s.ok_run, s.broken_run], baseline=s.ok_run, question=s.question)
    at.run()
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception
    regressions = next(
        d.value for d in at.dataframe if "flaky_note" in d.value.columns and len(d.value)
    )
    row = regressions.set_index("question_id").loc[s.question]
    # in the Regressed tab; known before the two compared runs: the demo run and the 25th
    assert row["flaky_note"] == "flipped 1× in 2 runs of bm25-top5 with the same settings"
    assert any("Known flaky question: flipped 1× in 2 runs" in w.value for w in at.warning)
    diff = seen(next(m for m in _markdown(at) if ":green-background[" in m))
    assert ":red-background[~~" in diff and ":green-background[dry-goods courier]" in diff
    assert ":red-background[~~Rotterdam.~~]" in diff  # the right answer's word, struck
    assert at.query_params["question"] == s.question  # a copied link opens this diff
    claims = next(d.value for d in at.dataframe if "claim" in d.value.columns)
    assert list(claims.loc[claims["claim"] == WRONG, "after"]) == ["contradicted"]


def test_question_history_says_flaky_and_diffs_against_the_run_before(series, app):
    results, s = series
    at = app(results, run=s.broken_run, question=s.question)
    at.run()
    at.switch_page("app_pages/question.py").run()
    assert not at.exception
    assert any("Flaky question: flipped 3× in 4 runs" in w.value for w in at.warning)
    assert at.selectbox(key="question_diff_base").value == s.ok_run  # the run before
    assert any(":green-background[" in m and "Oslo." in seen(m) for m in _markdown(at))


def test_question_page_names_a_parameter_change_instead_of_noise(results, app):
    s = add_changed_settings(results)
    at = app(results, run=s.broken_run, question=s.question)
    at.run()
    at.switch_page("app_pages/question.py").run()
    assert not at.exception
    assert not any("Flaky question" in w.value for w in at.warning)
    [note] = [i.value for i in at.info if "settings changed" in i.value]
    assert s.ok_run in note and r"config.pipeline.params.top\_k 5 → 3" in note  # escaped


def test_a_latency_tile_is_noise_only_among_runs_with_the_same_settings(results, app):
    """430 ms after 410 is within the 310 ms every run of the name spans, but not within
    the 10 ms of the runs with its settings: the tile says worse, not grey."""
    last = add_latency_series(results)
    at = app(results)
    at.run()
    assert not at.exception
    assert f"Latest run: {last}" in [s.value for s in at.subheader]
    [tile] = [m for m in at.metric if m.label == BUILTIN.label("total_ms_p95")]
    assert tile.proto.delta == "+20 ms", tile.proto.delta
    assert tile.proto.color == tile.proto.MetricColor.RED  # worse, not grey
