"""The tools' relevance and recall scores fill rageval's columns of those figures (only the
scores: no chunk or statement verdict is made up), and a dataset question without gold or
reference is imported as reference-free, not as one to decline."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import yaml

from rageval_core.dataset import example_dataset_path
from rageval_core.importers import import_run
from rageval_core.query import summarize_run
from rageval_core.runs.reading import inspect_run
from tests.core.importers.conftest import CASES, FILES

VERDICT_LISTS = ("chunk_verdicts", "recall_statements")
# RAGAS column -> (rageval column, score of row n): two context precision columns, to
# check which one fills the column and that the other stays a declared metric.
RAGAS_SCORES = {
    "answer_relevancy": ("answer_relevancy", lambda n: 0.9 - n / 100),
    "nv_context_relevance": ("context_relevance", lambda n: 0.5),
    "llm_context_precision_with_reference": ("context_precision", lambda n: n / 20),
    "llm_context_precision_without_reference": (None, lambda n: 0.25),
    "context_recall": ("context_recall", lambda n: 1 / (n + 1)),
}
DEEPEVAL_SCORES = {
    "Answer Relevancy": ("answer_relevancy", 0.75),
    "Contextual Relevancy": ("context_relevance", 0.4),
    "Contextual Recall": ("context_recall", 0.5),
    "Contextual Precision": ("context_precision", 0.8333),
}


def _rows(folder: Path) -> list[dict]:
    return pq.read_table(folder / "questions.parquet").to_pylist()


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def test_ragas_relevance_precision_and_recall_fill_rageval_columns(tmp_path) -> None:
    with FILES["ragas"].open(newline="", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    for n, row in enumerate(table):
        row.update({col: str(score(n)) for col, (_, score) in RAGAS_SCORES.items()})
    path = tmp_path / "scores.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.DictWriter(fh, fieldnames=list(table[0]))
        out.writeheader()
        out.writerows(table)
    import_run("ragas", path, results_dir=tmp_path, run_id="r")
    by_question = {r["question"]: r for r in _rows(tmp_path / "r")}
    for n, src in enumerate(table):
        got = by_question[src["user_input"]]
        for col, (ours, score) in RAGAS_SCORES.items():
            if ours is not None:
                assert got[ours] == score(n), (col, n)
        assert got["llm_context_precision_without_reference"] == 0.25
        assert all(got[k] is None for k in VERDICT_LISTS)
        assert got["answer_relevancy_reason"] is None
    manifest = _manifest(tmp_path / "r")
    assert set(manifest["metrics"]) == {
        "id_based_context_recall",
        "id_based_context_precision",
        "non_llm_string_similarity",
        "exact_match",
        "llm_context_precision_without_reference",
    }
    assert manifest["config"]["pinned_columns"] == {
        "answer_relevancy": "answer_relevancy",
        "context_relevance": "nv_context_relevance",
        "context_precision": "llm_context_precision_with_reference",
        "context_recall": "context_recall",
    }


def test_deepeval_relevancy_recall_and_precision_fill_rageval_columns(tmp_path) -> None:
    data = json.loads(FILES["deepeval"].read_text())
    for case in data["testRunData"]["testCases"]:
        case["metricsData"] += [
            {"name": name, "score": score, "reason": f"{name} of {case['name']}", "error": None}
            for name, (_, score) in DEEPEVAL_SCORES.items()
        ]
    path = tmp_path / "latest_test_run.json"
    path.write_text(json.dumps(data))
    import_run("deepeval", path, results_dir=tmp_path, run_id="d")
    got = {r["question_id"]: r for r in _rows(tmp_path / "d")}
    assert set(got) == set(CASES)
    for qid, row in got.items():
        for ours, score in DEEPEVAL_SCORES.values():
            assert row[ours] == score, (qid, ours)
        assert row["answer_relevancy_reason"] == f"Answer Relevancy of {qid}"
        assert all(row[k] is None for k in VERDICT_LISTS)
        assert row["reference_overlap"] is not None  # an unmapped metric is still declared
    assert set(_manifest(tmp_path / "d")["metrics"]) == {"reference_overlap"}


def test_a_reference_free_dataset_question_is_not_one_to_decline(tmp_path) -> None:
    """q001 loses its gold and reference, q002 its gold: imported against that dataset,
    q001 is reference-free (NULL), q002 answerable without retrieval gold."""
    example = example_dataset_path()
    data = yaml.safe_load(example.read_text())
    for key in ("corpus", "documents"):
        data[key] = str(example.parent / data[key])
    questions = {q["id"]: q for q in data["questions"]}
    for qid, drop in (("q001", ("reference_answer",)), ("q002", ())):
        for key in ("gold_chunk_ids", "gold_spans", *drop):
            questions[qid].pop(key)
    dataset = tmp_path / "dataset.yaml"
    dataset.write_text(yaml.safe_dump(data, allow_unicode=True))
    import_run("deepeval", FILES["deepeval"], results_dir=tmp_path, run_id="d", dataset=dataset)
    got = {r["question_id"]: r for r in _rows(tmp_path / "d")}
    assert got["q001"]["answerable"] is None and got["q001"]["reference_answer"] is None
    assert got["q002"]["answerable"] is True and got["q002"]["recall_at_5"] is None
    assert got["q002"]["failure_type"] != "retrieval_miss"
    summary = summarize_run(inspect_run(str(tmp_path), "d"))
    declined = sum(not questions[q].get("gold_chunk_ids", True) for q in CASES)
    assert summary["n_reference_free"] == 1
    assert summary["n_unanswerable"] == declined
