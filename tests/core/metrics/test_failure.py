"""classify_failure: each branch, their precedence, and threshold validation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rageval_core.errors import ConfigError
from rageval_core.metrics.failure import FailureThresholds, classify_failure
from rageval_core.models import FAILURE_TYPES

GOOD = {
    "error": None,
    "answerable": True,
    "refused": False,
    "gold_ranks": [1],
    "faithfulness": 1.0,
    "answer_correctness": 1.0,
}


def classify(**overrides):
    return classify_failure(**{**GOOD, **overrides})


# ---------------------------------------------------------------------------- branches


def test_good_answer_is_ok():
    assert classify() == "ok"


def test_error():
    assert classify(error="ValueError: boom") == "error"


def test_empty_error_message_is_no_error():
    assert classify(error="") == "ok"


def test_unanswerable_answered_is_missed_refusal():
    assert classify(answerable=False, gold_ranks=[]) == "missed_refusal"


def test_unanswerable_refused_is_ok():
    # whatever the scores: nothing to retrieve, nothing to be faithful to
    assert (
        classify(
            answerable=False, refused=True, gold_ranks=[], faithfulness=None, answer_correctness=0
        )
        == "ok"
    )


def test_answerable_refused_is_false_refusal():
    assert classify(refused=True, faithfulness=None) == "false_refusal"


@pytest.mark.parametrize("ranks", [[], [None], [None, None], [21], [None, 25]])
def test_no_gold_in_top_20_is_retrieval_miss(ranks):
    assert classify(gold_ranks=ranks) == "retrieval_miss"


@pytest.mark.parametrize("ranks", [[6], [20], [None, 6], [30, 7]])
def test_gold_in_top_20_but_not_top_5_is_ranking_miss(ranks):
    assert classify(gold_ranks=ranks) == "ranking_miss"


@pytest.mark.parametrize("ranks", [[5], [1], [None, 5], [19, 3]])
def test_gold_in_top_5_is_no_retrieval_failure(ranks):
    assert classify(gold_ranks=ranks) == "ok"


def test_unfaithful_below_threshold_only():
    assert classify(faithfulness=0.79) == "unfaithful"
    assert classify(faithfulness=0.8) == "ok"  # the threshold itself passes


def test_incorrect_below_threshold_only():
    assert classify(answer_correctness=0.49) == "incorrect"
    assert classify(answer_correctness=0.5) == "ok"


def test_null_scores_are_not_failures():
    assert classify(faithfulness=None, answer_correctness=None) == "ok"
    assert classify(faithfulness=float("nan"), answer_correctness=float("nan")) == "ok"


# ---------------------------------------------------------------------------- precedence


def test_precedence_follows_spec_order():
    # every condition true at once, then remove them one by one from the front
    worst = {
        "error": "boom",
        "answerable": True,
        "refused": True,
        "gold_ranks": [None],
        "faithfulness": 0.0,
        "answer_correctness": 0.0,
    }
    assert classify_failure(**worst) == "error"
    worst["error"] = None
    assert classify_failure(**worst) == "false_refusal"
    worst["refused"] = False
    assert classify_failure(**worst) == "retrieval_miss"
    worst["gold_ranks"] = [10]
    assert classify_failure(**worst) == "ranking_miss"
    worst["gold_ranks"] = [2]
    assert classify_failure(**worst) == "unfaithful"
    worst["faithfulness"] = 0.9
    assert classify_failure(**worst) == "incorrect"
    worst["answer_correctness"] = 0.9
    assert classify_failure(**worst) == "ok"


def test_precedence_of_the_judge_and_reference_free_types():
    # a question with neither gold nor reference, every condition true at once
    worst = {
        "error": None,
        "answerable": True,
        "refused": False,
        "gold_ranks": None,
        "faithfulness": 0.0,
        "answer_correctness": None,
        "judge_failed": True,
        "context_relevance": 0.0,
        "answer_relevancy": 0.0,
    }
    assert classify_failure(**worst) == "unscored"
    worst["judge_failed"] = False
    assert classify_failure(**worst) == "irrelevant_context"
    worst["context_relevance"] = 0.4
    assert classify_failure(**worst) == "unfaithful"
    worst["faithfulness"] = 1.0
    assert classify_failure(**worst) == "off_topic"
    worst["answer_relevancy"] = 0.9
    assert classify_failure(**worst) == "ok"


def test_a_judge_error_is_unscored_never_ok():
    assert classify(judge_failed=True, faithfulness=None, answer_correctness=None) == "unscored"
    # an unanswerable question whose refusal the judge could not read: neither ok nor missed
    assert classify(answerable=False, gold_ranks=[], judge_failed=True) == "unscored"
    # what the judge was not needed for still shows: the pipeline's error, a retrieval miss
    assert classify(judge_failed=True, error="boom") == "error"
    assert classify(judge_failed=True, gold_ranks=[None]) == "retrieval_miss"
    assert classify(judge_failed=True, answerable=False, refused=True) == "ok"  # reported


def test_reference_free_types_stand_in_only_where_gold_or_reference_is_missing():
    # gold given: a retrieval miss speaks for retrieval, context relevance does not
    assert classify(context_relevance=0.0) == "ok"
    assert classify(gold_ranks=None, context_relevance=0.0) == "irrelevant_context"
    assert classify(gold_ranks=None, context_relevance=0.1) == "ok"  # the threshold passes
    # a reference given: correctness speaks for the answer, relevancy does not
    assert classify(answer_relevancy=0.0) == "ok"
    assert classify(answer_correctness=None, answer_relevancy=0.49) == "off_topic"
    assert classify(answer_correctness=None, answer_relevancy=0.5) == "ok"
    assert classify(gold_ranks=None, context_relevance=None, answer_correctness=None) == "ok"


def test_error_beats_missed_refusal():
    assert classify(error="timeout", answerable=False, gold_ranks=[]) == "error"


def test_missed_refusal_beats_later_types():
    assert (
        classify(answerable=False, gold_ranks=[], faithfulness=0.0, answer_correctness=0.0)
        == "missed_refusal"
    )


@given(
    error=st.one_of(st.none(), st.text(max_size=3)),
    answerable=st.booleans(),
    refused=st.booleans(),
    gold_ranks=st.lists(st.one_of(st.none(), st.integers(1, 40)), max_size=4),
    faithfulness=st.one_of(st.none(), st.floats(0, 1)),
    answer_correctness=st.one_of(st.none(), st.floats(0, 1)),
    judge_failed=st.booleans(),
    context_relevance=st.one_of(st.none(), st.floats(0, 1)),
    answer_relevancy=st.one_of(st.none(), st.floats(0, 1)),
    no_gold=st.booleans(),
)
def test_always_one_of_the_failure_types_and_a_judge_error_is_never_ok(no_gold, **kwargs):
    if no_gold:
        kwargs["gold_ranks"] = None
    got = classify_failure(**kwargs)
    assert got in FAILURE_TYPES
    if kwargs["judge_failed"] and not kwargs["refused"]:
        assert got != "ok"


@given(
    relevance=st.floats(0, 1),
    relevancy=st.floats(0, 1),
    faithfulness=st.one_of(st.none(), st.floats(0, 1)),
)
def test_a_reference_free_question_can_fail_on_what_it_has(relevance, relevancy, faithfulness):
    """No gold, no reference: every question is still held to a figure it has."""
    got = classify_failure(
        error=None,
        answerable=True,
        refused=False,
        gold_ranks=None,
        faithfulness=faithfulness,
        answer_correctness=None,
        context_relevance=relevance,
        answer_relevancy=relevancy,
    )
    if relevance < 0.1 or relevancy < 0.5 or (faithfulness is not None and faithfulness < 0.8):
        assert got in ("irrelevant_context", "unfaithful", "off_topic")
    else:
        assert got == "ok"


# ---------------------------------------------------------------------------- thresholds


def test_custom_thresholds_move_the_boundaries():
    t = FailureThresholds(rank_k=3, miss_k=10, faithfulness_min=0.5, correctness_min=0.9)
    assert classify(gold_ranks=[4], thresholds=t) == "ranking_miss"
    assert classify(gold_ranks=[11], thresholds=t) == "retrieval_miss"
    assert classify(faithfulness=0.6, thresholds=t) == "ok"
    assert classify(answer_correctness=0.8, thresholds=t) == "incorrect"
    t = FailureThresholds.from_mapping({"context_relevance_min": 0.5, "answer_relevancy_min": 0.9})
    assert classify(gold_ranks=None, context_relevance=0.4, thresholds=t) == "irrelevant_context"
    assert classify(answer_correctness=None, answer_relevancy=0.8, thresholds=t) == "off_topic"


def test_from_mapping_partial_keeps_defaults():
    t = FailureThresholds.from_mapping({"rank_k": 3, "faithfulness_min": 1})
    assert t == FailureThresholds(rank_k=3, faithfulness_min=1.0)
    assert isinstance(t.faithfulness_min, float)
    assert FailureThresholds.from_mapping({}) == FailureThresholds()


def test_from_mapping_lists_every_problem():
    with pytest.raises(ConfigError) as exc:
        FailureThresholds.from_mapping(
            {"rank_K": 3, "miss_k": "20", "faithfulness_min": 1.5, "correctness_min": True}
        )
    problems = exc.value.problems
    assert len(problems) == 4
    assert any("unknown key 'rank_K'" in p for p in problems)
    assert any(p.startswith("miss_k") for p in problems)
    assert any(p.startswith("faithfulness_min") for p in problems)
    assert any(p.startswith("correctness_min") for p in problems)


@pytest.mark.parametrize(
    "values",
    [
        {"rank_k": 0},
        {"miss_k": 2.5},
        {"rank_k": True},
        {"rank_k": 21},  # rank_k above miss_k: ranking_miss could never apply
        {"faithfulness_min": -0.1},
        {"correctness_min": float("nan")},
        {"correctness_min": None},
        {"context_relevance_min": 1.5},
        {"answer_relevancy_min": "0.5"},
    ],
)
def test_from_mapping_rejects_bad_values(values):
    with pytest.raises(ConfigError, match="invalid failure thresholds"):
        FailureThresholds.from_mapping(values)


@pytest.mark.parametrize("values", [None, [("rank_k", 3)], "rank_k: 3"])
def test_from_mapping_rejects_non_mappings(values):
    with pytest.raises(ConfigError, match="must be a mapping"):
        FailureThresholds.from_mapping(values)


def test_constructor_validates_too():
    with pytest.raises(ConfigError):
        FailureThresholds(rank_k=0)


def test_thresholds_are_frozen():
    with pytest.raises(AttributeError):
        FailureThresholds().rank_k = 3  # type: ignore[misc]
