"""Stale questions queued for review: `rageval dataset refresh --out` writes a candidates
batch of exactly the questions it marked stale, and `rageval dataset accept` mends one
in place — its gold the reviewer's quote, no longer stale — with a minimal diff, a
version that scores in `rageval run` (real files, the CLI)."""

from __future__ import annotations

import difflib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rageval_core.candidates import REJECTED, read_candidates, write_outputs
from rageval_core.candidates.accepting import accept
from rageval_core.candidates.decisions import Decision, DecisionStore, batch_name
from rageval_core.candidates.model import Candidate, Quote
from rageval_core.cli import main
from rageval_core.dataset import load_dataset
from rageval_core.dataset.anchoring import occurrences
from rageval_core.errors import DatasetError
from tests.core.dataset.handbook import (
    FAQ,
    GUIDE,
    edited,
    make_handbook,
    scored_rows,
    write_documents,
)

MENDED = "Use it for product codes."


def _refresh(tmp_path: Path) -> Path:
    """The handbook refreshed through the CLI against the issue's edit: version 4."""
    handbook = make_handbook(tmp_path / "v3")
    new_path, _ = edited(tmp_path)
    argv = ["dataset", "refresh", str(handbook), "--documents", str(new_path)]
    assert main([*argv, "--out", str(tmp_path / "v4")]) == 1
    return tmp_path / "v4" / "dataset.yaml"


@pytest.fixture
def refreshed(tmp_path: Path) -> Path:
    return _refresh(tmp_path)


def _batch(version: Path) -> Path:
    return version.parent / "stale-review"


def _by_question(version: Path) -> dict[str, Candidate]:
    return {str(c.replaces): c for c in read_candidates(_batch(version) / "candidates.jsonl")}


def test_the_batch_holds_exactly_the_stale_questions_with_why(tmp_path: Path, capsys) -> None:
    refreshed = _refresh(tmp_path)
    batch = _batch(refreshed)
    assert f"queued 2 stale question(s) for review in {batch}" in capsys.readouterr().out
    candidates = read_candidates(batch / "candidates.jsonl")
    assert [c.replaces for c in candidates] == ["q-deleted", "q-ambiguous"]
    assert [q.id for q in load_dataset(refreshed).questions if q.stale] == [
        "q-deleted",
        "q-ambiguous",
    ]
    deleted, ambiguous = candidates
    assert {c.kind for c in candidates} == {"stale"} and {c.status for c in candidates} == {
        REJECTED
    }
    assert (deleted.question, deleted.reference_answer) == ("How long do refunds take?", "")
    assert deleted.quotes == (Quote("guide", "Refunds take five days."),)
    assert [(c.name, c.passed, c.detail) for c in ambiguous.checks] == [
        (
            "quotes",
            False,
            "gold_spans[0]: 'Shipping is free over 50 euros.' now stands 2 times in 'faq' "
            "(at 0, 69); before: 'Shipping is free over 50 euros.'; after: –",
        )
    ]
    # the NEW documents, as the version holds them; no accepted.yaml: a person decides
    assert (batch / "documents.jsonl").read_text() == (
        refreshed.parent / "documents.jsonl"
    ).read_text()
    assert sorted(p.name for p in batch.iterdir()) == [
        "candidates.jsonl",
        "documents.jsonl",
        "report.json",
    ]
    assert Candidate.from_json(deleted.to_json(), "x") == deleted
    assert "replaces" not in replace(deleted, replaces=None).to_json()
    # --all-passing never takes them: their checks failed
    out = refreshed.parent.parent / "v5"
    args = ["dataset", "accept", str(batch), "--dataset", str(refreshed), "--out", str(out)]
    assert main([*args, "--all-passing"]) == 1 and not out.exists()


def test_a_changed_span_offers_the_text_that_stands_there_now(tmp_path: Path) -> None:
    handbook = make_handbook(tmp_path / "v3")
    guide = GUIDE.replace("Refunds take five days.", "Refunds take ten working days.")
    new_path = write_documents(tmp_path / "new.jsonl", {"guide": guide, "faq": FAQ})
    args = ["dataset", "refresh", str(handbook), "--documents", str(new_path)]
    assert main([*args, "--out", str(tmp_path / "v4")]) == 1
    (only,) = read_candidates(tmp_path / "v4" / "stale-review" / "candidates.jsonl")
    at = guide.index("Refunds take ten")
    assert only.replaces == "q-deleted"
    assert only.quotes == (Quote("guide", "Refunds take ten working days.", at, at + 30),)
    assert only.checks[0].detail.endswith(
        "before: 'Refunds take five days.'; after: 'Refunds take ten working days.'"
    )


