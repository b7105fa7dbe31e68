"""How much of one row's lists a page draws: the first `MAX_ITEMS` of each (chunks,
claims, statements, documents) and one line saying how many were left out.

A row is the pipeline's and the judge's output: nothing bounds its lists, and each item
is an expander with text and a labelling form (10,000 retrieved ids kept the Question
page drawing for a minute). The query layer still returns every item; only what is drawn
is bounded, so the figures and counts beside it stay whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import streamlit as st

MAX_ITEMS = 50
"""Items drawn per list: above the largest k any metric scores (`catalogue.DEFAULT_KS`),
so every chunk a figure on the page counts is shown."""

T = TypeVar("T")


def first(items: Sequence[T], limit: int = MAX_ITEMS) -> tuple[Sequence[T], int]:
    """The first `limit` of `items` and how many are left out."""
    return items[:limit], max(0, len(items) - limit)


def drawn(chunks: Sequence[tuple[int, str, int, int]]) -> tuple[tuple[int, str, int, int], ...]:
    """Of the (rank, id, start, end) chunks placed in a document, those a bounded chunk
    list draws (rank at most `MAX_ITEMS`): a span map names no chunk the page left out."""
    return tuple(c for c in chunks if c[0] <= MAX_ITEMS)


def left_out(count: int, what: str) -> None:
    """The line under a bounded list: `9,950 more chunks not shown.` (nothing when none)."""
    if count:
        st.caption(f"{count:,} more {what} not shown (the page draws the first {MAX_ITEMS}).")
