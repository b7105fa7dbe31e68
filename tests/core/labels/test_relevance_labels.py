"""The chunk relevance and answer relevancy label kinds (issue 21): one kind per line,
precise errors for wrong values, old lines unchanged."""

from __future__ import annotations

import pytest

from rageval_core.errors import ConfigError
from rageval_core.labels.model import HumanLabel
from tests.core.labels.helpers import SHA

BASE = {
    "dataset": "qa",
    "dataset_sha256": SHA,
    "question_id": "q1",
    "reviewer": "eve",
    "created_at": "2026-02-01T00:00:00Z",
}


def test_chunk_and_answer_labels_round_trip_with_their_own_keys() -> None:
    chunk = HumanLabel.from_dict({**BASE, "chunk_id": "doc#1", "relevant": False})
    answer = HumanLabel.from_dict({**BASE, "answer": "2009.", "answer_relevant": True})
    assert (chunk.kind, chunk.value) == ("chunk", "irrelevant")
    assert (answer.kind, answer.value) == ("answer", "relevant")
    assert HumanLabel.from_dict(chunk.to_dict()) == chunk
    assert (
        answer.key()
        == HumanLabel.from_dict({**BASE, "answer": "2009", "answer_relevant": False}).key()
    )
    assert chunk.key() != answer.key()


def test_an_old_claim_line_is_written_as_before() -> None:
    lab = HumanLabel.from_dict({**BASE, "claim": "A claim.", "verdict": "supported"})
    assert "chunk_id" not in lab.to_dict() and lab.kind == "claim"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"chunk_id": "d#1", "relevant": "yes"}, "relevant must be true, false or null"),
        ({"chunk_id": "d#1"}, "needs relevant true or false"),
        ({"chunk_id": 3, "relevant": True}, "chunk_id must be text"),
        ({"answer": "x", "answer_relevant": 1}, "answer_relevant must be true, false or null"),
        ({"chunk_id": "d#1", "relevant": True, "answer": "x", "answer_relevant": True}, "one kind"),
        ({"claim": "c", "verdict": "supported", "chunk_id": "d#1", "relevant": True}, "one kind"),
        ({"relevant": True, "question_label": "pass"}, "relevant belongs to a chunk label"),
        ({"chunk_id": "d#1", "relevant": True, "verdict": "supported"}, "not a verdict"),
        ({"chunk_id": "\udfff", "relevant": True}, "lone surrogate"),
        ({"answer": "  ", "answer_relevant": True}, "answer must be non-empty text"),
    ],
)
def test_hostile_relevance_fields_name_the_problem(extra: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        HumanLabel.from_dict({**BASE, **extra})
