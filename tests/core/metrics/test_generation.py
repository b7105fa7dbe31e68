"""Generation metrics: SQuAD-style normalisation, token F1, containment, correctness."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rageval_core.metrics.generation import (
    answer_correctness,
    contains_answer,
    content_recall,
    normalize_answer,
    token_f1,
)
from rageval_core.metrics.words import fold_typography

# ---------------------------------------------------------------------------- hand cases


def test_normalize_answer():
    assert normalize_answer("  The Cat, sat on A mat!  ") == "cat sat on mat"
    assert normalize_answer("theatre") == "theatre"  # articles only as whole words


def test_token_f1_hand_case():
    # pred -> [cat, sat], ref -> [cat, sat, down]: common 2, P = 2/2, R = 2/3
    # F1 = 2 · 1 · 2/3 / (1 + 2/3) = (4/3) / (5/3) = 0.8
    assert token_f1("the cat sat", "a cat sat down") == pytest.approx(0.8)


def test_token_f1_counts_common_tokens_with_multiplicity():
    # pred [x, x, y], ref [x, y, z]: common = min(2, 1) + min(1, 1) = 2
    # P = 2/3, R = 2/3, F1 = 2/3
    assert token_f1("x x y", "x y z") == pytest.approx(2 / 3)


def test_token_f1_no_overlap_is_zero():
    assert token_f1("red", "blue") == 0.0


def test_token_f1_empty_strings():
    assert token_f1("", "") == 1.0
    assert token_f1("the", "a") == 1.0  # both normalise to nothing
    assert token_f1("answer", "") == 0.0
    assert token_f1("", "answer") == 0.0


def test_contains_answer_matches_whole_tokens():
    assert contains_answer("It opened in 1998.", "1998")
    assert contains_answer("It opened in 1998.", "the 1998")  # article dropped
    assert not contains_answer("It opened in 19980.", "1998")
    assert not contains_answer("anything", "")
    assert not contains_answer("anything", "the")  # reference normalises to nothing


def test_answer_correctness():
    # contained -> 1.0 even though F1 would punish the extra words
    assert answer_correctness("It opened in 1998.", "1998") == 1.0
    # not contained -> token F1: [opened, 1999] vs [1998]: no overlap
    assert answer_correctness("opened 1999", "1998") == 0.0
    # F1: [paris, france] vs [paris, is, capital]: common 1, P = 1/2, R = 1/3, F1 = 0.4;
    # content recall: {paris, capital} holds 1 of 2 (precision 1/2 above the floor) = 0.5
    assert answer_correctness("Paris, France", "Paris is the capital") == pytest.approx(0.5)
    # a reference number the answer lacks leaves only F1: [48, hours] vs [24, hours] = 0.5
    assert answer_correctness("48 hours", "24 hours") == pytest.approx(0.5)


def test_content_recall_floor():
    # reference {termination, model} fully held; answer has 40 content words: P = 2/40 =
    # 0.05, half the floor of 0.1, so recall 1.0 is halved
    answer = "termination model " + " ".join(f"filler{i}" for i in range(38))
    assert content_recall(answer, "the termination model") == pytest.approx(0.5)
    assert content_recall("the termination model is used", "termination model") == 1.0


@pytest.mark.parametrize("reference", [None, "", "   "])
def test_answer_correctness_without_reference_is_none(reference):
    assert answer_correctness("something", reference) is None


# ---------------------------------------------------------------------------- properties

words = st.sampled_from(["the", "a", "cat", "Cat", "sat", "mat", "1998", "on", ",", "!"])
texts = st.lists(words, max_size=8).map(" ".join) | st.text(max_size=30)


@given(texts, texts)
def test_token_f1_is_symmetric(a, b):
    assert token_f1(a, b) == token_f1(b, a)


@given(texts)
def test_token_f1_of_identical_texts_is_one(a):
    assert token_f1(a, a) == 1.0


@given(texts, texts)
def test_token_f1_in_unit_interval(a, b):
    assert 0.0 <= token_f1(a, b) <= 1.0


@given(texts, texts)
def test_answer_correctness_in_unit_interval_and_at_least_f1(a, b):
    score = answer_correctness(a, b)
    if not b.strip():
        assert score is None
    else:
        assert 0.0 <= score <= 1.0
        assert score >= token_f1(a, b)


@given(texts, texts)
def test_an_answer_wrapping_the_reference_scores_full_marks(a, b):
    if normalize_answer(fold_typography(b)):
        assert answer_correctness(f"{a} {b} {a}", b) == 1.0


@given(texts, texts)
def test_words_unrelated_to_the_reference_score_zero(a, b):
    if not set(normalize_answer(a).split()) & set(normalize_answer(b).split()) and b.strip():
        assert answer_correctness(a, b) in (0.0, 1.0)  # 1.0 only when both normalise empty
        assert content_recall(a, b) == 0.0


@given(texts)
def test_normalize_is_idempotent(a):
    assert normalize_answer(normalize_answer(a)) == normalize_answer(a)
