"""`rageval dataset refresh`: gold spans found again in edited documents (real files)."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rageval_core.cli import main
from rageval_core.dataset import load_dataset
from rageval_core.dataset.anchoring import Found, Lost, occurrences, relocate
from rageval_core.dataset.hashing import document_sha256
from rageval_core.dataset.refresh import plan_refresh, read_new_documents
from rageval_core.errors import DatasetError
from rageval_core.models import Document, GoldSpan
from tests.core.dataset.handbook import FAQ, GUIDE, edited, make_handbook
from tests.core.dataset.handbook import write_documents as _documents


@pytest.fixture
def handbook(tmp_path: Path) -> Path:
    return make_handbook(tmp_path / "v3")


def test_refresh_re_anchors_moved_spans_and_lists_exactly_the_affected_questions(
    handbook: Path, tmp_path: Path
) -> None:
    new_path, new = edited(tmp_path)
    plan = plan_refresh(load_dataset(handbook), read_new_documents(new_path))

    moved_at = new["guide"].index("The answer is 42")
    assert dict(plan.moved) == {
        GoldSpan("guide", 0, 37): GoldSpan("guide", 17, 54),
        GoldSpan("guide", 88, 104): GoldSpan("guide", moved_at, moved_at + 16),
    }
    assert plan.stale_ids == ("q-deleted", "q-ambiguous")
    assert [(s.question_id, s.before, s.after) for s in plan.lost] == [
        ("q-deleted", "Refunds take five days.", None),
        ("q-ambiguous", "Shipping is free over 50 euros.", None),
    ]
    assert [s.lost.why for s in plan.lost if s.lost] == ["vanished", "ambiguous"]
    assert plan.n_spans == 5

    written = load_dataset(refreshed(handbook, new_path, tmp_path / "v4"))
    spans = {q.id: q.gold_spans for q in written.questions}
    text = dict(new)
    assert text["guide"][spans["q-moved"][0].start : spans["q-moved"][0].end] == "The answer is 42"
    assert text["guide"][spans["q-quote"][0].start : spans["q-quote"][0].end] == GUIDE[:37]
    assert text["faq"][slice(*_range(spans["q-returns"][0]))] == "accepted within 30 days"
    stale = {q.id: q.stale for q in written.questions if q.stale}
    assert set(stale) == {"q-deleted", "q-ambiguous"}
    assert stale["q-ambiguous"] == (
        "gold_spans[0]: 'Shipping is free over 50 euros.' now stands 2 times in 'faq' (at 0, 69)"
    )
    assert written.version == "4" and written.warnings == ()


def _range(span: GoldSpan) -> tuple[int, int]:
    return span.start, span.end


def refreshed(dataset: Path, documents: Path, out: Path, code: int = 1) -> Path:
    """`rageval dataset refresh` run through the CLI, its exit code checked; the dataset
    file it wrote."""
    argv = ["dataset", "refresh", str(dataset), "--documents", str(documents), "--out", str(out)]
    assert main(argv) == code
    return out / "dataset.yaml"


def test_the_written_version_changes_only_the_lines_refresh_must(
    handbook: Path, tmp_path: Path
) -> None:
    """Comments, quotes as quotes, flow and block style kept: the diff is the version,
    the moved offsets, the stale marks and the recorded document versions."""
    new_path, new = edited(tmp_path)
    out = refreshed(handbook, new_path, tmp_path / "v4")
    diff = [
        line
        for line in difflib.ndiff(handbook.read_text().splitlines(), out.read_text().splitlines())
        if line[:1] in "+-"
    ]
    at = new["guide"].index("The answer is 42")
    docs = {d.id: document_sha256(d) for d in read_new_documents(new_path)}
    assert diff == [
        "- version: 3",
        "+ version: 4",
        "+ document_versions:",
        f"+     faq: {docs['faq']}",
        f"+     guide: {docs['guide']}",
        "+     stale: true",
        "+     stale_reason: \"gold_spans[0]: 'Refunds take five days.' is no longer in 'guide'\"",
        '-       - {doc_id: guide, start: 88, end: 104, text: "The answer is 42"}',
        f'+       - {{doc_id: guide, start: {at}, end: {at + 16}, text: "The answer is 42"}}',
        "+     stale: true",
        "+     stale_reason: \"gold_spans[0]: 'Shipping is free over 50 euros.' now stands 2 "
        "times in 'faq' (at 0, 69)\"",
    ]
    assert (out.parent / "documents.jsonl").read_text() == new_path.read_text()


def test_cli_names_the_file_line_and_question_with_the_text_before_and_after(
    handbook: Path, tmp_path: Path, capsys
) -> None:
    guide = GUIDE.replace("Refunds take five days.", "Refunds take ten working days.")
    new_path = _documents(tmp_path / "new.jsonl", {"guide": guide, "faq": FAQ})
    assert main(["dataset", "refresh", str(handbook), "--documents", str(new_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"{handbook}: 5 gold spans: 3 in place, 1 re-anchored, 1 lost; 1 question(s) stale",
        f"{handbook}:14: question q-deleted: gold_spans[0]: 'Refunds take five days.' now "
        "reads 'Refunds take ten working days.'",
        "  before: 'Refunds take five days.'",
        "  after:  'Refunds take ten working days.'",
        "nothing written: give --out DIR to write version 4",
    ]
    assert not (tmp_path / "v4").exists()


def test_unchanged_documents_exit_0_and_a_second_refresh_keeps_stale_questions(
    handbook: Path, tmp_path: Path, capsys
) -> None:
    same = handbook.parent / "documents.jsonl"
    assert main(["dataset", "refresh", str(handbook), "--documents", str(same)]) == 0
    assert "5 gold spans: 5 in place, 0 re-anchored, 0 lost; 0 question(s) stale" in (
        capsys.readouterr().out
    )
    new_path, _ = edited(tmp_path)
    v4 = refreshed(handbook, new_path, tmp_path / "v4")
    v5 = refreshed(v4, new_path, tmp_path / "v5", code=0)
    before, after = load_dataset(v4), load_dataset(v5)
    assert [(q.id, q.stale, q.gold_spans) for q in after.questions] == [
        (q.id, q.stale, q.gold_spans) for q in before.questions
    ]
    assert after.version == "5"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--documents", "missing.jsonl"], "missing.jsonl: cannot read the new documents"),
        (["--documents", "documents.jsonl", "--out", "."], "already exists and is not empty"),
        (
            ["--documents", "documents.jsonl", "--out", "v4", "--version", "3"],
            "the new version must differ from the dataset's (3)",
        ),
    ],
)
def test_bad_input_exits_2_naming_it(handbook: Path, args, says, capsys, monkeypatch) -> None:
    monkeypatch.chdir(handbook.parent)
    assert main(["dataset", "refresh", "dataset.yaml", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert sorted(p.name for p in handbook.parent.iterdir()) == ["dataset.yaml", "documents.jsonl"]


def test_a_document_gone_makes_its_questions_stale(handbook: Path, tmp_path: Path) -> None:
    new_path = _documents(tmp_path / "new.jsonl", {"guide": GUIDE})
    plan = plan_refresh(load_dataset(handbook), read_new_documents(new_path))
    assert plan.stale_ids == ("q-ambiguous", "q-returns")
    assert plan.lost[0].reason == "gold_spans[0]: document 'faq' is not in the new documents"


def test_validate_warns_when_documents_differ_from_the_recorded_versions(
    handbook: Path, tmp_path: Path, capsys
) -> None:
    new_path, new = edited(tmp_path)
    out = refreshed(handbook, new_path, tmp_path / "v4")
    capsys.readouterr()
    assert main(["validate", str(out)]) == 0
    assert capsys.readouterr().err == ""
    _documents(
        out.parent / "documents.jsonl", {"guide": new["guide"] + " More.", "faq": new["faq"]}
    )
    assert main(["validate", str(out)]) == 0
    old_sha = document_sha256(Document("guide", new["guide"]))[:12]
    now_sha = document_sha256(Document("guide", new["guide"] + " More."))[:12]
    captured = capsys.readouterr()
    assert captured.err == (
        f"warning: {out}:5: document 'guide' has changed (recorded sha256 {old_sha}, on disk "
        f"{now_sha}): its gold may no longer stand; run `rageval dataset refresh`\n"
    )
    assert "2 stale (left out of runs)" in captured.out


def test_stale_marks_and_recorded_versions_are_validated(tmp_path: Path) -> None:
    _documents(tmp_path / "documents.jsonl", {"guide": GUIDE})
    path = tmp_path / "dataset.yaml"
    path.write_text(
        "name: n\nversion: 1\ndocuments: documents.jsonl\n"
        "document_versions: {guide: abc}\n"
        "questions:\n"
        "  - id: q1\n    question: x?\n    gold_spans: [{doc_id: guide, text: nowhere}]\n"
        "    stale: true\n"
        "  - id: q2\n    question: y?\n    stale_reason: why\n"
    )
    with pytest.raises(DatasetError) as exc:
        load_dataset(path)
    assert exc.value.problems == [
        f"{path}:12: question q2: 'stale_reason' is given but not 'stale: true'",
        f"{path}:4: dataset: document_versions: 'guide' needs the sha256 of its text "
        "(64 lowercase hex digits), not 'abc'",
    ]  # q1 is stale: its quote found nowhere is no problem


# ------------------------------------------------------------------ the re-anchoring rule

_ALPHABET = st.text(alphabet="ab. \n", max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    before=_ALPHABET,
    span=st.text(alphabet="ab.", min_size=1, max_size=8),
    after=_ALPHABET,
    inserted=st.text(alphabet="abc. ", min_size=1, max_size=30),
    cut=st.floats(0, 1),
    put_after=st.booleans(),
)
def test_text_inserted_before_or_after_a_span_re_anchors_it_exactly(
    before: str, span: str, after: str, inserted: str, cut: float, put_after: bool
) -> None:
    """A span given by offsets, in a document that may repeat its text: text inserted
    anywhere before or after it (not making a new copy of it) moves it exactly."""
    old = before + span + after
    start, end = len(before), len(before) + len(span)
    side = after if put_after else before
    at = (end if put_after else 0) + round(cut * len(side))
    new = old[:at] + inserted + old[at:]
    assume(len(occurrences(new, span)) == len(occurrences(old, span)))
    shift = 0 if put_after else len(inserted)
    assert relocate(old, start, end, new, by_offsets=True) == Found(start + shift, end + shift)
    quoted = relocate(old, start, end, new, by_offsets=False)
    if len(occurrences(new, span)) == 1:
        assert quoted == Found(start + shift, end + shift)
    else:
        assert quoted == Lost("ambiguous", at=tuple(occurrences(new, span)))


def test_near_the_old_place_when_a_copy_is_added() -> None:
    """Offsets in a document that gains a copy: the copy whose neighbours agree."""
    old = "intro. The fee is 5 euros. Outro text here."
    new = "The fee is 5 euros. New preface. intro. The fee is 5 euros. Outro text here."
    start = old.index("The fee")
    found = relocate(old, start, start + 19, new, by_offsets=True)
    assert found == Found(new.index("intro.") + 7, new.index("intro.") + 26)
    assert relocate(old, start, start + 19, new, by_offsets=False) == Lost("ambiguous", at=(0, 40))
    # copies no neighbour tells apart: never a guess
    assert relocate("x A y", 2, 3, "x A y x A y", by_offsets=True) == Lost("ambiguous", at=(2, 8))
