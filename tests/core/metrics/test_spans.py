"""Span metrics: the formulas of metrics/spans.py, and a differential test against an
independent per-character implementation over random ranges."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.catalogue import BUILTIN, SPAN_DEFINITIONS, span_columns
from rageval_core.metrics.spans import Range, span_gold_ranks, span_metrics, span_scores
from rageval_core.models import GoldSpan

DOC_LEN = {"a": 60, "b": 40}


def test_worked_example() -> None:
    gold = [GoldSpan("a", 10, 20), GoldSpan("b", 0, 10)]
    placed = [Range("a", 15, 30), Range("a", 0, 18), None, Range("b", 5, 8)]
    # top 2: R = a[0,30) (overlap counted once), |R ∩ G| = 10, |G| = 20, |R| = 30
    assert span_scores(placed, gold, 2) == (10 / 20, 10 / 30, 10 / 40)
    # top 4 adds b[5,8): ∩ = 13, |R| = 33, ∪ = 33 + 20 - 13
    assert span_scores(placed, gold, 4) == (13 / 20, 13 / 33, 13 / 40)
    m = span_metrics(placed, gold, (1, 3, 5))
    assert m["span_recall_at_1"] == 5 / 20 and m["span_precision_at_1"] == 5 / 15
    assert (m["hit_at_1"], m["recall_at_1"], m["precision_at_1"]) == (1.0, 0.5, 1.0)
    assert (m["recall_at_3"], m["precision_at_3"]) == (
        0.5,
        2 / 3,
    )  # the unplaced one is not relevant
    assert (m["recall_at_5"], m["precision_at_5"]) == (1.0, 3 / 5)
    assert m["mrr"] == 1.0
    # gains at ranks 1 (span a) and 4 (span b); rank 2 touches span a again: no gain
    idcg = 1 + 1 / math.log2(3)
    assert m["ndcg_at_10"] == pytest.approx((1 + 1 / math.log2(5)) / idcg)
    assert span_gold_ranks(placed, gold) == [1, 4]


def test_edge_cases() -> None:
    gold = [GoldSpan("a", 10, 20)]
    assert span_scores([], gold, 5) == (0.0, 0.0, 0.0)  # nothing retrieved: precision 0
    assert span_scores([None, None], gold, 5) == (0.0, 0.0, 0.0)  # nothing placed
    assert span_scores([Range("a", 20, 30)], gold, 5) == (0.0, 0.0, 0.0)  # touching is not overlap
    assert span_scores([Range("a", 0, 5)], [], 5) is None  # no gold: NULL
    nulls = span_metrics([Range("a", 0, 5)], [], (5,))
    assert set(nulls.values()) == {None} and "span_iou_at_5" in nulls and "mrr" in nulls
    exact = span_metrics([Range("a", 10, 20)], gold, (1,))
    assert exact["span_iou_at_1"] == 1.0 and exact["ndcg_at_10"] == 1.0


def test_catalogue_has_the_span_measures_with_definitions() -> None:
    for name in span_columns((5,)):
        assert BUILTIN.measures[name].label.startswith("span ")
        assert "retrieval" in BUILTIN.measures[name].groups
        said = SPAN_DEFINITIONS[name.rpartition("_at_")[0]]
        assert BUILTIN.measures[name].definition == said
        assert said in BUILTIN.metric(f"{name}_p10").definition
    assert BUILTIN.label("span_iou_at_5") == "span IoU@5"


# ---------------------------------------------------------------------------- differential


def _mask(ranges, doc: str) -> list[bool]:
    """The independent implementation: one boolean per character of the document."""
    out = [False] * DOC_LEN[doc]
    for r in ranges:
        if r is not None and r.doc_id == doc:
            for i in range(r.start, r.end):
                out[i] = True
    return out


def _reference(placed, gold, k):
    inter = r_size = g_size = union_size = 0
    for doc in DOC_LEN:
        r, g = _mask(placed[:k], doc), _mask(gold, doc)
        inter += sum(x and y for x, y in zip(r, g, strict=True))
        r_size, g_size = r_size + sum(r), g_size + sum(g)
        union_size += sum(x or y for x, y in zip(r, g, strict=True))
    if not g_size:
        return None
    return inter / g_size, (inter / r_size if r_size else 0.0), inter / union_size


@st.composite
def ranges(draw, kind, min_len=0):
    doc = draw(st.sampled_from(sorted(DOC_LEN)))
    start = draw(st.integers(0, DOC_LEN[doc] - 1))
    end = draw(st.integers(min(start + min_len, DOC_LEN[doc]), DOC_LEN[doc]))
    return kind(doc, start, end)


@settings(max_examples=300, deadline=None)
@given(
    placed=st.lists(st.none() | ranges(Range), max_size=12),
    gold=st.lists(ranges(GoldSpan, min_len=1), max_size=4),
    k=st.integers(1, 14),
)
def test_span_scores_equal_a_per_character_count(placed, gold, k) -> None:
    got, want = span_scores(placed, gold, k), _reference(placed, gold, k)
    if want is None:
        assert got is None
    else:
        assert got == pytest.approx(want)
    if gold:
        m = span_metrics(placed, gold, (k,))
        touched = [
            any(_mask([r], s.doc_id)[i] for s in gold for i in range(s.start, s.end))
            for r in placed[:k]
        ]
        assert m[f"precision_at_{k}"] == pytest.approx(sum(touched) / k)
        assert m[f"hit_at_{k}"] == float(any(touched))
        assert 0 <= m["ndcg_at_10"] <= 1 + 1e-12
