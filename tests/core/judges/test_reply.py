"""Schema checks on LLM replies and the conservative merge of two readings."""

from __future__ import annotations

import re

import pytest

from rageval_core.judges.reply import Reply, ReplyError, decode, parse_reply, stricter
from rageval_core.models import Claim

IDS = {"a#1", "b#2"}


def claim(text, verdict, reason=""):
    return Claim(text, verdict, reason=reason)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ([], "must be a JSON object"),
        ({"claims": {}, "refused": False}, "'claims' must be a list"),
        ({"claims": [], "refused": False, "answer_correctness": 1.5}, "between 0 and 1"),
        ({"claims": [], "refused": False, "answer_correctness": True}, "number or null"),
        ({"claims": ["x"], "refused": False}, "claims[0] must be an object"),
        ({"claims": [{"text": "", "verdict": "supported"}], "refused": False}, "non-empty"),
        ({"claims": [{"text": "t", "verdict": None}], "refused": False}, "is not one of"),
        (
            {"claims": [{"text": "t", "verdict": "supported", "reason": 3}], "refused": False},
            "reason must be a string",
        ),
        (
            {"claims": [{"text": "t", "verdict": "supported", "evidence": 3}], "refused": False},
            "evidence must be a string or null",
        ),
    ],
)
def test_schema_violations_say_where(raw, problem):
    with pytest.raises(ReplyError, match=re.escape(problem)):
        parse_reply(raw, IDS)


def test_bad_json_is_a_reply_error():
    with pytest.raises(ReplyError, match="not valid JSON"):
        decode("{'single': 'quotes'}")


def test_valid_reply_and_refusal_drops_claims():
    raw = {
        "claims": [{"text": " x ", "verdict": "supported", "evidence_chunk_id": "a#1"}],
        "refused": False,
        "answer_correctness": 1,
    }
    reply = parse_reply(raw, IDS)
    assert reply.claims == (Claim("x", "supported", "a#1", None, ""),)
    assert reply.answer_correctness == 1.0
    assert parse_reply({**raw, "refused": True}, IDS).claims == ()


def test_stricter_matches_by_text_then_position():
    first = Reply(
        (claim("A is 1.", "supported"), claim("B is 2", "supported"), claim("C", "unsupported")),
        False,
        0.9,
    )
    second = Reply(
        (
            claim("b is 2", "contradicted", "says 3"),
            claim("other", "unsupported", "pos"),
            claim("C", "supported"),
            claim("extra", "unsupported"),
        ),
        False,
        None,
    )
    merged = stricter(first, second)
    # "A is 1." has no text partner, so it pairs with position 0 ("b is 2", contradicted).
    assert [(c.text, c.verdict) for c in merged.claims] == [
        ("A is 1.", "contradicted"),
        ("B is 2", "contradicted"),
        ("C", "unsupported"),
    ]
    assert merged.claims[1].reason == "says 3"
    assert merged.answer_correctness == 0.9


def test_stricter_judges_claims_when_only_one_reading_refuses():
    answered = Reply((claim("A", "supported"),), False, 0.2)
    refusal = Reply((), True, 0.0)
    assert stricter(refusal, answered) == Reply(answered.claims, False, 0.0)
    assert stricter(answered, refusal).claims == answered.claims
    assert stricter(refusal, refusal).refused is True
