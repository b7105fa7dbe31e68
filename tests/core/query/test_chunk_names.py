"""Chunks named for a reader (`QuestionDetail.chunk_names`, `named`): a placed chunk is its
document and character range, not the UUID a framework gave it, in headings and in the
judge's reasons; an unplaced chunk keeps its id."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from rageval_core.metrics.spans import Range
from rageval_core.query import QuestionDetail, RetrievedRow


def detail(ids: list[str], places: list[Range | None]) -> QuestionDetail:
    rows = tuple(RetrievedRow(i, "text", None, n + 1, False) for n, i in enumerate(ids))
    return QuestionDetail(
        run_id="r", question_id="q1", question="?", reference_answer=None, answer=None,
        answerable=True, tags=(), failure_type="ok", refused=False, metrics={}, claims=(),
        unsupported_claims=(), retrieved=rows, gold_ids=(), missed_gold_ids=(), timings={},
        tokens={}, cost={}, places=tuple(places),
    )  # fmt: skip


def test_a_placed_chunk_is_its_document_and_range_and_an_unplaced_one_its_id():
    a, b = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))
    d = detail([a, b], [Range("git-rebase.txt", 4120, 4380), None])
    assert d.chunk_names() == {a: "git-rebase.txt 4,120–4,380", b: b}
    assert d.named(f"80% of content words found in {a} and {b}") == (
        f"80% of content words found in git-rebase.txt 4,120–4,380 and {b}"
    )


@given(
    st.lists(st.uuids().map(str), min_size=1, max_size=5, unique=True),
    st.text(alphabet=" ,;()", min_size=1, max_size=5),
)
def test_every_placed_id_in_a_reason_is_named_and_nothing_else_changes(ids, filler):
    places = [Range(f"doc{n}", n * 10, n * 10 + 5) for n in range(len(ids))]
    d = detail(ids, places)
    names = d.chunk_names()
    reason = filler.join(ids) + filler
    named = d.named(reason)
    assert not any(i in named for i in ids)
    assert named == filler.join(names[i] for i in ids) + filler
    # an id inside a longer token (another chunk's id extended) is not a chunk
    assert d.named(ids[0] + "-x") == ids[0] + "-x"
