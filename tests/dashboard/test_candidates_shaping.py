"""The Candidates page's pure helpers: where a review picks up, progress, quotes placed
in their documents and an edit's quotes verified (found exactly once) before saving."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.shaping import (
    candidate_rows,
    decided_count,
    decision_line,
    edited_quotes,
    first_undecided,
    quote_range,
    version_note,
)
from rageval_core.candidates.model import Candidate, Check, Quote

DOC = "The cold room holds 40 crates. The cold room is locked at night."


def test_a_review_picks_up_at_the_next_undecided_candidate():
    ids = ["a", "b", "c", "d"]
    assert first_undecided(ids, {}) == 0
    assert first_undecided(ids, {"a": 1, "b": 1}) == 2
    assert first_undecided(ids, {"a": 1, "c": 1}, after=1) == 3  # after the current one
    assert first_undecided(ids, {"c": 1, "d": 1}, after=2) == 0  # wraps round
    assert first_undecided(ids, dict.fromkeys(ids), after=2) == 2  # all done: stays
    assert decided_count(ids, {"a": 1, "zz": 1}) == 1


def test_a_quote_is_placed_by_its_offsets_else_by_its_one_occurrence():
    assert quote_range(Quote("d", "40 crates", 20, 29), DOC) == (20, 29)
    assert quote_range(Quote("d", "40 crates", 0, 9), DOC) == (20, 29)  # stale offsets
    assert quote_range(Quote("d", "The cold room"), DOC) is None  # stands twice
    assert quote_range(Quote("d", "absent"), DOC) is None
    assert quote_range(Quote("d", "40 crates"), None) is None


def test_an_edit_names_every_quote_that_does_not_stand_exactly_once():
    olds = (Quote("d", "x"), Quote("d", "y"), Quote("d", "z"), Quote("gone", "w"), Quote("d", "v"))
    typed = [" locked at night. ", "The cold room", "forty", "anything", ""]
    quotes, problems = edited_quotes(olds, typed, {"d": DOC})
    assert quotes == (Quote("d", "locked at night.", 48, 64),)
    assert problems == [
        "quote 2: stands more than once in d; quote more of it",
        "quote 3: not found in d",
        "quote 4: document gone is not in the batch's documents",
        "quote 5: empty",
    ]


@settings(max_examples=200, deadline=None)
@given(st.text("ab ", max_size=30), st.text("ab", min_size=1, max_size=4))
def test_an_edited_quote_is_kept_exactly_when_it_stands_once(doc, typed):
    quotes, problems = edited_quotes((Quote("d", "old"),), [typed], {"d": doc})
    occurrences = sum(doc.startswith(typed, i) for i in range(len(doc)))  # overlapping
    assert bool(quotes) == (occurrences == 1) == (not problems)
    for q in quotes:
        assert doc[q.start : q.end] == typed


def test_decisions_read_as_one_plain_line_each():
    d = SimpleNamespace(
        reviewer="Ann", action="edit", at="2026-12-05T17:00:00Z", note="typo\nfixed"
    )
    assert decision_line(d) == "Ann: edited and accepted · 2026-12-05 — typo fixed"
    c = Candidate(
        "gen-1", "number", "Q?", "R", (), (), "templated-1", (Check("quotes", True, "ok"),)
    )
    rows = candidate_rows([c], {"gen-1": SimpleNamespace(action="reject")})
    assert rows.to_dict("records") == [
        {"candidate": "gen-1", "kind": "number", "checks": "unchecked", "decision": "rejected",
         "question": "Q?"}
    ]  # fmt: skip


def test_a_written_version_is_said_in_one_line():
    def accepted(path, added=(), already=(), documents=()):
        return SimpleNamespace(
            path=path, version="3", added=added, already=already, documents=documents
        )

    assert version_note(accepted(None)) == (
        "Nothing written: no candidate of this batch is accepted yet."
    )
    assert version_note(accepted(None, already=("g1", "g2"))) == (
        "Nothing new: the 2 accepted candidate(s) are in it already."
    )
    added = tuple((f"gen-{i}", f"q{i}") for i in range(12))
    assert version_note(accepted("/v/dataset.yaml", added, ("g0",), ("doc-a",))) == (
        "Wrote version 3 to /v/dataset.yaml: 12 question(s) added (q0, q1, q2, q3, q4, q5, "
        "q6, q7, q8, q9 and 2 more), 1 document(s) added; 1 accepted candidate(s) were in "
        "it already."
    )
