"""Retrieval metrics: hand-computed cases, edge cases, and hypothesis properties.

The differential check against trec_eval lives in test_retrieval_trec_eval.py.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rageval_core.catalogue import DEFAULT_KS, retrieval_columns
from rageval_core.metrics.retrieval import (
    gold_ranks,
    hit_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    retrieval_metrics,
)

# ---------------------------------------------------------------------------- hand cases

RANKED = ["x", "g1", "y", "g2", "z"]
GOLD = ["g1", "g2", "g3"]


def test_hand_case_recall_precision_hit():
    # top-1 = {x}: 0 gold; top-3 = {x, g1, y}: 1 gold; top-5: 2 gold (g1, g2); |G| = 3
    assert recall_at_k(RANKED, GOLD, 1) == 0.0
    assert recall_at_k(RANKED, GOLD, 3) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, GOLD, 5) == pytest.approx(2 / 3)
    assert precision_at_k(RANKED, GOLD, 3) == pytest.approx(1 / 3)
    assert precision_at_k(RANKED, GOLD, 5) == pytest.approx(2 / 5)
    assert hit_at_k(RANKED, GOLD, 1) == 0.0
    assert hit_at_k(RANKED, GOLD, 2) == 1.0


def test_hand_case_reciprocal_rank():
    # first gold (g1) sits at rank 2 -> 1/2
    assert reciprocal_rank(RANKED, GOLD) == 0.5
    assert reciprocal_rank(["a", "b"], ["c"]) == 0.0


def test_hand_case_ndcg():
    # DCG@5 = 1/log2(2+1) + 1/log2(4+1) (g1 at rank 2, g2 at rank 4)
    # IDCG@5 = 1/log2(2) + 1/log2(3) + 1/log2(4)  (min(|G|=3, 5) = 3 ideal positions)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / 2
    assert ndcg_at_k(RANKED, GOLD, 5) == pytest.approx(dcg / idcg)
    # @2: DCG = 1/log2(3); IDCG = 1 + 1/log2(3)  (only min(3, 2) = 2 ideal positions)
    assert ndcg_at_k(RANKED, GOLD, 2) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))


def test_precision_keeps_k_as_divisor_when_fewer_retrieved():
    # one chunk retrieved, and it is gold: 1 / 5, not 1 / 1
    assert precision_at_k(["g"], ["g"], 5) == 0.2


def test_k_beyond_list_for_recall_hit_ndcg():
    assert recall_at_k(["g"], ["g"], 20) == 1.0
    assert hit_at_k(["g"], ["g"], 20) == 1.0
    assert ndcg_at_k(["g"], ["g"], 20) == 1.0


def test_nothing_retrieved_scores_zero_for_answerable():
    assert retrieval_metrics([], ["g"]) == dict.fromkeys(retrieval_columns(), 0.0)
    assert gold_ranks([], ["g"]) == [None]


# ---------------------------------------------------------------------------- duplicates


def test_duplicates_count_once_at_first_rank():
    # dedupe -> [g, x, h]; the repeated g neither counts twice nor takes a top-k slot
    ranked = ["g", "g", "x", "g", "h"]
    assert recall_at_k(ranked, ["g", "h"], 3) == 1.0
    assert precision_at_k(ranked, ["g", "h"], 3) == pytest.approx(2 / 3)
    assert gold_ranks(ranked, ["g", "h"]) == [1, 3]


def test_duplicate_of_non_gold_is_removed_before_the_cut():
    # [x, x, g] dedupes to [x, g]: g is rank 2, so it is inside the top 2
    assert hit_at_k(["x", "x", "g"], ["g"], 2) == 1.0
    assert reciprocal_rank(["x", "x", "g"], ["g"]) == 0.5
    # DCG@2 = 1/log2(3), IDCG@2 = 1 (one gold id)
    assert ndcg_at_k(["x", "x", "g"], ["g"], 2) == pytest.approx(1 / math.log2(3))


def test_duplicate_gold_ids_count_once():
    assert recall_at_k(["g"], ["g", "g"], 1) == 1.0
    assert ndcg_at_k(["g"], ["g", "g"], 5) == 1.0
    # gold_ranks stays aligned with the given gold_ids, repeats included
    assert gold_ranks(["x", "g"], ["g", "h", "g"]) == [2, None, 2]


# ---------------------------------------------------------------------------- edge cases


@pytest.mark.parametrize(
    "fn", [recall_at_k, precision_at_k, hit_at_k, ndcg_at_k], ids=lambda f: f.__name__
)
def test_empty_gold_set_is_none(fn):
    assert fn(["a", "b"], [], 5) is None


def test_empty_gold_set_is_none_everywhere():
    assert reciprocal_rank(["a"], []) is None
    assert gold_ranks(["a"], []) == []
    assert retrieval_metrics(["a"], []) == dict.fromkeys(retrieval_columns(), None)


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "5"])
@pytest.mark.parametrize(
    "fn", [recall_at_k, precision_at_k, hit_at_k, ndcg_at_k], ids=lambda f: f.__name__
)
def test_bad_k_raises(fn, k):
    with pytest.raises(ValueError, match="k must be"):
        fn(["a"], ["a"], k)


def test_bad_k_in_batch_raises_even_for_empty_gold():
    with pytest.raises(ValueError):
        retrieval_metrics(["a"], [], ks=(5, 0))


def test_bare_string_is_rejected():
    with pytest.raises(TypeError):
        recall_at_k("abc", ["a"], 1)
    with pytest.raises(TypeError):
        recall_at_k(["a"], "a", 1)


# ---------------------------------------------------------------------------- batch form


def test_batch_keys_are_the_result_columns():
    assert list(retrieval_metrics(["a"], ["a"])) == retrieval_columns(DEFAULT_KS)
    assert list(retrieval_metrics(["a"], ["a"], ks=(2, 7))) == retrieval_columns((2, 7))


def test_batch_matches_single_functions_on_hand_case():
    m = retrieval_metrics(RANKED, GOLD)
    for k in DEFAULT_KS:
        assert m[f"recall_at_{k}"] == recall_at_k(RANKED, GOLD, k)
        assert m[f"precision_at_{k}"] == precision_at_k(RANKED, GOLD, k)
        assert m[f"hit_at_{k}"] == hit_at_k(RANKED, GOLD, k)
    assert m["mrr"] == 0.5
    assert m["ndcg_at_10"] == ndcg_at_k(RANKED, GOLD, 10)


# ---------------------------------------------------------------------------- properties

POOL = [f"d{i}" for i in range(12)]
rankings = st.lists(st.sampled_from(POOL), max_size=25)  # repeats allowed on purpose
gold_sets = st.lists(st.sampled_from(POOL), min_size=1, max_size=6, unique=True)
ks = st.integers(min_value=1, max_value=30)


@given(rankings, gold_sets, ks)
def test_every_metric_is_in_unit_interval(ranked, gold, k):
    for value in (
        recall_at_k(ranked, gold, k),
        precision_at_k(ranked, gold, k),
        hit_at_k(ranked, gold, k),
        ndcg_at_k(ranked, gold, k),
        reciprocal_rank(ranked, gold),
    ):
        assert 0.0 <= value <= 1.0 + 1e-12


@given(rankings, gold_sets, ks)
def test_recall_and_hit_non_decreasing_in_k(ranked, gold, k):
    assert recall_at_k(ranked, gold, k) <= recall_at_k(ranked, gold, k + 1)
    assert hit_at_k(ranked, gold, k) <= hit_at_k(ranked, gold, k + 1)


@given(rankings, gold_sets, ks)
def test_hit_is_one_exactly_when_recall_is_positive(ranked, gold, k):
    assert hit_at_k(ranked, gold, k) == float(recall_at_k(ranked, gold, k) > 0)


@given(rankings, gold_sets)
def test_reciprocal_rank_is_one_over_first_gold_rank(ranked, gold):
    found = [r for r in gold_ranks(ranked, gold) if r is not None]
    expected = 1 / min(found) if found else 0.0
    assert reciprocal_rank(ranked, gold) == expected


@given(rankings, gold_sets, ks)
def test_precision_and_recall_count_the_same_hits(ranked, gold, k):
    # precision@k · k == recall@k · |G| == |top-k ∩ G|
    hits_p = precision_at_k(ranked, gold, k) * k
    hits_r = recall_at_k(ranked, gold, k) * len(gold)
    assert hits_p == pytest.approx(hits_r)
    assert round(hits_p) == sum(1 for r in gold_ranks(ranked, gold) if r is not None and r <= k)


@given(rankings, gold_sets, ks)
def test_ndcg_is_one_when_all_gold_ranked_first(rest, gold, k):
    ranked = list(gold) + [d for d in rest if d not in gold]
    assert ndcg_at_k(ranked, gold, k) == pytest.approx(1.0)


@given(rankings, gold_sets)
def test_gold_ranks_point_at_the_gold_id_in_the_deduped_list(ranked, gold):
    deduped = list(dict.fromkeys(ranked))
    for g, r in zip(gold, gold_ranks(ranked, gold), strict=True):
        assert (g not in deduped) if r is None else deduped[r - 1] == g


@given(rankings, gold_sets, ks)
def test_metrics_equal_those_of_the_deduplicated_list(ranked, gold, k):
    deduped = list(dict.fromkeys(ranked))
    assert retrieval_metrics(ranked, gold, ks=(k,)) == retrieval_metrics(deduped, gold, ks=(k,))
