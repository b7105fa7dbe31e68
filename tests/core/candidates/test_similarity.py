"""Near-duplicates: the prefix-filtered index finds exactly the pairs comparing all of
them finds, symmetric and blind to order, with far fewer comparisons."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations

from hypothesis import given
from hypothesis import strategies as st

from rageval_core.candidates.similarity import NEAR, NearIndex, exact_key, similar, words

WORDS = st.frozensets(st.sampled_from([f"w{i}" for i in range(12)]), max_size=8)
THRESHOLDS = st.sampled_from([NEAR, Fraction(1, 2), Fraction(2, 3), Fraction(9, 10), Fraction(1)])


def indexed_pairs(sets, threshold=NEAR) -> tuple[set[tuple[int, int]], int]:
    index = NearIndex.for_sets(sets, threshold)
    pairs = set()
    for j, s in enumerate(sets):
        pairs |= {(i, j) for i in index.probe(s)}
        index.add(s)
    return pairs, index.compared


def brute_pairs(sets, threshold=NEAR) -> set[tuple[int, int]]:
    def jaccard_at_least(a, b):
        return bool(a and b) and Fraction(len(a & b), len(a | b)) >= threshold

    return {
        (i, j) for i, j in combinations(range(len(sets)), 2) if jaccard_at_least(sets[i], sets[j])
    }


@given(st.lists(WORDS, max_size=30), THRESHOLDS)
def test_the_index_finds_exactly_the_pairs_all_comparisons_find(sets, threshold) -> None:
    assert indexed_pairs(sets, threshold)[0] == brute_pairs(sets, threshold)


@given(WORDS, WORDS, THRESHOLDS)
def test_similarity_is_symmetric(a, b, threshold) -> None:
    assert similar(a, b, threshold) == similar(b, a, threshold)


@given(st.lists(WORDS, max_size=20), st.randoms(use_true_random=False))
def test_the_pairs_do_not_depend_on_the_order(sets, rnd) -> None:
    order = list(range(len(sets)))
    rnd.shuffle(order)
    shuffled = [sets[i] for i in order]
    found = {tuple(sorted((order[i], order[j]))) for i, j in indexed_pairs(shuffled)[0]}
    assert found == indexed_pairs(sets)[0]


def test_the_threshold_is_inclusive_and_exact() -> None:
    four = frozenset("abcd")
    assert similar(four, four | {"e"})  # 4/5 is near
    assert not similar(four, frozenset("abcef"))  # 3/6
    assert not similar(frozenset(), frozenset())  # no content word: near nothing


def test_real_questions_need_a_small_share_of_the_comparisons(squad_questions) -> None:
    """SQuAD's 626 questions (many about one paragraph, worded alike): every near pair
    found, with a few percent of the n(n-1)/2 comparisons."""
    sets = [words(q) for q in squad_questions]
    pairs, compared = indexed_pairs(sets)
    assert pairs == brute_pairs(sets)
    assert pairs  # SQuAD v2 rewords questions into impossible near misses: some are near
    all_pairs = len(sets) * (len(sets) - 1) // 2
    assert compared < all_pairs / 20, (compared, all_pairs)


def test_exact_key_ignores_case_spacing_and_typography() -> None:
    assert exact_key("What is  “BM25”?") == exact_key('what is "BM25"')
    assert exact_key("What is BM25?") != exact_key("What is BM26?")


@given(st.lists(WORDS, max_size=30))
def test_only_questions_sharing_a_word_are_ever_compared(sets) -> None:
    """The work is bounded by the pairs that share a word, not by n(n-1)/2: questions
    with no word in common are never compared."""
    sharing = sum(bool(a & b) for a, b in combinations(sets, 2))
    assert indexed_pairs(sets)[1] <= sharing


@given(st.integers(min_value=0, max_value=300))
def test_questions_on_different_things_cost_no_comparison(n) -> None:
    sets = [frozenset({f"topic{i}", f"detail{i}", "what"}) for i in range(n)]
    assert indexed_pairs(sets) == (set(), 0)
