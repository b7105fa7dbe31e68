"""Every question can fail, and "unscored" is not "ok" (issue 32 item 4), whichever door a
row comes through: reference-free questions fail on the figures they have
(`irrelevant_context`, `off_topic`), a question the judge could not score is `unscored`;
Diagnose's counts, the headline and `check` see them."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

import rageval_core
from rageval_core.query import (
    ResultsStore,
    check_run,
    failure_counts,
    format_check,
    format_headline,
    parse_thresholds,
    run_headline,
)
from rageval_core.writer import RunWriter

GLACIER = (
    "Glaciers carve U-shaped valleys as they move downhill. "
    "The visitor centre sells hot chocolate in winter."
)
BILLING = "Invoices are paid within thirty days of the billing date."
CORPUS = {"glacier": GLACIER, "billing": BILLING}
# question id -> (question, answer, retrieved chunk, the failure type it earns); none has
# gold or a reference answer: production questions
ASKED = {
    "p1": (
        "How do glaciers shape valleys?",
        "Glaciers carve U-shaped valleys as they move downhill.",
        "glacier",
        "ok",
    ),
    "p2": (
        "What shape of valley does a glacier carve?",
        "The visitor centre sells hot chocolate in winter.",  # faithful, beside the point
        "glacier",
        "off_topic",
    ),
    "p3": ("Why do glaciers move downhill?", BILLING, "billing", "irrelevant_context"),
}


def write_dataset(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "corpus.jsonl", "w") as fh:
        for cid, text in CORPUS.items():
            fh.write(json.dumps({"id": cid, "doc_id": cid, "text": text}) + "\n")
    path = root / "dataset.yaml"
    questions = [{"id": q, "question": asked[0]} for q, asked in ASKED.items()]
    data = {"name": "prod", "version": "1", "corpus": "corpus.jsonl", "questions": questions}
    path.write_text(yaml.safe_dump(data))
    return path


def answer(qid: str) -> dict:
    _, text, cid, _ = ASKED[qid]
    return {"answer": text, "retrieved": [{"id": cid, "text": CORPUS[cid], "score": 1.0}]}


def pipeline(question: str) -> dict:
    return answer(next(q for q, asked in ASKED.items() if asked[0] == question))


def failure_types(results: Path, run_id: str) -> dict[str, str]:
    rows = pq.read_table(results / run_id / "questions.parquet").to_pylist()
    return {r["question_id"]: r["failure_type"] for r in rows}


@pytest.fixture
def dataset(tmp_path) -> Path:
    return write_dataset(tmp_path / "data")


def run(dataset: Path, results: Path, run_id: str, judge: dict | None = None) -> None:
    rageval_core.evaluate(
        pipeline,
        dataset,
        judge=judge,
        results=results,
        run_id=run_id,
        concurrency=1,
        progress=False,
    )


def test_reference_free_questions_fail_on_what_they_have_through_every_door(dataset, tmp_path):
    results = tmp_path / "results"
    run(dataset, results, "direct")
    want = {q: asked[3] for q, asked in ASKED.items()}
    assert failure_types(results, "direct") == want
    # a tool's record carries the figures its judge gave (no chunk verdicts): the rule
    # reads them as the runner reads its own
    judged = pq.read_table(results / "direct" / "questions.parquet").to_pylist()
    figures = ("faithfulness", "context_relevance", "answer_relevancy")
    with RunWriter("prod", results_dir=results, dataset=dataset, run_id="written") as w:
        for row in judged:
            qid = row["question_id"]
            w.add(qid, **answer(qid), **{f: row[f] for f in figures})
    assert failure_types(results, "written") == want
    with ResultsStore(results) as store:
        counts = failure_counts(store, ["direct"])
        shown = dict(zip(counts["failure_type"], counts["n"], strict=True))
        assert shown["off_topic"] == 1 and shown["irrelevant_context"] == 1 and shown["ok"] == 1
        head = format_headline(run_headline(store, "direct"))
    assert "failures: irrelevant context 1, off topic 1, ok 1" in head


def test_a_judge_that_fails_on_every_question_leaves_none_ok(dataset, tmp_path):
    """The issue's run "whose judge failed on every question shows failures: ok 4"."""
    results = tmp_path / "results"
    dead = {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    run(dataset, results, "dead", {**dead, "max_retries": 0, "timeout_s": 2, "cache": False})
    assert set(failure_types(results, "dead").values()) == {"unscored"}
    with RunWriter("prod", results_dir=results, dataset=dataset, run_id="imported") as w:
        for qid in ASKED:
            w.add(qid, **answer(qid), faithfulness=1.0, judge_error="timeout")
    assert set(failure_types(results, "imported").values()) == {"unscored"}
    with ResultsStore(results) as store:
        head = format_headline(run_headline(store, "dead"))
        limits = parse_thresholds({"failure_unscored": {"max": 0}, "faithfulness": {"min": 0.5}})
        result = check_run(store, "dead", thresholds=limits)
    assert "failures: unscored 3" in head and "ok" not in head.split("failures:")[1]
    assert not result.passed
    text = format_check(result)
    assert "unscored" in text and "above max 0" in text
    assert "faithfulness" in text and "no value" in text  # the gate cannot vouch for it


def test_headline_and_check_say_how_many_questions_a_figure_covers(dataset, tmp_path):
    results = tmp_path / "results"
    with RunWriter("prod", results_dir=results, dataset=dataset, run_id="partly") as w:
        for i, qid in enumerate(ASKED):  # a tool that scored the first question only
            scored = {"faithfulness": 1.0} if i == 0 else {"judge_error": "timeout"}
            w.add(qid, **answer(qid), **scored)
    with ResultsStore(results) as store:
        head = format_headline(run_headline(store, "partly"))
        result = check_run(store, "partly")
    (line,) = [ln for ln in head.splitlines() if ln.strip().startswith("faithfulness")]
    assert line.endswith("1.000 (1 of 3 questions)")
    faith = next(r for r in result.rows if r.metric == "faithfulness")
    assert faith.value == 1.0 and faith.notes == ("covers 1 of 3 questions",)
    assert "covers 1 of 3 questions" in format_check(result)
    assert "failures: unscored 2, ok 1" in head
