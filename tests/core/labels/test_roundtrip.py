"""Whatever people type survives a save and a load: arbitrary text in claims, notes and
reviewer names (quotes, new lines, emoji, surrogate-free Unicode, JSON look-alikes)."""

from __future__ import annotations

import tempfile
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.labels import LabelStore, check_reviewer
from rageval_core.labels.store import parse_lines
from rageval_core.redact import scrub_value
from tests.core.labels.helpers import label

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=80)
reviewer = text.filter(lambda t: _ok_reviewer(t))


def _ok_reviewer(t: str) -> bool:
    try:
        return check_reviewer(t) == t
    except Exception:
        return False


@given(
    claim=text.filter(str.strip),
    note=text,
    who=reviewer,
    qid=text.filter(str.strip),
    verdict=st.sampled_from(("supported", "unsupported", "contradicted")),
)
def test_one_line_round_trips(claim, note, who, qid, verdict):
    original = label(qid, claim, verdict, reviewer=who, note=note)
    line = original.to_line()
    assert "\n" not in line and "\r" not in line
    (got,), problems = parse_lines(line + "\n", "f")
    assert problems == [] and got[0] == original


@settings(max_examples=25, deadline=None)
@given(claims=st.lists(text.filter(str.strip), min_size=1, max_size=4), note=text, who=reviewer)
def test_save_then_load_gives_back_what_was_saved(claims, note, who):
    with tempfile.TemporaryDirectory() as d:
        store = LabelStore(d)
        saved = [
            label(f"q{i}", c, "supported", reviewer=who, note=note) for i, c in enumerate(claims)
        ]
        store.save(saved)
        want = {replace(lab, note=scrub_value(lab.note)) for lab in saved}
        assert set(LabelStore(d).load().labels) == want


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ann", "bob"]),
            st.sampled_from(["Claim A.", "claim a", "Claim B."]),
            st.sampled_from(("supported", "unsupported", "contradicted")),
        ),
        min_size=1,
        max_size=12,
    ),
    st.randoms(use_true_random=False),
)
def test_newest_label_per_reviewer_and_claim_wins_whatever_the_save_order(saves, rnd):
    stamped = [
        label("q1", claim, verdict, reviewer=who, at=f"2026-01-01T00:00:{i:02d}Z")
        for i, (who, claim, verdict) in enumerate(saves)
    ]
    rnd.shuffle(stamped)  # saved in any order: the time inside the line decides
    with tempfile.TemporaryDirectory() as d:
        store = LabelStore(d)
        for lab in stamped:
            store.save([lab])
        got = {(lab.reviewer, lab.claim_key): lab for lab in LabelStore(d).load().labels}
    want: dict = {}
    for lab in sorted(stamped, key=lambda lab: lab.created_at):
        want[(lab.reviewer, lab.claim_key)] = lab
    assert got == want
