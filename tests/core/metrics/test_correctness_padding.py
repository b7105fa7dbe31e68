"""Correctness's containment rule honours the precision floor (issue 32, item 3): the
reference inside a page of other words is not a full-credit answer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rageval_core.metrics.generation import SENTENCE_WORDS, answer_correctness

FILLER = [f"filler{i}" for i in range(400)]  # distinct content words, none the reference's


def test_a_sentence_around_the_reference_keeps_full_credit():
    assert answer_correctness("The museum opened in 1998 in Lyon.", "1998") == 1.0
    assert answer_correctness("No.", "no") == 1.0  # no content word: read on tokens


def test_the_reference_inside_a_page_earns_its_share_of_the_page():
    page = " ".join(FILLER[:99]) + " opened in 1998."  # 101 content words
    assert answer_correctness(page, "1998") == SENTENCE_WORDS / 101
    # a longer reference: its words over the floor (10%), 4 / 0.1 = 40 of 101
    ref = "filler0 filler1 filler2 filler3"
    assert answer_correctness(page, ref) == 40 / 101


@given(st.integers(0, 400), st.integers(0, 400))
def test_more_padding_never_raises_correctness(a, b):
    few, many = sorted((a, b))
    pad = lambda n: f"It opened in 1998. {' '.join(FILLER[:n])}"  # noqa: E731
    assert answer_correctness(pad(many), "opened in 1998") <= answer_correctness(
        pad(few), "opened in 1998"
    )
    assert answer_correctness(pad(many), "opened in 1998") < 1.0 or many <= SENTENCE_WORDS - 2
