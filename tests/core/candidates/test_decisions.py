"""Reviewers' decisions on candidates in the labels location: one new file a save, the
newest per candidate wins, a bad line is a problem naming file and line, hostile names
and notes refused or bounded, and the label store never reads them as labels."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.candidates.decisions import Decision, DecisionStore, batch_name
from rageval_core.candidates.model import Quote
from rageval_core.errors import ConfigError
from rageval_core.labels import LabelStore
from tests.core.labels.helpers import label


def _at(second: int) -> str:
    return f"2026-12-05T10:00:{second:02d}.000000Z"


def test_two_reviewers_saving_at_once_both_keep_their_decisions(tmp_path):
    store = DecisionStore(str(tmp_path), "batch-1")
    barrier = threading.Barrier(8)

    def save(i: int) -> None:
        barrier.wait()
        store.save(Decision(f"gen-{i}", "accept" if i % 2 else "reject", f"r{i}"))

    threads = [threading.Thread(target=save, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = DecisionStore(str(tmp_path), "batch-1").latest()
    assert sorted(got) == [f"gen-{i}" for i in range(8)]
    assert {d.reviewer for d in got.values()} == {f"r{i}" for i in range(8)}
    assert len(list(tmp_path.rglob("*.decisions.jsonl"))) == 8


def test_the_newest_decision_per_candidate_wins_whoever_made_it(tmp_path):
    store = DecisionStore(str(tmp_path), "b")
    store.save(Decision("gen-1", "reject", "ann", at=_at(3)))
    store.save(Decision("gen-1", "edit", "bob", at=_at(5), question="Which year?"))
    store.save(Decision("gen-1", "accept", "ann", at=_at(4)))  # saved later, made earlier
    store.save(Decision("gen-2", "accept", "ann", at=_at(1)))
    got = store.latest()
    assert got["gen-1"].action == "edit" and got["gen-1"].question == "Which year?"
    assert got["gen-2"].action == "accept"
    assert store.problems == ()
    store.save(Decision("gen-1", "reject", "cy", at=_at(9)))
    assert store.latest()["gen-1"].reviewer == "cy"  # a reload sees the new file


def test_batches_are_apart_and_labels_never_read_decisions(tmp_path):
    DecisionStore(str(tmp_path), "ds").save(Decision("gen-1", "accept", "ann"))
    LabelStore(str(tmp_path)).save([label("q1", "A claim.", "supported", reviewer="ann")])
    assert DecisionStore(str(tmp_path), "other").latest() == {}
    labels = LabelStore(str(tmp_path)).load()
    assert labels.problems == () and len(labels.labels) == 1
    assert LabelStore(str(tmp_path)).load("ds").problems == ()


def test_a_bad_line_is_a_problem_naming_its_file_and_line(tmp_path):
    store = DecisionStore(str(tmp_path), "b")
    path = store.save(Decision("gen-1", "accept", "ann", at=_at(1)))
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"batch": "b", "candidate_id": "gen-2", "action": "bless", "reviewer": "x",')
        f.write(' "at": "2026-12-05T10:00:00Z"}\nnot json\n')
    got = store.latest()
    assert list(got) == ["gen-1"]
    assert [p.split(": ", 1)[0] for p in store.problems] == [f"{path}:2", f"{path}:3"]
    assert "action must be one of" in store.problems[0]


def test_an_edit_keeps_what_it_does_not_change():
    from rageval_core.candidates.model import Candidate

    c = Candidate("gen-1", "name", "Q?", "A.", (Quote("d", "text", 0, 4),), (), "templated")
    edited = Decision("gen-1", "edit", "ann", reference="B.").applied(c)
    assert (edited.question, edited.reference_answer, edited.quotes) == ("Q?", "B.", c.quotes)
    moved = Decision("gen-1", "edit", "ann", quotes=(Quote("d", "other", 3, 8),)).applied(c)
    assert moved.quotes == (Quote("d", "other"),)  # located again when accepted
    assert Decision("gen-1", "accept", "ann").applied(c) is c


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({"reviewer": ""}, "reviewer name is empty"),
        ({"reviewer": "ann\nbob"}, "control characters"),
        ({"reviewer": "x" * 500}, "longer than"),
        ({"reviewer": "\ud800"}, "lone surrogate"),
        ({"candidate_id": "gen\u202e1"}, "control characters"),
        ({"action": "bless"}, "action must be one of"),
        ({"note": "n" * 5000}, "at most"),
        ({"at": "yesterday"}, "ISO-8601"),
        ({"question": "Q?"}, "carries no question"),
        ({"action": "edit"}, "an edit changes"),
        ({"action": "edit", "question": "q" * 30_000}, "longer than"),
        ({"action": "edit", "quotes": ()}, "1 to 20 quotes"),
        ({"action": "edit", "quotes": (Quote("d", " "),)}, "non-empty text"),
    ],
)
def test_hostile_decisions_are_refused_with_the_reason(kwargs, why):
    args = {"candidate_id": "gen-1", "action": "accept", "reviewer": "ann", **kwargs}
    with pytest.raises(ConfigError, match=why):
        Decision(**args)


def test_a_hostile_batch_name_is_refused_and_a_key_in_a_note_is_not_written(tmp_path):
    with pytest.raises(ConfigError, match="control characters"):
        DecisionStore(str(tmp_path), "b\x1b[31m")
    store = DecisionStore(str(tmp_path), "../../etc")
    key = "sk1234567890abcdef"
    path = store.save(Decision("gen-1", "reject", "../../ann", note=f"see api_key={key}"))
    assert str(tmp_path) in path and ".." not in path[len(str(tmp_path)) :]
    with open(path, encoding="utf-8") as f:
        assert key not in f.read()
    assert store.latest()["gen-1"].reviewer == "../../ann"


def test_a_read_only_location_refuses_a_save(tmp_path):
    store = DecisionStore(str(tmp_path), "b", read_only=True)
    with pytest.raises(ConfigError, match="cannot be saved: the dashboard was started read-only"):
        store.save(Decision("gen-1", "accept", "ann"))


def test_the_batch_of_a_candidates_folder_is_its_name(tmp_path):
    assert batch_name(tmp_path / "gen" / ".." / "week-49") == "week-49"


texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(question=texts, reference=texts, note=texts, quote=texts)
def test_any_valid_decision_reads_back_as_written(
    tmp_path_factory, question, reference, note, quote
):
    try:
        d = Decision(
            "gen-1",
            "edit",
            "ann",
            question=question or None,
            reference=reference or None,
            quotes=(Quote("doc", quote),) if quote else None,
            note=note,
        )
    except ConfigError:
        return  # refused before anything is written
    store = DecisionStore(str(tmp_path_factory.mktemp("loc")), "b")
    store.save(d)
    got = store.latest()["gen-1"]
    assert store.problems == ()
    assert (got.question, got.reference, got.quotes) == (d.question, d.reference, d.quotes)
