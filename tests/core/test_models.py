"""Boundary values: a pipeline's return value is checked field by field, by name."""

from __future__ import annotations

import pytest

from rageval_core.errors import PipelineError
from rageval_core.models import Claim, Judgement, PipelineOutput, RetrievedChunk


def test_plain_dict_becomes_pipeline_output():
    out = PipelineOutput.from_value(
        {
            "answer": "It opened in 2009.",
            "retrieved": [{"id": "a#1", "text": "t", "score": 2}, {"id": "b#2"}],
            "retrieval_ms": 12,
            "input_tokens": 40,
        }
    )
    assert out.retrieved == (RetrievedChunk("a#1", "t", 2.0), RetrievedChunk("b#2", "", None))
    assert out.retrieval_ms == 12.0 and out.input_tokens == 40 and out.ttft_ms is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("just text", "returned str; expected PipelineOutput or dict"),
        ({"answer": None}, "'answer' must be a string"),
        ({"answer": "a", "retrieved": "c1"}, "'retrieved' must be a list of chunks, got str"),
        ({"answer": "a", "retrieved": {"id": "c1"}}, "'retrieved' must be a list of chunks"),
        ({"answer": "a", "retrieved": [{"text": "no id"}]}, r"retrieved\[0\] needs a string 'id'"),
        (
            {"answer": "a", "retrieved": [{"id": "c1"}, {"id": "c2", "score": "high"}]},
            r"retrieved\[1\]\.score must be a number",
        ),
        ({"answer": "a", "retrieved": [{"id": "c1", "score": True}]}, r"score must be a number"),
        ({"answer": "a", "generation_ms": "fast"}, "'generation_ms' must be a number"),
        ({"answer": "a", "retrieved": [{"id": "c", "doc_id": 3}]}, r"doc_id must be a string"),
        (
            {"answer": "a", "retrieved": [{"id": "c", "doc_id": "d", "start": 0}]},
            r"retrieved\[0\]: give both 'start' and 'end'",
        ),
        (
            {"answer": "a", "retrieved": [{"id": "c", "start": 0, "end": 4}]},
            "need a 'doc_id'",
        ),
        (
            {"answer": "a", "retrieved": [{"id": "c", "doc_id": "d", "start": 5, "end": 2}]},
            r"0 <= start <= end, got 5, 2",
        ),
        (
            {"answer": "a", "retrieved": [{"id": "c", "doc_id": "d", "start": 0.5, "end": 2}]},
            "must be integers",
        ),
    ],
)
def test_bad_pipeline_output_names_the_field(value, message):
    with pytest.raises(PipelineError, match=message):
        PipelineOutput.from_value(value)


def test_retrieved_chunk_may_carry_its_place_in_a_document():
    out = PipelineOutput.from_value(
        {"answer": "a", "retrieved": [{"id": "c", "doc_id": "d", "start": 3, "end": 9}]}
    )
    assert out.retrieved[0] == RetrievedChunk("c", "", None, doc_id="d", start=3, end=9)


def test_faithfulness_is_null_without_claims_or_on_judge_error():
    supported = Claim("a", "supported")
    assert Judgement((), refused=True, answer_correctness=None).faithfulness is None
    failed = Judgement((supported,), refused=False, answer_correctness=1.0, error="timeout")
    assert failed.faithfulness is None
    mixed = Judgement((supported, Claim("b", "unsupported")), False, 0.5)
    assert mixed.faithfulness == 0.5 and mixed.unsupported_claims == ("b",)
