"""Human labels against judges in DuckDB: per judge, per run, between reviewers, and the
review queue, on real run folders and a real store."""

from __future__ import annotations

import pytest

from rageval_core.labels import LabelSet, reviewer_agreement
from rageval_core.models import JudgeRef
from rageval_core.query import (
    JudgeId,
    judge_reports,
    review_queue,
    run_coverage,
)
from rageval_core.store.results import ResultsStore
from tests.core.labels.helpers import LLM, judged_row, label, write_run

R1, R2, R3 = "20260101-000000-a", "20260102-000000-b", "20260103-000000-c"


@pytest.fixture
def store(tmp_path):
    root = tmp_path / "results"
    rows = [
        judged_row("q1", [("Paris is big.", "supported"), ("It has 3 towers.", "unsupported")]),
        judged_row("q2", [("Rome.", "contradicted")], answer_correctness=1.0),
        judged_row("q3", [("Oslo.", "supported")]),
    ]
    write_run(root, R1, rows)
    write_run(root, R2, rows)  # same judge, same answers: copies, not more evidence
    llm_rows = [
        judged_row(
            "q1",
            [("Paris is big.", "supported"), ("It has 3 towers.", "supported")],
            answer="Paris is big. It has 3 towers.",
        ),
        judged_row("q2", [("Rome.", "contradicted")], answer_correctness=1.0),
        judged_row("q3", [("Oslo.", "supported")]),
    ]
    write_run(root, R3, llm_rows, judge=LLM)
    with ResultsStore(str(root), cache_dir=tmp_path / "cache") as s:
        yield s


LABELS = LabelSet(
    (
        label("q1", "paris is BIG", "supported"),
        label("q1", "It has 3 towers.", "supported"),
        label("q2", "Rome.", "contradicted"),
        label("q1", None, "pass", run_id=R3),
        label("q1", "It has 3 towers.", "unsupported", reviewer="bob"),
        label("q9", "Nowhere.", "supported"),
    )
)


def test_each_judge_gets_its_own_figures(store):
    reports = {r.judge: r for r in judge_reports(store, LABELS)}
    offline = reports[JudgeId("offline", "overlap>=0.6", "offline-1")]
    llm = reports[JudgeId("openai", "gpt-test", "v3")]
    assert offline.runs == (R1, R2)
    # pairs: ann/paris s-s, ann/towers s-u, ann/rome c-c, bob/towers u-u (copies counted once)
    assert offline.claims.n == 4
    assert offline.claims.confusion == ((1, 1, 0), (0, 1, 0), (0, 0, 1))
    assert offline.claims.raw == pytest.approx(0.75)
    # the judge flagged 3 (towers twice, Rome); people flagged 2 of those (bob, Rome)
    assert offline.claims.unsupported_precision == pytest.approx(2 / 3)
    assert offline.claims.unsupported_recall == 1.0
    (d,) = offline.disagreements
    assert (d.run_id, d.question_id, d.human, d.judge, d.runs) == (
        R2,
        "q1",
        "supported",
        "unsupported",
        2,
    )
    assert offline.questions.n == 0  # the question label is on R3's answer, not theirs
    assert llm.claims.confusion == ((2, 0, 0), (1, 0, 0), (0, 0, 1))
    assert llm.questions.n == 1 and llm.questions.confusion == ((1, 0), (0, 0))
    assert [lab.question_id for lab in llm.unmatched] == ["q9"]


def test_judges_without_verdicts_on_labelled_questions_come_last(store, tmp_path):
    """An imported run's judge ("none") sorted first by name and opened the Judge page."""
    root = tmp_path / "results"
    write_run(root, "20260104-000000-d", [judged_row("q7", [])], judge=JudgeRef("none"))
    write_run(root, "20260105-000000-e", [judged_row("q8", [])], judge=JudgeRef("aaa"))
    store.refresh()
    kinds = [r.judge.kind for r in judge_reports(store, LABELS)]
    assert kinds == ["offline", "openai", "aaa", "none"]


