"""The bundled questions-only example (rageval_core/example/questions.yaml) end to end:
`rageval run` of its config with the example pipeline and the offline judge, then every
page on that run, showing the figures a dataset without gold can have."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rageval_core.cli import main
from rageval_core.dataset import load_dataset
from tests.dashboard.apptest import all_text, no_exception, open_page
from tests.dashboard.apptest import tiles as tile_values

EXAMPLE = Path(__file__).resolve().parents[2] / "rageval_core" / "example"
CONFIG = EXAMPLE / "configs" / "questions-only.yaml"
PAGES = ("runs", "diagnose", "tails", "retrieval", "cost", "compare", "judge", "review")
THREE = ("faithfulness", "context relevance", "answer relevancy")


@pytest.fixture(scope="module")
def questions_run(tmp_path_factory) -> tuple[Path, str, dict[str, dict]]:
    """(results folder, run id, rows by question id) of one `rageval run` of the config."""
    results = tmp_path_factory.mktemp("questions-only") / "results"
    assert main(["run", str(CONFIG), "--results", str(results)]) == 0
    (folder,) = [p for p in results.iterdir() if not p.name.startswith(".")]
    rows = pq.read_table(folder / "questions.parquet").to_pylist()
    return results, folder.name, {r["question_id"]: r for r in rows}


def test_the_dataset_has_no_gold_and_mostly_no_reference() -> None:
    ds = load_dataset(EXAMPLE / "questions.yaml")
    kinds = [q.answerability for q in ds.questions]
    assert 20 <= len(kinds) <= 30 and not any(q.has_retrieval_gold for q in ds.questions)
    assert kinds.count("reference_free") > len(kinds) / 2
    assert 3 <= kinds.count("answerable") and "unanswerable" not in kinds


def test_the_run_scores_what_a_dataset_without_gold_can_have(questions_run) -> None:
    _, _, rows = questions_run
    free = [r for r in rows.values() if r["reference_answer"] is None]
    ref = [r for r in rows.values() if r["reference_answer"] is not None]
    assert all(r["answerable"] is None for r in free) and all(r["answerable"] for r in ref)
    assert all(r["recall_at_5"] is None and r["mrr"] is None for r in rows.values())
    assert all(r["context_relevance"] is not None for r in rows.values() if r["retrieved_ids"])
    answered = [r for r in rows.values() if not r["refused"]]
    assert answered and all(r["answer_relevancy"] is not None for r in answered)
    assert all(r["context_recall"] is None and r["answer_correctness"] is None for r in free)
    assert all(r["context_recall"] is not None for r in ref)
    assert not [r for r in free if r["failure_type"] in ("missed_refusal", "false_refusal")]


def test_every_page_opens_on_the_run(app, questions_run) -> None:
    results, run_id, _ = questions_run
    for page in PAGES:
        no_exception(open_page(app(results, run=run_id, runs=[run_id]), page))
    runs = open_page(app(results, run=run_id), "runs")
    shown = list(tile_values(runs))
    assert {*THREE, "context recall"} <= set(shown) and not {"recall@5", "MRR"} & set(shown)
    notes = [i.value for i in runs.info if i.value.startswith("Not shown")]
    assert len(notes) == 1 and "no retrieval gold" in notes[0]  # said once


def test_a_reference_free_question_shows_its_three_figures(app, questions_run) -> None:
    results, run_id, rows = questions_run
    qid = next(q for q, r in rows.items() if r["answerable"] is None and not r["refused"])
    at = no_exception(open_page(app(results, run=run_id, question=qid), "question"))
    tiles = [m.label for m in at.metric]
    for figure in THREE:
        assert any(figure in t for t in tiles), (figure, tiles)
    assert not any(t.startswith(("recall", "MRR", "answer correctness")) for t in tiles)
    assert not any(s.value.startswith("Context recall") for s in at.subheader)
    assert "Answer relevancy" in all_text(at)


def test_a_question_with_a_reference_shows_context_recall(app, questions_run) -> None:
    results, run_id, rows = questions_run
    qid = next(q for q, r in rows.items() if r["answerable"] and not r["refused"])
    at = no_exception(open_page(app(results, run=run_id, question=qid), "question"))
    assert any(s.value.startswith("Context recall") for s in at.subheader)
    tiles = [m.label for m in at.metric]
    for figure in THREE:
        assert any(figure in t for t in tiles), (figure, tiles)