def test_nothing_stale_queues_nothing(tmp_path: Path, capsys) -> None:
    handbook = make_handbook(tmp_path / "v3")
    args = [
        "dataset",
        "refresh",
        str(handbook),
        "--documents",
        str(handbook.parent / "documents.jsonl"),
    ]
    assert main([*args, "--out", str(tmp_path / "v4")]) == 0
    assert "queued" not in capsys.readouterr().out
    assert not (tmp_path / "v4" / "stale-review").exists()


def _save(version: Path, labels: Path, decision: Decision) -> None:
    DecisionStore(str(labels), batch_name(_batch(version))).save(decision)


def _accept_cli(version: Path, labels: Path, out: Path, batch: Path | None = None) -> int:
    batch = _batch(version) if batch is None else batch
    args = [str(batch), "--dataset", str(version), "--out", str(out)]
    return main(["dataset", "accept", *args, "--labels", str(labels)])


def test_an_edit_that_stands_once_mends_the_question_with_a_minimal_diff_and_it_scores(
    refreshed: Path, tmp_path: Path, capsys
) -> None:
    labels, v5 = tmp_path / "labels", tmp_path / "v5"
    cid = _by_question(refreshed)["q-deleted"].id
    _save(refreshed, labels, Decision(cid, "edit", "ann", quotes=(Quote("guide", MENDED),)))
    assert _accept_cli(refreshed, labels, v5) == 0
    printed = capsys.readouterr().out
    assert f"mended q-deleted: its gold is candidate {cid}'s quotes, no longer stale" in printed
    assert "0 question(s) added, 1 stale question(s) mended" in printed

    written = load_dataset(v5 / "dataset.yaml")
    q = {q.id: q for q in written.questions}
    text = written.document_map()["guide"].text
    assert q["q-deleted"].stale is None
    assert [text[s.start : s.end] for s in q["q-deleted"].gold_spans] == [MENDED]
    assert q["q-ambiguous"].stale is not None and len(q) == 5
    at = text.index(MENDED)
    diff = [
        line
        for line in difflib.ndiff(
            refreshed.read_text().splitlines(), (v5 / "dataset.yaml").read_text().splitlines()
        )
        if line[:1] in "+-"
    ]
    assert sorted(diff) == sorted(
        [
            "- version: 4",
            "+ version: 5",
            "-       - {doc_id: guide, start: 64, end: 87}",
            "-     stale: true",
            "-     stale_reason: \"gold_spans[0]: 'Refunds take five days.' is no longer in "
            "'guide'\"",
            f"+       - {{doc_id: guide, start: {at}, end: {at + len(MENDED)}, text: {MENDED}}}",
        ]
    )

    rows = scored_rows(v5 / "dataset.yaml", tmp_path)
    assert "q-ambiguous" not in rows  # still stale: left out
    assert rows["q-deleted"]["error"] is None and rows["q-deleted"]["span_recall_at_5"] is not None

    # accepting the same decision again mends nothing
    assert _accept_cli(v5 / "dataset.yaml", labels, tmp_path / "v6", _batch(refreshed)) == 1
    assert not (tmp_path / "v6").exists()


def test_a_quote_that_stands_twice_is_refused_naming_the_candidate(
    refreshed: Path, tmp_path: Path, capsys
) -> None:
    labels, v5 = tmp_path / "labels", tmp_path / "v5"
    cid = _by_question(refreshed)["q-ambiguous"].id
    _save(refreshed, labels, Decision(cid, "accept", "ann"))
    assert _accept_cli(refreshed, labels, v5) == 2
    err = capsys.readouterr().err
    assert (
        f"candidate {cid}: the quote 'Shipping is free over 50 euros.' stands more than once" in err
    )
    assert "Traceback" not in err and not v5.exists()


