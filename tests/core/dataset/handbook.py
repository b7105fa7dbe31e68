"""A small hand-written dataset over two documents, the issue's edit of them, and a
dataset scored in `rageval run`: shared by the tests of `rageval dataset refresh`, of
the stale questions it queues and of `rageval dataset accept`."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from rageval_core.cli import main

GUIDE = (
    "Hybrid search mixes BM25 and vectors. Use it for product codes. "
    "Refunds take five days. The answer is 42. See the FAQ."
)
FAQ = "Shipping is free over 50 euros. Returns are accepted within 30 days."

DATASET = """\
# handbook gold, written by hand: keep this comment
name: handbook
version: 3
documents: documents.jsonl
questions:
  - id: q-quote
    question: "What does hybrid search mix?"
    reference_answer: "BM25 and vectors."
    gold_spans:
      - {doc_id: guide, text: "Hybrid search mixes BM25 and vectors."}  # a quote
  - id: q-deleted
    question: "How long do refunds take?"
    gold_spans:
      - {doc_id: guide, start: 64, end: 87}
  - id: q-moved
    question: 'What is the answer?'
    gold_spans:
      - {doc_id: guide, start: 88, end: 104, text: "The answer is 42"}
  - id: q-ambiguous
    question: "When is shipping free?"
    gold_spans:
      - doc_id: faq
        text: 'Shipping is free over 50 euros.'
  - id: q-returns
    question: "How long are returns accepted?"
    gold_spans:
      - {doc_id: faq, text: "accepted within 30 days"}
"""


def write_documents(path: Path, docs: dict[str, str]) -> Path:
    path.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in docs.items()))
    return path


def make_handbook(folder: Path) -> Path:
    """The dataset (version 3) and its documents written into `folder`; its file."""
    assert GUIDE[64:87] == "Refunds take five days." and GUIDE[88:104] == "The answer is 42"
    folder.mkdir()
    write_documents(folder / "documents.jsonl", {"guide": GUIDE, "faq": FAQ})
    (folder / "dataset.yaml").write_text(DATASET)
    return folder / "dataset.yaml"


def edited(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The issue's edit: a gold sentence deleted, text inserted before the others, one
    quote made ambiguous (a second copy of it)."""
    guide = "Read this first. " + GUIDE.replace("Refunds take five days. ", "")
    faq = FAQ + " Shipping is free over 50 euros."
    return write_documents(tmp_path / "new.jsonl", {"guide": guide, "faq": faq}), {
        "guide": guide,
        "faq": faq,
    }


def scored_rows(dataset: Path, tmp_path: Path) -> dict[str, dict]:
    """`rageval run` of the example pipeline over `dataset`'s documents (offline judge):
    its rows by question id."""
    config = tmp_path / "run.yaml"
    config.write_text(
        f"name: scored\ndataset: {dataset}\n"
        "pipeline: {factory: 'rageval_core.example.pipeline:build',\n"
        "           params: {source: documents, chunk_size: 40}}\njudge: {kind: offline}\n"
    )
    results = tmp_path / "results"
    assert main(["run", str(config), "--results", str(results), "--run-id", "r"]) == 0
    rows = pq.read_table(results / "r" / "questions.parquet").to_pylist()
    return {r["question_id"]: r for r in rows}
