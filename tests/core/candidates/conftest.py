"""Real documents nobody on the project wrote, for the generator's tests: the SQuAD v2
sample's two Wikipedia articles (tests/fixtures/squad/README.md), each article's
paragraphs joined by a blank line, and its 626 real questions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rageval_core.models import Document

SQUAD = Path(__file__).parents[2] / "fixtures" / "squad" / "squad-v2-dev-small.json"


def _squad() -> dict:
    return json.loads(SQUAD.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def squad_documents() -> tuple[Document, ...]:
    return tuple(
        Document(
            id=article["title"].lower().replace("_", "-"),
            text="\n\n".join(p["context"] for p in article["paragraphs"]),
            title=article["title"].replace("_", " "),
        )
        for article in _squad()["data"]
    )


@pytest.fixture(scope="session")
def squad_questions() -> list[str]:
    return [
        qa["question"]
        for article in _squad()["data"]
        for p in article["paragraphs"]
        for qa in p["qas"]
    ]
