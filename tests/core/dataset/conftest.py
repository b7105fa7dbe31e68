"""Fixtures: a small valid golden dataset written to real files in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CHUNKS = [
    {"id": "guide#0", "doc_id": "guide", "text": "Hybrid search mixes BM25 and vectors."},
    {"id": "guide#1", "doc_id": "guide", "text": "Use it for product codes.", "version": "2"},
    {"id": "faq#0", "doc_id": "faq", "text": "Refunds take five days."},
]

VALID_YAML = """\
# a comment the hash must ignore
name: handbook-qa
version: 4
corpus: corpus.jsonl
questions:
  - id: q001
    question: "When should I use hybrid search?"
    reference_answer: "When queries contain exact terms such as product codes."
    gold_chunk_ids: [guide#0, guide#1]
    tags: [multi-hop, user-vocabulary]
  - id: q002
    question: "What is the CEO's shoe size?"
    gold_chunk_ids: []
    tags: [unanswerable]
  - id: 003
    question: How long do refunds take?
    reference_answer: yes
    gold_chunk_ids:
      - faq#0
"""


@pytest.fixture
def chunks() -> list[dict]:
    return [dict(c) for c in CHUNKS]


@pytest.fixture
def valid_dataset(tmp_path: Path) -> Path:
    """dataset.yaml (3 questions, 1 unanswerable) beside corpus.jsonl (3 chunks)."""
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CHUNKS))
    path = tmp_path / "dataset.yaml"
    path.write_text(VALID_YAML, encoding="utf-8")
    return path
