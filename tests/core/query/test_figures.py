"""Figures that mean what their labels say, on real runs written to tmp_path.

- comparing runs with nothing to pair (no question in common, a run of 0 rows) is a
  defined result, not an exception, in the library, `rageval compare` and `report --baseline`
- the paired bootstrap never raises and its interval holds the point estimate
- the bottom 10% is a tenth of the questions whatever the ties, and its label says so
- run-level correctness covers answerable questions; refusals have their own figures
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.cli import main
from rageval_core.errors import ConfigError
from rageval_core.query import (
    ResultsStore,
    bottom_questions,
    compare_runs,
    format_comparison,
    metric_distribution,
    runs_overview,
    summarize_run,
)
from rageval_core.query._compare import paired_bootstrap_many
from rageval_core.runs.reading import inspect_run

from .conftest import row, write_run

# ---------------------------------------------------------------------------- nothing to pair


def _runs(results):
    """`base` (q1, q2), `other` (x1, x2: nothing in common), `empty` (0 rows), `holes`
    (q1, q2 without answer_correctness)."""
    write_run(
        results,
        "base",
        [row("q1", answer_correctness=0.5), row("q2", answer_correctness=1.0)],
        created_at="2025-01-01T00:00:00Z",
    )
    write_run(
        results,
        "other",
        [row("x1", answer_correctness=0.2), row("x2", answer_correctness=0.4)],
        created_at="2025-01-02T00:00:00Z",
    )
    write_run(results, "empty", [], created_at="2025-01-03T00:00:00Z")
    write_run(
        results,
        "holes",
        [row("q1", answer_correctness=None), row("q2", answer_correctness=None)],
        created_at="2025-01-04T00:00:00Z",
    )


NOTES = {
    ("base", "other"): "no questions in common",
    ("base", "empty"): "empty has no questions",
    ("empty", "base"): "baseline empty has no questions",
    ("base", "holes"): "no question has a value in both runs",
}


@pytest.mark.parametrize(("baseline", "cand"), list(NOTES))
def test_compare_with_nothing_to_pair_has_no_delta_and_says_why(results, baseline, cand):
    _runs(results)
    c = compare_runs(ResultsStore(results), [baseline, cand])
    m = c.metrics[c.metrics["run_id"] == cand].set_index("metric")
    ac = m.loc["answer_correctness"]
    assert ac["n_pairs"] == 0 and not ac["significant"]
    assert all(pd_missing(ac[k]) for k in ("delta", "ci_low", "ci_high"))
    assert ac["note"] == NOTES[(baseline, cand)]
    if cand != "holes":  # every metric is unavailable, and a warning says so once
        assert set(m["note"]) == {NOTES[(baseline, cand)]}
        assert any(NOTES[(baseline, cand)] in w for w in c.warnings), c.warnings
    base_rows = c.metrics[c.metrics["run_id"] == baseline]
    assert base_rows["note"].isna().all()  # the baseline's own rows need no reason
    text = format_comparison(c)
    assert NOTES[(baseline, cand)] in text


def pd_missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def test_cli_compare_with_nothing_to_pair_is_clean(results, capsys):
    _runs(results)
    for pair in (["base", "other"], ["base", "empty"], ["empty", "base"]):
        assert main(["compare", *pair, "--results", str(results)]) == 0
        out, err = capsys.readouterr()
        assert "Traceback" not in err and err == ""
        assert ("no questions in common" in out) or ("has no questions" in out), out
        assert main(["compare", *pair, "--results", str(results), "--format", "markdown"]) == 0
        assert "| metric |" in capsys.readouterr().out


@pytest.mark.parametrize(("baseline", "cand"), [("base", "other"), ("base", "empty")])
def test_report_with_a_baseline_that_shares_nothing(results, tmp_path, capsys, baseline, cand):
    _runs(results)
    out = tmp_path / "r.html"
    argv = ["report", cand, "--baseline", baseline, "--out", str(out), "--results", str(results)]
    assert main(argv) == 0, capsys.readouterr().err
    html = out.read_text()
    assert NOTES[(baseline, cand)] in html


# ---------------------------------------------------------------------------- bootstrap

_value = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    st.just(math.nan),
    st.sampled_from([0.0, 1.0, 0.5]),  # ties
)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 30).flatmap(
        lambda n: st.integers(1, 3).flatmap(
            lambda k: st.lists(st.lists(_value, min_size=k, max_size=k), min_size=n, max_size=n)
        )
    ),
    st.integers(0, 3),
)
def test_bootstrap_never_raises_and_holds_the_estimate(rows, seed):
    k = len(rows[0]) if rows else 2
    diffs = np.array(rows, dtype=float).reshape(len(rows), k)
    lo, hi = paired_bootstrap_many(diffs, n_resamples=200, seed=seed)
    assert lo.shape == hi.shape == (k,)
    again = paired_bootstrap_many(diffs, n_resamples=200, seed=seed)
    np.testing.assert_array_equal(lo, again[0])
    np.testing.assert_array_equal(hi, again[1])
    for j in range(k):
        col = diffs[:, j]
        present = col[~np.isnan(col)]
        if len(present) == 0:
            assert np.isnan(lo[j]) and np.isnan(hi[j])
            continue
        est = present.mean()
        slack = 1e-9 * max(1.0, abs(est), *np.abs(present))
        assert lo[j] - slack <= est <= hi[j] + slack, (lo[j], est, hi[j])
        if len(present) == 1:
            assert lo[j] == pytest.approx(est) and hi[j] == pytest.approx(est)


@pytest.mark.parametrize("shape", [(0,), (0, 3), (5, 0), (1,), (1, 2)])
def test_bootstrap_takes_any_shape(shape):
    diffs = np.full(shape, 0.25)
    lo, hi = paired_bootstrap_many(diffs)
    k = 1 if len(shape) == 1 else shape[1]
    assert lo.shape == hi.shape == (k,)
    if shape[0]:
        assert np.allclose(lo, 0.25) and np.allclose(hi, 0.25)
    else:
        assert np.isnan(lo).all() and np.isnan(hi).all()


# ---------------------------------------------------------------------------- the bottom tenth

_score = st.one_of(
    st.sampled_from([0.0, 0.5, 1.0]),  # ties, often
    st.floats(0, 1),
    st.none(),
    st.sampled_from([math.nan, math.inf]),  # no value, as NULL
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(_score, max_size=60).flatmap(
        lambda s: st.tuples(st.just(s), st.permutations(range(len(s))))
    ),
    st.sampled_from([10, 10, 25, 50, 100]),
    st.sampled_from(["faithfulness", "total_ms"]),
)
def test_the_tail_is_exactly_its_share_whatever_the_ties(scores_ids, pct, metric):
    scores, perm = scores_ids
    ids = [f"q{p:03d}" for p in perm]  # file order is not id order
    with tempfile.TemporaryDirectory() as d:
        write_run(Path(d), "r", [row(q, **{metric: s}) for q, s in zip(ids, scores, strict=True)])
        with ResultsStore(d, read_only=True, refresh=False) as store:
            tail = bottom_questions(store, "r", metric, pct=pct)
    scored = [(s, q) for s, q in zip(scores, ids, strict=True) if s is not None]
    scored = [(s, q) for s, q in scored if math.isfinite(s)]
    high = metric == "total_ms"  # latency: the tail is the slowest
    worst_first = sorted(scored, key=lambda t: (-t[0] if high else t[0], t[1]))
    n = math.ceil(len(scored) * pct / 100)
    assert tail.n_scored == len(scored)
    assert len(tail.rows) == n
    assert list(zip(tail.rows["value"], tail.rows["question_id"], strict=True)) == worst_first[:n]
    shown, left = [v for v, _ in worst_first[:n]], [v for v, _ in worst_first[n:]]
    if shown and left:
        assert (min(left) >= max(shown)) if not high else (max(left) <= min(shown))


def _ties(results, n=626, low=388):
    """n answerable questions: `low` with faithfulness 0.5, the rest 1.0; recall@5 all 1.0."""
    write_run(
        results,
        "ties",
        [row(f"q{i:04d}", faithfulness=0.5 if i < low else 1.0) for i in range(n)],
    )


def test_ties_do_not_swell_the_tail_and_the_label_says_what_is_shown(results):
    _ties(results)
    store = ResultsStore(results)
    tail = bottom_questions(store, "ties", "faithfulness")
    assert len(tail.rows) == 63  # ceil(626 / 10), not the 388 tied at the cut
    assert list(tail.rows["question_id"]) == [f"q{i:04d}" for i in range(63)]
    assert tail.describe("faithfulness") == (
        "bottom 10%: 63 of 626 questions, faithfulness ≤ 0.50 "
        "(388 are ≤ 0.50: ties broken by question id)"
    )
    everyone = bottom_questions(store, "ties", "recall_at_5")  # every value is 1.0
    assert len(everyone.rows) == 63
    assert everyone.describe("recall@5").startswith("bottom 10%: 63 of 626 questions, recall@5")
    slow = bottom_questions(store, "ties", "total_ms")
    assert slow.describe("total ms") == "no question of this run has a value for total ms"


@pytest.mark.parametrize("pct", [0, -5, 100.5, math.nan, True, "10"])
def test_a_tail_share_outside_0_to_100_is_refused(results, pct):
    _ties(results, n=5, low=1)
    with pytest.raises(ConfigError, match="pct must be in"):
        bottom_questions(ResultsStore(results), "ties", "faithfulness", pct=pct)


def test_report_tail_is_a_tenth_with_the_same_label(results, tmp_path):
    write_run(
        results,
        "ties",
        [row(f"q{i:03d}", answer_correctness=0.0 if i < 60 else 1.0) for i in range(100)],
    )
    out = tmp_path / "r.html"
    assert main(["report", "ties", "--out", str(out), "--results", str(results)]) == 0
    html = out.read_text()
    assert "bottom 10%: 10 of 100 questions, correctness (answerable) ≤ 0.00" in html


# ---------------------------------------------------------------------------- correctness


def _refusal_runs(results):
    """Three runs on q1, q2 (answerable) and u1, u2 (unanswerable).

    - `sure`: answers 0.9, declines u1, answers u2 (a missed refusal)
    - `shaky`: answers 0.4, declines both — the same mean of the per-question column as
      `sure` (0.7), which is how different runs showed identical correctness
    - `brave`: answers 0.9 like `sure`, answers both unanswerable (two missed refusals)
    """

    def rows(score, refuse_u2, refuse_u1=True):
        return [
            row("q1", answer_correctness=score, failure_type="ok"),
            row("q2", answer_correctness=score, failure_type="ok"),
            *(
                row(
                    u,
                    answerable=False,
                    refused=declined,
                    answer_correctness=1.0 if declined else 0.0,
                    failure_type="ok" if declined else "missed_refusal",
                )
                for u, declined in (("u1", refuse_u1), ("u2", refuse_u2))
            ),
        ]

    write_run(results, "sure", rows(0.9, False), created_at="2025-01-01T00:00:00Z")
    write_run(results, "shaky", rows(0.4, True), created_at="2025-01-02T00:00:00Z")
    write_run(results, "brave", rows(0.9, False, False), created_at="2025-01-03T00:00:00Z")


EXPECTED = {  # correctness over q1, q2; abstention over u1, u2
    "sure": {"answer_correctness": 0.9, "missed_refusal_rate": 0.5},
    "shaky": {"answer_correctness": 0.4, "missed_refusal_rate": 0.0},
    "brave": {"answer_correctness": 0.9, "missed_refusal_rate": 1.0},
}


def test_correctness_covers_answerable_questions_and_refusals_stand_apart(results):
    _refusal_runs(results)
    store = ResultsStore(results)
    overview = runs_overview(store).set_index("run_id")  # the cached summaries
    for run_id, want in EXPECTED.items():
        direct = summarize_run(inspect_run(str(results), run_id))  # the run's own files
        for s in (direct, overview.loc[run_id]):
            assert s["answer_correctness"] == pytest.approx(want["answer_correctness"])
            assert s["answer_correctness_p10"] == pytest.approx(want["answer_correctness"])
            assert s["answer_correctness_below_threshold"] == pytest.approx(
                float(want["answer_correctness"] < 0.5)
            )
            assert s["missed_refusal_rate"] == pytest.approx(want["missed_refusal_rate"])
            assert s["false_refusal_rate"] == 0.0
    # compare: means and per-question deltas of correctness over answerable questions only
    c = compare_runs(store, ["sure", "shaky", "brave"], metrics=["answer_correctness"])
    m = c.metrics.set_index("run_id")
    assert m.loc["sure", "mean"] == pytest.approx(0.9) and m.loc["sure", "n"] == 2
    assert m.loc["shaky", "delta"] == pytest.approx(-0.5) and m.loc["shaky", "n_pairs"] == 2
    assert m.loc["brave", "delta"] == pytest.approx(0.0)
    moved = c.changes[c.changes["metric"] == "answer_correctness"]
    assert set(moved["question_id"]) == {"q1", "q2"}  # u1/u2 show as flips, not scores
    assert list(c.flips[c.flips["run_id"] == "brave"]["question_id"]) == ["u1"]
    # the tail and the distribution of correctness are over answerable questions too
    assert list(metric_distribution(store, "sure", "answer_correctness")["value"]) == [0.9, 0.9]
    assert bottom_questions(store, "brave", "answer_correctness").n_scored == 2


def test_check_and_report_label_correctness_as_answerable(results, tmp_path, capsys):
    _refusal_runs(results)
    r = ["--results", str(results)]
    assert main(["check", "shaky", "--baseline", "sure", *r]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "correctness (answerable)" in x)
    assert "(answerable)" in line and "0.400" in line and "(was 0.900)" in line, out
    html_out = tmp_path / "r.html"
    assert main(["report", "shaky", "--baseline", "sure", "--out", str(html_out), *r]) == 0
    html = html_out.read_text()
    assert "correctness (answerable)" in html and "missed refusals" in html
