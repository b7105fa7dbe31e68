"""A loaded set's `table`: whatever was saved or removed, the table a row per claim or
question label gives."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.labels import LabelSet, LabelStore
from rageval_core.labels.store import LABELS_SCHEMA
from tests.core.labels.helpers import label


def row_by_row(labels: LabelSet) -> pa.Table:
    """The table as its docstring says it: a row per claim or question label."""
    return pa.Table.from_pylist(
        [
            {**lab.to_dict(), "claim_key": lab.claim_key, "value": lab.value, "idx": i}
            for i, lab in enumerate(labels.labels)
            if lab.kind in ("claim", "question")
        ],
        schema=LABELS_SCHEMA,
    )


def _one(q: str, subject: str | None, verdict: str, sec: int, who: str):
    at = f"2026-02-01T00:00:{sec:02d}Z"
    if subject == "chunk":  # a relevance label: left out of the table, but it has a place
        chunk = label(q, None, "pass", who, at)
        return replace(chunk, question_label=None, chunk_id="c1", relevant=verdict == "supported")
    value = verdict if subject is not None else ("pass" if verdict == "supported" else "fail")
    return label(q, subject, value, who, at, note=f"n{sec}")


saves = st.lists(
    st.tuples(
        st.sampled_from(("ann", "bob")),
        st.lists(
            st.tuples(
                st.sampled_from(("q1", "q2", "q3")),
                st.sampled_from(("Paris is big.", "paris is big", "Rome.", None, "chunk")),
                st.sampled_from(("supported", "unsupported", "contradicted")),
                st.integers(0, 3),
            ),
            min_size=1,
            max_size=4,
        ),
        st.booleans(),  # remove the file again after the load (a full merge next)
    ),
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(saves=saves)
def test_table_after_each_save_is_a_full_build(saves):
    with tempfile.TemporaryDirectory() as root:
        store = LabelStore(root)
        assert store.load().table.num_rows == 0
        for who, batch, removed in saves:
            path = store.save([_one(*spec, who) for spec in batch])
            loaded = store.load()
            assert loaded.table.equals(row_by_row(loaded))
            if removed:
                Path(path).unlink()
                again = store.load()
                assert again.table.equals(row_by_row(again))
