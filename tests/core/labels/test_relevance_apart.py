"""Relevance labels (chunk, answer) never count as question or claim labels: their
`claim` is None like a question label's, so every place that tells the kinds apart must
use `HumanLabel.kind`, not `claim is None`."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.labels import LabelSet
from rageval_core.labels.export import to_yaml
from rageval_core.query import judge_reports
from rageval_core.store.results import ResultsStore
from tests.core.labels.helpers import SHA, judged_row, label, write_run

RUN = "20260101-000000-a"
BASE = {
    "dataset": "qa",
    "dataset_sha256": SHA,
    "reviewer": "ann",
    "created_at": "2026-02-01T00:00:00Z",
}


def _chunk(qid: str, chunk_id: str, relevant: bool, reviewer: str):
    from rageval_core.labels.model import HumanLabel

    return HumanLabel(
        **{**BASE, "reviewer": reviewer},
        question_id=qid,
        claim=None,
        verdict=None,
        question_label=None,
        chunk_id=chunk_id,
        relevant=relevant,
    )


def _answer(qid: str, relevant: bool, reviewer: str):
    from rageval_core.labels.model import HumanLabel

    return HumanLabel(
        **{**BASE, "reviewer": reviewer},
        question_id=qid,
        claim=None,
        verdict=None,
        question_label=None,
        answer=f"answer {qid}",
        answer_relevant=relevant,
    )


QIDS = st.sampled_from(["q1", "q2"])
WHO = st.sampled_from(["ann", "bob"])
KINDS = st.one_of(
    st.builds(
        lambda q, v, r: label(q, "Paris is big.", v, reviewer=r),
        QIDS,
        st.sampled_from(["supported", "unsupported", "contradicted"]),
        WHO,
    ),
    st.builds(
        lambda q, v, r: label(q, None, v, reviewer=r), QIDS, st.sampled_from(["pass", "fail"]), WHO
    ),
    st.builds(_chunk, QIDS, st.sampled_from(["d#1", "d#2"]), st.booleans(), WHO),
    st.builds(_answer, QIDS, st.booleans(), WHO),
)


def _figures(store: ResultsStore, labels: LabelSet) -> list[tuple]:
    return [
        (
            r.judge,
            r.claims.n,
            r.claims.confusion,
            r.questions.n,
            r.questions.confusion,
            r.disagreements,
            r.unmatched,
        )
        for r in judge_reports(store, labels, n_boot=0)
    ]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(found=st.lists(KINDS, max_size=12))
def test_agreement_is_the_same_without_the_relevance_labels(tmp_path, found) -> None:
    root = tmp_path / "results"
    if not root.exists():
        write_run(
            root, RUN, [judged_row(q, [("Paris is big.", "supported")]) for q in ("q1", "q2")]
        )
    every = LabelSet(tuple(found)).merged(LabelSet())
    kept = LabelSet(tuple(lab for lab in every.labels if lab.kind in ("claim", "question")))
    with ResultsStore(str(root), cache_dir=tmp_path / "cache") as store:
        assert _figures(store, every) == _figures(store, kept)
    for q in ("q1", "q2"):
        index = every.for_question(SHA, q)
        assert all(lab.kind == "question" for lab in index.get(None, ()))
    assert len(every.table) == len(kept.labels)


def test_relevance_labels_export_in_the_calibration_yaml_form() -> None:
    out = yaml.safe_load(
        to_yaml(
            [
                label("q1", None, "pass"),
                _chunk("q1", "d#1", True, "ann"),
                _answer("q1", False, "ann"),
            ]
        )
    )["labels"]
    assert {k: out[0][k] for k in ("question_id", "faithful")} == {
        "question_id": "q1",
        "faithful": True,
    }
    assert {k: out[1][k] for k in ("chunk_id", "relevant")} == {"chunk_id": "d#1", "relevant": True}
    assert {k: out[2][k] for k in ("answer", "answer_relevant")} == {
        "answer": "answer q1",
        "answer_relevant": False,
    }
    assert not any("faithful" in e for e in out[1:])


def test_calibration_yaml_reads_chunk_and_answer_entries(tmp_path) -> None:
    from rageval_core.labels.older_yaml import Label, load_labels

    path = tmp_path / "labels.yaml"
    path.write_text(
        "labels:\n"
        '  - {question_id: 001, chunk_id: "company-overview#1", relevant: true}\n'
        '  - {question_id: 001, answer: "2009.", answer_relevant: false}\n'
        "  - {question_id: 001, faithful: true}\n"
    )
    assert load_labels(path) == [
        Label("001", "relevant", chunk_id="company-overview#1"),
        Label("001", "irrelevant", answer="2009."),
        Label("001", "faithful"),
    ]


def test_calibration_yaml_names_a_wrong_relevance_entry(tmp_path) -> None:
    import pytest

    from rageval_core.errors import DatasetError
    from rageval_core.labels.older_yaml import load_labels

    path = tmp_path / "labels.yaml"
    path.write_text(
        "labels:\n"
        '  - {question_id: q1, chunk_id: "d#1", relevant: "yes"}\n'
        '  - {question_id: q1, answer: "", answer_relevant: true}\n'
        '  - {question_id: q1, chunk_id: "d#1", answer: "x", relevant: true}\n'
        '  - {question_id: q2, answer: "2009.", answer_relevant: true}\n'
        '  - {question_id: q2, answer: "2009", answer_relevant: false}\n'
    )
    with pytest.raises(DatasetError) as err:
        load_labels(path)
    text = "\n".join(err.value.problems)
    assert "labels[0] (q1): relevant must be true or false" in text
    assert "labels[1] (q1): answer must be non-empty text" in text
    assert "labels[2] (q1): one kind per entry" in text
    assert "labels[4] (q2): duplicate label" in text


def test_relevance_agreement_meets_the_run_verdicts(tmp_path) -> None:
    from rageval_core.query import relevance_agreement

    root = tmp_path / "results"
    verdicts = [
        {"chunk_id": "d#1", "rank": 1, "relevant": True, "reason": "names it"},
        {"chunk_id": "d#2", "rank": 2, "relevant": False, "reason": "off topic"},
    ]
    rows = [
        judged_row(
            "q1",
            [("Paris.", "supported")],
            answer="answer q1",
            chunk_verdicts=verdicts,
            answer_relevancy=0.8,
        ),
        judged_row("q2", [("Rome.", "supported")], answer="answer q2", answer_relevancy=0.2),
    ]
    write_run(root, RUN, rows)
    labels = LabelSet(
        (
            _chunk("q1", "d#1", True, "ann"),  # agrees
            _chunk("q1", "d#2", True, "ann"),  # disagrees
            _chunk("q1", "d#9", True, "ann"),  # no such chunk: unmatched
            _answer("q1", True, "ann"),  # 0.8 >= 0.5: agrees
            _answer("q2", True, "ann"),  # 0.2: disagrees
            label("q1", None, "pass"),  # not a relevance label
        )
    )
    with ResultsStore(str(root), cache_dir=tmp_path / "cache") as store:
        got = relevance_agreement(store, labels, [RUN], n_boot=0)
    chunk, answer = got["chunk relevance"], got["answer relevancy"]
    assert (chunk.n, chunk.raw, answer.n, answer.raw) == (2, 0.5, 2, 0.5)
    assert [list(r) for r in chunk.confusion] == [[0, 0], [1, 1]]  # rows human, columns judge
