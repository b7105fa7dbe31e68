"""Character-weighted context relevance and precision: hand cases, edge cases, and the
property they exist for (cutting a chunk into contiguous pieces changes nothing)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rageval_core.metrics.context import (
    char_weighted,
    context_precision_chars,
    context_relevance_chars,
)
from rageval_core.models import ChunkVerdict, Judgement


def _brute_precision(lengths: list[int], relevant: list[bool]) -> float:
    """Average precision with every character its own ranked item (the definition)."""
    chars = [r for n, r in zip(lengths, relevant, strict=True) for _ in range(n)]
    hits, total = 0, 0.0
    for i, r in enumerate(chars, 1):
        if r:
            hits += 1
            total += hits / i
    return total / hits if hits else 0.0


def test_hand_case():
    # 100 relevant chars, then 300 irrelevant, then 100 relevant
    lengths, relevant = [100, 300, 100], [True, False, True]
    assert context_relevance_chars(lengths, relevant) == pytest.approx(200 / 500)
    assert context_precision_chars(lengths, relevant) == pytest.approx(
        _brute_precision(lengths, relevant)
    )
    # relevant first reads 1.0, whatever follows
    assert context_precision_chars([5, 50], [True, False]) == pytest.approx(1.0)


def test_edge_cases():
    assert context_relevance_chars([], []) is None
    assert context_precision_chars([], []) is None
    assert context_relevance_chars([0, 0], [True, False]) is None  # texts unknown
    assert context_precision_chars([10, 20], [False, False]) == 0.0
    assert context_relevance_chars([10, 20], [False, False]) == 0.0


def test_long_chunks_use_the_closed_form():
    lengths, relevant = [3000, 1500, 2500], [False, True, True]
    assert context_precision_chars(lengths, relevant) == pytest.approx(
        _brute_precision(lengths, relevant), abs=1e-12
    )


def test_equals_per_chunk_figures_when_chunks_are_equal_length():
    # one character per chunk: the character readings are the chunk ones
    verdicts = tuple(ChunkVerdict(f"c{i}", i, r) for i, r in enumerate([False, True, True], 1))
    j = Judgement((), False, None, chunk_verdicts=verdicts)
    got = char_weighted(verdicts, ["x", "y", "z"])
    assert got["context_relevance_chars"] == pytest.approx(j.context_relevance)
    assert got["context_precision_chars"] == pytest.approx(j.context_precision)


def test_char_weighted_reads_verdicts_by_rank_and_refuses_unknown_ranks():
    verdicts = [ChunkVerdict("b", 2, False), ChunkVerdict("a", 1, True)]
    got = char_weighted(verdicts, ["aaaa", "bbbbbbbbbbbb"])
    assert got == {"context_relevance_chars": 0.25, "context_precision_chars": 1.0}
    nulls = {"context_relevance_chars": None, "context_precision_chars": None}
    assert char_weighted([ChunkVerdict("c", 3, True)], ["a", "b"]) == nulls
    assert char_weighted(None, ["a"]) == nulls
    assert char_weighted(verdicts, None) == nulls


chunks = st.lists(st.tuples(st.integers(0, 400), st.booleans()), min_size=1, max_size=8)


@given(chunks, st.data())
def test_splitting_a_chunk_into_contiguous_pieces_changes_neither_figure(cs, data):
    """The split control: one chunk cut into 2–4 pieces, each keeping its verdict (a
    relevant chunk into relevant pieces), leaves both figures as they were."""
    lengths, relevant = [n for n, _ in cs], [r for _, r in cs]
    i = data.draw(st.integers(0, len(cs) - 1))
    n = lengths[i]
    cuts = sorted(data.draw(st.lists(st.integers(0, n), min_size=1, max_size=3)))
    pieces = [b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
    split_l = lengths[:i] + pieces + lengths[i + 1 :]
    split_r = relevant[:i] + [relevant[i]] * len(pieces) + relevant[i + 1 :]
    for f in (context_relevance_chars, context_precision_chars):
        before, after = f(lengths, relevant), f(split_l, split_r)
        assert (before is None) == (after is None)
        if before is not None:
            assert after == pytest.approx(before, abs=1e-12)


@given(chunks)
def test_figures_are_shares_and_precision_is_average_precision_over_characters(cs):
    lengths, relevant = [n for n, _ in cs], [r for _, r in cs]
    rel, prec = (
        context_relevance_chars(lengths, relevant),
        context_precision_chars(lengths, relevant),
    )
    if sum(lengths) == 0:
        assert rel is None and prec is None
        return
    assert 0.0 <= rel <= 1.0 and 0.0 <= prec <= 1.0 + 1e-12
    assert prec == pytest.approx(_brute_precision(lengths, relevant), abs=1e-12)
