"""What the Question page draws of one row's lists (the page itself: tests/fuzz/test_found.py)."""

from hypothesis import given
from hypothesis import strategies as st

from dashboard.bounded import MAX_ITEMS, drawn, first
from rageval_core.catalogue import DEFAULT_KS


@given(items=st.lists(st.integers(), max_size=3 * MAX_ITEMS), limit=st.integers(0, 2 * MAX_ITEMS))
def test_first_is_a_prefix_and_counts_the_rest(items, limit):
    head, more = first(items, limit)
    assert list(head) == items[: len(head)]
    assert len(head) == min(len(items), limit)
    assert len(head) + more == len(items)


def test_every_chunk_a_scored_k_counts_is_drawn():
    assert MAX_ITEMS >= max(DEFAULT_KS)


def test_a_document_names_only_the_chunks_the_list_draws():
    chunks = ((1, "a", 0, 5), (MAX_ITEMS, "b", 5, 9), (MAX_ITEMS + 1, "c", 9, 12))
    assert drawn(chunks) == chunks[:2]
