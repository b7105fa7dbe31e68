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
