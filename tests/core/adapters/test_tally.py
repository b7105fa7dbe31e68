"""A stage's time is the measure of the union of its intervals (nested and parallel calls
count once), whatever their order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rageval_core.adapters.common import Tally

intervals = st.lists(
    st.tuples(st.integers(0, 1000), st.integers(0, 200)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=30,
)


@given(intervals)
def test_stage_time_is_the_union_of_its_intervals(spans):
    tally = Tally()
    for a, b in spans:
        tally.add_interval("retrieval", a / 1000, b / 1000)
    covered = {x for a, b in spans for x in range(a, b)}  # unit cells of [a, b)
    got = tally.ms("retrieval")
    if not spans:
        assert got is None
    else:
        assert abs(got - len(covered)) < 1e-6
    assert tally.ms("generation") is None