def test_same_answer_in_another_run_carries_the_question_label(store):
    labels = LabelSet((label("q2", None, "fail", run_id=R1),))
    reports = {r.judge.kind: r for r in judge_reports(store, labels)}
    # R1 and R2 gave the same answer; R3 too (same text) - the label follows the answer
    assert reports["offline"].questions.confusion == ((0, 0), (0, 1))
    assert reports["openai"].questions.n == 1


def test_run_coverage_counts_checked_claims_and_kappa(store):
    cov = run_coverage(store, LABELS)
    assert cov[R1].claims == 4 and cov[R1].checked == 3
    assert cov[R3].kappa is not None and cov[R3].checked == 3


def test_reviewer_agreement_needs_two_reviewers_on_one_claim(store):
    got = reviewer_agreement(LABELS)
    assert got is not None and got.n == 1 and got.confusion[0][1] == 1
    assert reviewer_agreement(LabelSet(LABELS.labels[:3])) is None


def test_review_queue_is_seeded_and_skips_labelled_questions(store):
    first = review_queue(store, R1, LabelSet(), size=3, seed=1)
    assert review_queue(store, R1, LabelSet(), size=3, seed=1) == first
    assert {i.question_id for i in first} == {"q1", "q2", "q3"}
    reasons = {i.question_id: i.reason for i in first}
    assert reasons["q1"] == f"judges disagree with run {R3}"
    assert reasons["q2"] == "unsupported on a correct answer"
    assert reasons["q3"] == "stratified: supported"
    assert [i.question_id for i in review_queue(store, R1, LABELS, size=3)] == ["q3"]


def test_review_queue_size_bounds(store):
    from rageval_core.errors import ConfigError

    assert len(review_queue(store, R1, LabelSet(), size=10)) == 3  # every question with claims
    with pytest.raises(ConfigError, match="at least 1"):
        review_queue(store, R1, LabelSet(), size=0)


def test_strata_take_turns_worst_verdict_first(tmp_path):
    rows = [judged_row(f"s{i}", [(f"Fine {i}.", "supported")]) for i in range(6)]
    rows += [
        judged_row(f"u{i}", [(f"Odd {i}.", "unsupported")], answer_correctness=0.1)
        for i in range(6)
    ]
    rows += [
        judged_row(f"c{i}", [(f"Wrong {i}.", "contradicted")], answer_correctness=0.1)
        for i in range(6)
    ]
    write_run(tmp_path / "results", R1, rows)
    with ResultsStore(str(tmp_path / "results"), cache_dir=tmp_path / "cache") as s:
        queue = review_queue(s, R1, LabelSet(), size=6, seed=3)
    assert [i.reason for i in queue] == [
        f"stratified: {v}" for v in ("contradicted", "unsupported", "supported") * 2
    ]
    assert [i.question_id[0] for i in queue] == list("cuscus")


SQLI = [
    "' OR '1'='1",
    "x'; DROP TABLE t; --",
    "$claim_files",
    "?",
    "{labels}",
    "read_csv('/etc/passwd')",
]


@pytest.mark.parametrize("payload", SQLI)
def test_label_text_is_data_never_sql(tmp_path, payload):
    """Claims, question ids, reviewers and notes reach DuckDB as Arrow values only: a
    hostile one matches itself literally and nothing else."""
    rows = [
        judged_row(payload, [(payload, "unsupported"), ("Plain.", "supported")]),
        judged_row("q2", [("Plain.", "supported")]),
    ]
    write_run(tmp_path / "results", R1, rows)
    labels = LabelSet(
        (
            label(payload, payload, "supported", reviewer=payload, note=payload),
            label("q2", payload, "supported"),  # no such claim on q2
        )
    )
    with ResultsStore(str(tmp_path / "results"), cache_dir=tmp_path / "cache") as s:
        (report,) = judge_reports(s, labels)
        cov = run_coverage(s, labels)
    assert report.claims.n == 1 and report.claims.confusion[0][1] == 1
    assert [d.reviewer for d in report.disagreements] == [payload]
    assert [lab.question_id for lab in report.unmatched] == ["q2"]
    assert cov[R1].checked == 1
