"""The reference-free verdicts end to end: a judge's chunk verdicts, answer relevancy and
recall statements become row columns, their means summary figures that `check` gates and
`compare` pairs with intervals; a questions-only dataset runs with `answerable` NULL."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from rageval_core.config import load_config
from rageval_core.models import (
    ChunkVerdict,
    JudgeInput,
    Judgement,
    JudgeRef,
    Statement,
)
from rageval_core.query import (
    ResultsStore,
    Threshold,
    check_run,
    compare_runs,
    runs_overview,
    unavailable_metrics,
)
from rageval_core.runner import RunOptions, run
from rageval_core.runs.manifest import manifest_from_dict, manifest_to_dict

METRICS = ("faithfulness", "context_relevance", "answer_relevancy", "context_recall")


class FakeJudge:
    """Marks chunk `f1` irrelevant, every other chunk relevant; relevancy `relevancy`,
    NULL on a refusal; the reference split on `;`, a statement attributed when a chunk's
    text contains it."""

    def __init__(self, relevancy: float = 0.75):
        self.relevancy = relevancy

    def describe(self) -> JudgeRef:
        return JudgeRef("fake", "m", "1", metrics=METRICS)

    def judge(self, inp: JudgeInput) -> Judgement:
        refused = "don't know" in inp.answer
        statements = None
        if inp.reference_answer:
            statements = tuple(
                Statement(
                    s,
                    any(s in c.text for c in inp.retrieved),
                    evidence_chunk_id=next((c.id for c in inp.retrieved if s in c.text), None),
                )
                for s in inp.reference_answer.split(";")
            )
        return Judgement(
            claims=(),
            refused=refused,
            answer_correctness=None,
            chunk_verdicts=tuple(
                ChunkVerdict(c.id, i, c.id != "f1", f"reason {c.id}")
                for i, c in enumerate(inp.retrieved, 1)
            ),
            answer_relevancy=None if refused else self.relevancy,
            answer_relevancy_reason=None if refused else "addresses it",
            statements=statements,
        )

    def close(self) -> None:
        pass


@pytest.fixture
def fake_judge(monkeypatch):
    judges = {"relevancy": 0.75}
    monkeypatch.setattr(
        "rageval_core.runner.make_judge", lambda config: FakeJudge(judges["relevancy"])
    )
    return judges


def _run(toy, run_id: str) -> dict[str, dict]:
    config = load_config(toy.config())
    run(config, RunOptions(results=str(toy.results), run_id=run_id, progress=False))
    table = pq.read_table(toy.results / run_id / "questions.parquet")
    return {r["question_id"]: r for r in table.to_pylist()}


def test_the_verdicts_are_written_as_their_columns(toy, fake_judge):
    rows = _run(toy, "v1")
    q = rows["q001"]  # retrieved f1 (irrelevant to the fake judge), then f2
    assert q["chunk_verdicts"] == [
        {"chunk_id": "f1", "rank": 1, "relevant": False, "reason": "reason f1"},
        {"chunk_id": "f2", "rank": 2, "relevant": True, "reason": "reason f2"},
    ]
    assert q["context_relevance"] == 0.5 and q["context_precision"] == 0.5
    assert q["answer_relevancy"] == 0.75 and q["answer_relevancy_reason"] == "addresses it"
    # reference "7" is in chunk f1's text "Fact 1 is 7."
    assert q["recall_statements"][0]["attributed"] is True
    assert q["recall_statements"][0]["evidence_chunk_id"] == "f1"
    assert q["context_recall"] == 1.0
    q2 = rows["q002"]  # f2 then f3: both relevant
    assert q2["context_relevance"] == 1.0 and q2["context_precision"] == 1.0
    un = rows["u001"]  # a refusal: relevancy NULL, and no reference to recall
    assert un["answer_relevancy"] is None and un["context_recall"] is None
    assert un["recall_statements"] is None
    manifest = json.loads((toy.results / "v1" / "manifest.json").read_text())
    assert manifest["judge"]["metrics"] == list(METRICS)


def test_judge_metrics_round_trip_and_old_manifests_read_none(toy, fake_judge):
    _run(toy, "v1")
    d = json.loads((toy.results / "v1" / "manifest.json").read_text())
    m = manifest_from_dict(d)
    assert m.judge.metrics == METRICS
    assert manifest_from_dict(manifest_to_dict(m)) == m
    del d["judge"]["metrics"]
    old = manifest_from_dict(d)
    assert old.judge.metrics is None
    assert "metrics" not in manifest_to_dict(old)["judge"]  # written as it was read


def test_summary_check_and_compare_carry_the_new_figures(toy, fake_judge):
    _run(toy, "base")
    fake_judge["relevancy"] = 0.25
    _run(toy, "worse")
    store = ResultsStore(str(toy.results))
    summary = runs_overview(store).set_index("run_id")
    assert summary.loc["base", "answer_relevancy"] == pytest.approx(0.75)
    assert summary.loc["worse", "answer_relevancy"] == pytest.approx(0.25)
    # f1 is one of two chunks for q001 and q030 (ids f30, f1), the only one for the two
    # unanswerable questions: 28 questions at 1.0 of 32
    assert summary.loc["base", "context_relevance"] == pytest.approx((28 + 0.5 + 0.5) / 32)

    gated = check_run(
        store,
        "worse",
        thresholds=[
            Threshold("answer_relevancy", min=0.5),
            Threshold("context_relevance", min=0.9),
        ],
    )
    by = {r.metric: r for r in gated.rows}
    assert by["answer_relevancy"].breaches and not by["context_relevance"].breaches
    strict = check_run(store, "base", thresholds=[Threshold("context_relevance", min=0.99)])
    assert strict.rows[0].breaches == ("below min 0.99",)

    c = compare_runs(store, ["base", "worse"], n_resamples=200)
    m = c.metrics.set_index(["metric", "run_id"])
    row = m.loc[("answer_relevancy", "worse")]
    assert row["delta"] == pytest.approx(-0.5)
    assert row["ci_low"] == pytest.approx(-0.5) and row["ci_high"] == pytest.approx(-0.5)
    assert m.loc[("context_relevance", "worse"), "delta"] == pytest.approx(0.0)


def _questions_only(toy, n: int = 6) -> Path:
    data = {
        "name": "prod-sample",
        "version": "1",
        "corpus": "corpus.jsonl",
        "questions": [{"id": f"p{i}", "question": f"What is fact {i}?"} for i in range(1, n)]
        + [{"id": "p-odd", "question": "Anything else?"}],
    }
    path = toy.root / "data" / "dataset.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_questions_only_dataset_runs_with_answerability_unknown(toy, fake_judge):
    _questions_only(toy)
    rows = _run(toy, "free")
    assert {r["answerable"] for r in rows.values()} == {None}
    p1 = rows["p1"]
    assert p1["recall_at_5"] is None and p1["mrr"] is None  # no gold: not computed
    assert p1["answer_correctness"] is None and p1["context_recall"] is None  # no reference
    assert p1["context_relevance"] == 0.5 and p1["answer_relevancy"] == 0.75
    # declining a question of unknown answerability is no false refusal
    odd = rows["p-odd"]
    assert odd["refused"] is True and odd["failure_type"] != "false_refusal"
    # but what it retrieved is still read: nothing relevant is irrelevant_context
    assert odd["context_relevance"] == 0.0 and odd["failure_type"] == "irrelevant_context"
    s = runs_overview(ResultsStore(str(toy.results))).set_index("run_id").loc["free"]
    assert (s["n_reference_free"], s["n_answerable"], s["n_unanswerable"]) == (6, 0, 0)
    assert s["false_refusal_rate"] != s["false_refusal_rate"]  # NaN: no answerable question
    assert s["answer_relevancy"] == pytest.approx(0.75)


def test_unavailable_metrics_say_why_once(toy, fake_judge):
    _questions_only(toy)
    _run(toy, "free")
    why = {
        u.family: u.reason for u in unavailable_metrics(ResultsStore(str(toy.results)), ["free"])
    }
    # context recall is said with correctness; the fake judge finds no claim to check
    assert set(why) == {"retrieval", "reference", "faithfulness"}
    assert "no retrieval gold" in why["retrieval"]
    assert "no reference answers" in why["reference"]
