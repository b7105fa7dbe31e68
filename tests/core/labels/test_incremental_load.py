"""A store that loaded before merges a save's new file into what it holds (only the keys
the file names move) instead of sorting every label again; whatever was saved, in
whatever order and by whom, it gives what a new store reading every file gives."""

from __future__ import annotations

import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.labels import LabelStore
from tests.core.labels.helpers import label

saves = st.lists(
    st.lists(
        st.builds(
            lambda q, c, v, sec: label(
                q,
                c,
                v if c is not None else ("pass" if v == "supported" else "fail"),
                at=f"2026-02-01T00:00:{sec:02d}Z",
            ),
            st.sampled_from(("q1", "q2", "q3")),
            st.sampled_from(("Paris is big.", "paris is big", "Rome.", None)),
            st.sampled_from(("supported", "unsupported", "contradicted")),
            st.integers(0, 3),  # ties in time: the later file wins
        ),
        min_size=1,
        max_size=4,
    ),
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(saves=saves, reviewers=st.lists(st.sampled_from(("ann", "bob")), min_size=6, max_size=6))
def test_loads_after_each_save_equal_a_full_read(saves, reviewers):
    with tempfile.TemporaryDirectory() as root:
        kept = LabelStore(root)
        kept.load()  # an empty location: the first save is merged in, too
        for batch, who in zip(saves, reviewers, strict=False):
            kept.save([lab.__class__(**{**lab.to_dict(), "reviewer": who}) for lab in batch])
            incremental = kept.load()
            full = LabelStore(root).load()
            assert incremental == full
            assert [lab.key() for lab in incremental.labels] == [lab.key() for lab in full.labels]


@settings(max_examples=60, deadline=None)
@given(saves=saves, reviewers=st.lists(st.sampled_from(("ann", "bob")), min_size=6, max_size=6))
def test_a_merged_save_says_what_it_changed(saves, reviewers):
    """`change` of a set loaded after a save: the set before it, minus the labels it says
    are gone, plus the ones it says are new, is this set (by identity: the views count
    the labels they hold by it)."""
    with tempfile.TemporaryDirectory() as root:
        store = LabelStore(root)
        before = store.load()
        for batch, who in zip(saves, reviewers, strict=False):
            store.save([lab.__class__(**{**lab.to_dict(), "reviewer": who}) for lab in batch])
            after = store.load()
            change = after.change
            assert change is not None and change.before == before.serial != after.serial
            held = {id(lab) for lab in before.labels}
            assert {id(lab) for lab in change.gone} <= held
            assert not {id(lab) for lab in change.new} & held
            assert held - {id(lab) for lab in change.gone} | {id(lab) for lab in change.new} == {
                id(lab) for lab in after.labels
            }
            before = after
        assert LabelStore(root).load().change is None  # a first read: nothing to say
