"""The pure helpers behind labelling, Review and Judge, and the Review page's URL state."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.shaping import (
    CLAIM_CHOICES,
    JUDGE_IS_RIGHT,
    KAPPA,
    TOO_FEW,
    agreement_table,
    chosen_verdict,
    coverage_columns,
    disagreement_rows,
    human_summary,
    label_lines,
    queue_rows,
    reviewed_count,
    too_few_note,
)
from rageval_core.labels import HumanLabel, agreement
from rageval_core.links import REVIEW_SIZES, ViewState, relative_url
from rageval_core.query import Disagreement, QueueItem, RunCoverage


def lab(
    claim: str | None, value: str, reviewer: str = "ann", at: str = "2026-12-01T10:00:00Z", **kw
):
    verdict, question_label = (value, None) if claim is not None else (None, value)
    return HumanLabel("ds", "sha", "q1", claim, verdict, question_label, reviewer, at, **kw)


# ---------------------------------------------------------------------------- forms


def test_judge_is_right_stands_for_the_judges_own_verdict():
    assert CLAIM_CHOICES == (JUDGE_IS_RIGHT, "supported", "unsupported", "contradicted")
    assert chosen_verdict(JUDGE_IS_RIGHT, "unsupported") == "unsupported"
    assert chosen_verdict("contradicted", "unsupported") == "contradicted"
    with pytest.raises(ValueError, match="no verdict"):
        chosen_verdict(JUDGE_IS_RIGHT, None)  # nothing to agree with


# ---------------------------------------------------------------------------- label lines


def test_label_lines_say_who_what_against_which_verdict_newest_first():
    lines = label_lines(
        [
            lab("c", "supported", "ann", "2026-12-01T10:00:00Z", judge="unsupported"),
            lab("c", "unsupported", "bo", "2026-12-02T10:00:00Z", judge="unsupported",
                note="two\nlines"),
            lab(None, "fail", "cy", "2026-11-30T09:00:00Z", judge="fail"),
        ]
    )  # fmt: skip
    assert lines == [
        "bo: unsupported — two lines · 2026-12-02",  # agreeing: no "(judge: …)"
        "ann: supported (judge: unsupported) · 2026-12-01",
        "cy: fail · 2026-11-30",
    ]


def test_human_summary_counts_the_verdicts_people_gave():
    assert human_summary([]) == ""
    labels = [lab("c", "supported", "a"), lab("c", "supported", "b"), lab("c", "contradicted")]
    assert human_summary(labels) == "people: supported ×2, contradicted"


def test_reviewed_count_counts_queue_questions_with_a_label():
    assert reviewed_count(["q1", "q2", "q3"], ["q3", "q9", "q1"]) == 2
    assert reviewed_count([], ["q1"]) == 0


# ---------------------------------------------------------------------------- judge figures


def test_agreement_table_shows_each_figure_with_its_n():
    pairs = [("supported", "supported")] * 6 + [("unsupported", "supported")] * 2
    pairs += [("unsupported", "unsupported")] * 4
    a = agreement(pairs, ("supported", "unsupported", "contradicted"), n_boot=200)
    table = agreement_table({"claims": a})
    col = table["claims"]
    assert col[KAPPA] == f"{a.kappa:.2f}"
    assert col["95% interval (bootstrap)"] == f"{a.kappa_low:.2f} to {a.kappa_high:.2f}"
    assert col["raw agreement"] == "83.3%"
    assert col["labels behind these figures"] == "12"
    assert col["“unsupported” precision"] == "100.0%"  # every unsupported of the judge is
    assert col["“unsupported” recall"] == "66.7%"  # 4 of the 6 people found


def test_undefined_figures_are_a_dash_not_zero():
    empty = agreement([], ("pass", "fail"))
    col = agreement_table({"answers": empty})["answers"]
    assert col[KAPPA] == col["95% interval (bootstrap)"] == col["raw agreement"] == "–"
    assert col["labels behind these figures"] == "0"


def test_too_few_to_trust_below_the_threshold_only():
    def a(n: int):
        return agreement(
            [("pass", "pass"), ("fail", "pass")] * (n // 2), ("pass", "fail"), n_boot=10
        )

    assert "No labels yet" in too_few_note(a(0))
    assert "Only 2 labels: too few to trust" in too_few_note(a(2))
    assert too_few_note(a(TOO_FEW)) is None


def test_disagreement_rows_shorten_text_and_name_whole_answers():
    rows = disagreement_rows(
        [
            Disagreement("r1", "q1", "x" * 200, "supported", "unsupported", "ann", ""),
            Disagreement("r2", "q2", None, "fail", "pass", "bo", "see chunk 2"),
        ]
    )
    assert list(rows["run_id"]) == ["r1", "r2"]
    assert len(rows.loc[0, "claim"]) == 80 and rows.loc[0, "claim"].endswith("…")
    assert rows.loc[1, "claim"] == "(whole answer)"
    assert disagreement_rows([]).columns.tolist() == list(rows.columns)


def test_coverage_columns_per_run_in_the_order_given():
    cov = {"a": RunCoverage("a", 240, 12, 0.61), "b": RunCoverage("b", 0, 0, None)}
    out = coverage_columns(["b", "a", "c"], cov)
    assert out["claims checked"].tolist() == ["–", "12 of 240", "–"]
    assert out["judge κ"].tolist()[1] == 0.61 and out["judge κ"].isna().tolist() == [
        True,
        False,
        True,
    ]


# ---------------------------------------------------------------------------- URL state


@given(st.sampled_from(REVIEW_SIZES), st.integers(0, 1_000_000))
def test_review_state_survives_the_url(size, pos):
    state = ViewState(run="20261123-150000-verbose", size=size, pos=pos)
    parsed, errors = ViewState.from_query_params(state.to_query_params())
    assert (parsed, errors) == (state, [])


def test_review_url_values_are_validated():
    parsed, errors = ViewState.from_query_params({"size": "7", "pos": "-1"})
    assert (parsed.size, parsed.pos) == (None, 0)
    assert any("queue size must be one of 10, 20, 40, 100" in e.why for e in errors)
    assert any(e.parameter == "pos" for e in errors)
    assert (
        relative_url("review", ViewState(run="r", size=40, pos=17)) == "review?run=r&size=40&pos=17"
    )


def test_queue_rows_mark_the_reviewed_questions_in_queue_order():
    queue = [QueueItem("q3", "stratified: supported"), QueueItem("q1", "judges disagree")]
    rows = queue_rows(queue, ["q1", "q9"])
    assert rows.to_dict("list") == {
        "question_id": ["q3", "q1"],
        "why": ["stratified: supported", "judges disagree"],
        "reviewed": [False, True],
    }
