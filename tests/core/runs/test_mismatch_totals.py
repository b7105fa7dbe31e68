"""What a run's retrieved ids did not match, summed for its manifest (`runs/folder.py`'s
totals) and said by `mismatch.py`: ids a pipeline's own chunker made are expected on
questions scored by spans (named, not warned about), and a miss on questions scored by
ids (warned about, with the count)."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from rageval_core.mismatch import mismatch_warnings, run_notes, span_scored_note
from rageval_core.runs.folder import run_totals

SPAN = [{"doc_id": "d", "start": 0, "end": 5}]


def question(unknown: int, by_spans: bool) -> dict:
    return {
        "retrieved_ids": [f"c{i}" for i in range(5)],
        "n_unknown_ids": unknown,
        "gold_spans": SPAN if by_spans else [],
        "n_unplaced": 0,
        "retrieved_starts": [0] * 5,
    }


@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), max_size=20))
def test_unknown_ids_are_a_warning_only_on_questions_scored_by_ids(questions):
    totals = run_totals([question(u, s) for u, s in questions], 1.0)
    on_ids = sum(u for u, s in questions if not s)
    on_spans = sum(u for u, s in questions if s)
    assert totals.get("n_unknown_ids", 0) == on_ids
    assert totals.get("n_unknown_span_ids", 0) == on_spans
    assert totals.get("n_retrieved", 0) == 5 * sum(not s for _, s in questions)
    warned = any("not in the corpus" in w for w in mismatch_warnings(totals))
    assert warned == (on_ids > 0)
    assert (span_scored_note(totals) is not None) == (on_spans > 0)


def test_a_rechunked_span_run_is_named_as_such():
    totals = run_totals([question(5, True)] * 3, 1.0)
    run = SimpleNamespace(run_id="20260101-000000-chunks", manifest=SimpleNamespace(totals=totals))
    assert run_notes([run]) == (
        "20260101-000000-chunks: scored by spans; chunk ids differ from the corpus (15 "
        "retrieved ids are the pipeline's own chunks, placed in the documents)",
    )
    assert mismatch_warnings(totals) == ()