def test_a_replaces_naming_no_question_of_the_dataset_is_refused(
    refreshed: Path, tmp_path: Path
) -> None:
    batch = _batch(refreshed)
    docs = tuple(load_dataset(refreshed).documents)
    stray = replace(_by_question(refreshed)["q-deleted"], replaces="q-nowhere")
    write_outputs(tmp_path / "stray", "h", [stray], docs, {})
    decisions = {stray.id: Decision(stray.id, "edit", "ann", quotes=(Quote("guide", MENDED),))}
    with pytest.raises(
        DatasetError, match=f"candidate {stray.id}: mends question 'q-nowhere', which"
    ):
        accept(tmp_path / "stray", decisions, refreshed, tmp_path / "v5")
    with pytest.raises(DatasetError, match="give the dataset"):
        accept(batch, decisions, None, tmp_path / "v5")  # no dataset to mend it in
    assert not (tmp_path / "v5").exists()


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_mending_with_any_passage_that_stands_once_changes_only_that_question(
    refreshed: Path, tmp_path_factory, data
) -> None:
    """Any passage standing once in its new document, as the quote of either stale
    question: that question alone changes — its gold that passage, not stale."""
    version = load_dataset(refreshed)
    texts = {d.id: d.text for d in version.documents}
    qid = data.draw(st.sampled_from(["q-deleted", "q-ambiguous"]))
    doc_id = data.draw(st.sampled_from(sorted(texts)))
    start = data.draw(st.integers(0, len(texts[doc_id]) - 1))
    end = data.draw(st.integers(start + 1, min(len(texts[doc_id]), start + 40)))
    quote = texts[doc_id][start:end]
    assume(quote.strip())
    candidate = _by_question(refreshed)[qid]
    decision = Decision(candidate.id, "edit", "ann", quotes=(Quote(doc_id, quote),))
    out = tmp_path_factory.mktemp("mend") / "v5"
    if len(occurrences(texts[doc_id], quote)) != 1:
        with pytest.raises(DatasetError, match=f"candidate {candidate.id}: the quote"):
            accept(_batch(refreshed), {candidate.id: decision}, refreshed, out)
        assert not out.exists()
        return
    done = accept(_batch(refreshed), {candidate.id: decision}, refreshed, out)
    assert done.mended == ((candidate.id, qid),) and done.added == ()
    after = {q.id: q for q in load_dataset(out / "dataset.yaml").questions}
    at = texts[doc_id].index(quote)
    assert after[qid].stale is None and [
        (s.doc_id, s.start, s.end) for s in after[qid].gold_spans
    ] == [(doc_id, at, at + len(quote))]
    assert [q for q in version.questions if q.id != qid] == [
        q for i, q in after.items() if i != qid
    ]


def test_a_question_with_a_span_still_standing_keeps_it_as_written(tmp_path: Path) -> None:
    """Two spans, one lost: the candidate offers both (the standing one passes its check);
    mending replaces only the lost item, the other stays as the team wrote it."""
    folder = tmp_path / "v1"
    folder.mkdir()
    write_documents(folder / "documents.jsonl", {"guide": GUIDE})
    (folder / "dataset.yaml").write_text(
        "name: two\nversion: 1\ndocuments: documents.jsonl\nquestions:\n"
        "  - id: q-two\n    question: 'What about refunds and codes?'\n"
        "    reference_answer: Five days.\n    gold_spans:\n"
        "      - {doc_id: guide, text: 'Use it for product codes.'}  # kept\n"
        "      - {doc_id: guide, text: 'Refunds take five days.'}\n"
    )
    guide = GUIDE.replace("Refunds take five days. ", "")
    new_path = write_documents(tmp_path / "new.jsonl", {"guide": guide})
    args = ["dataset", "refresh", str(folder / "dataset.yaml"), "--documents", str(new_path)]
    assert main([*args, "--out", str(tmp_path / "v2")]) == 1
    v2 = tmp_path / "v2" / "dataset.yaml"
    (only,) = read_candidates(_batch(v2) / "candidates.jsonl")
    at = guide.index(MENDED)
    assert only.quotes == (
        Quote("guide", MENDED, at, at + len(MENDED)),
        Quote("guide", "Refunds take five days."),
    )
    assert [c.passed for c in only.checks] == [True, False]
    assert only.reference_answer == "Five days."
    quotes = (only.quotes[0], Quote("guide", "The answer is 42."))
    done = accept(
        _batch(v2), {only.id: Decision(only.id, "edit", "ann", quotes=quotes)}, v2, tmp_path / "v3"
    )
    assert done.mended == ((only.id, "q-two"),)
    after = (tmp_path / "v3" / "dataset.yaml").read_text()
    assert "      - {doc_id: guide, text: 'Use it for product codes.'}  # kept\n" in after
    assert "Refunds" not in after and "stale" not in after
    (q,) = load_dataset(tmp_path / "v3" / "dataset.yaml").questions
    assert [guide[s.start : s.end] for s in q.gold_spans] == [MENDED, "The answer is 42."]
