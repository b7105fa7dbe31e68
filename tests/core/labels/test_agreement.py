"""Agreement figures: hand-computed cases and properties of kappa and its interval."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.labels import VERDICTS, agreement, cohen_kappa

CATS = ("supported", "unsupported", "contradicted")
pairs_st = st.lists(st.tuples(st.sampled_from(CATS), st.sampled_from(CATS)), max_size=60)


def test_hand_computed_two_by_two():
    # 20 pairs: 8 s-s, 2 s-u, 4 u-s, 6 u-u. p_o = 0.7, p_e = .5*.6 + .5*.4 = 0.5, kappa 0.4
    pairs = [("supported", "supported")] * 8 + [("supported", "unsupported")] * 2
    pairs += [("unsupported", "supported")] * 4 + [("unsupported", "unsupported")] * 6
    a = agreement(pairs, VERDICTS)
    assert a.n == 20 and a.raw == pytest.approx(0.7) and a.kappa == pytest.approx(0.4)
    assert a.confusion == ((8, 2, 0), (4, 6, 0), (0, 0, 0))
    assert a.kappa_low < 0.4 < a.kappa_high
    # judge said unsupported 8 times, 6 rightly; people said so 10 times, judge caught 6
    assert a.unsupported_precision == pytest.approx(6 / 8)
    assert a.unsupported_recall == pytest.approx(6 / 10)


def test_no_pairs_and_one_shared_category_are_undefined():
    empty = agreement([], VERDICTS)
    assert (empty.n, empty.raw, empty.kappa, empty.kappa_low) == (0, None, None, None)
    assert empty.unsupported_precision is None and empty.unsupported_recall is None
    same = agreement([("supported", "supported")] * 5, VERDICTS)
    assert same.raw == 1.0 and same.kappa is None and same.kappa_low is None


def test_question_labels_have_no_unsupported_figures():
    a = agreement([("pass", "pass"), ("fail", "pass")], ("pass", "fail"))
    assert a.unsupported_precision is None and a.confusion == ((1, 0), (1, 0))


def test_values_outside_the_categories_are_refused():
    with pytest.raises(ValueError, match="outside the categories"):
        agreement([("supported", "maybe")], VERDICTS)


def test_interval_is_deterministic_per_seed():
    pairs = [("supported", "supported")] * 9 + [("unsupported", "supported")] * 3
    pairs += [("unsupported", "unsupported")] * 5
    assert agreement(pairs, VERDICTS) == agreement(pairs, VERDICTS)
    assert agreement(pairs, VERDICTS, seed=1).kappa_low != agreement(pairs, VERDICTS).kappa_low


@given(pairs_st)
def test_kappa_is_between_minus_one_and_one(pairs):
    k = agreement(pairs, CATS, n_boot=0).kappa
    assert k is None or -1.0 - 1e-9 <= k <= 1.0 + 1e-9


@given(pairs_st)
def test_kappa_is_symmetric_in_the_raters(pairs):
    a = agreement(pairs, CATS, n_boot=0).kappa
    b = agreement([(j, h) for h, j in pairs], CATS, n_boot=0).kappa
    assert (a is None) == (b is None)
    if a is not None:
        assert a == pytest.approx(b)


@given(pairs_st)
def test_counts_and_pairs_give_the_same_kappa(pairs):
    """Differential: the vectorised kappa of the counts and the textbook one of the pairs."""
    a, b = agreement(pairs, CATS, n_boot=0).kappa, cohen_kappa(pairs)
    assert (a is None) == (b is None)
    if a is not None:
        assert a == pytest.approx(b)


@given(st.lists(st.sampled_from(CATS), min_size=1, max_size=40))
def test_perfect_agreement_is_one_unless_a_single_category(values):
    k = agreement([(v, v) for v in values], CATS, n_boot=0).kappa
    assert k is None if len(set(values)) == 1 else k == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(pairs_st, st.integers(0, 2**16))
def test_bootstrap_interval_contains_the_estimate(pairs, seed):
    a = agreement(pairs, CATS, n_boot=200, seed=seed)
    if a.kappa is None:
        assert a.kappa_low is None and a.kappa_high is None
    else:
        assert a.kappa_low <= a.kappa <= a.kappa_high
        assert -1.0 - 1e-9 <= a.kappa_low and a.kappa_high <= 1.0 + 1e-9
