"""Schema checks on LLM replies and the conservative merge of two readings."""

from __future__ import annotations

import re

import pytest

from rageval_core.judges.reply import Asked, Reply, ReplyError, decode, parse_reply, stricter
from rageval_core.models import Claim

IDS = ("a#1", "b#2")
# The claims tests ask for the two oldest parts only.
CLAIMS = Asked(IDS, frozenset({"faithfulness", "answer_correctness"}))
ALL = Asked(IDS)


def claim(text, verdict, reason=""):
    return Claim(text, verdict, reason=reason)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ([], "must be a JSON object"),
        ({"claims": {}, "refused": False, "answer_correctness": 1}, "'claims' must be a list"),
        ({"claims": [], "refused": False, "answer_correctness": 1.5}, "between 0 and 1"),
        ({"claims": [], "refused": False, "answer_correctness": True}, "must be a number"),
        (
            {"claims": ["x"], "refused": False, "answer_correctness": 1},
            "claims[0] must be an object",
        ),
        (
            {
                "claims": [{"text": "", "verdict": "supported"}],
                "refused": False,
                "answer_correctness": 1,
            },
            "non-empty",
        ),
        (
            {"claims": [{"text": "t", "verdict": None}], "refused": False, "answer_correctness": 1},
            "is not one of",
        ),
        (
            {
                "claims": [{"text": "t", "verdict": "supported", "reason": 3}],
                "refused": False,
                "answer_correctness": 1,
            },
            "reason must be a string",
        ),
        (
            {
                "claims": [{"text": "t", "verdict": "supported", "evidence": 3}],
                "refused": False,
                "answer_correctness": 1,
            },
            "evidence must be a string or null",
        ),
    ],
)
def test_schema_violations_say_where(raw, problem):
    with pytest.raises(ReplyError, match=re.escape(problem)):
        parse_reply(raw, CLAIMS)


def test_bad_json_is_a_reply_error():
    with pytest.raises(ReplyError, match="not valid JSON"):
        decode("{'single': 'quotes'}")


def test_valid_reply_and_refusal_drops_claims():
    raw = {
        "claims": [{"text": " x ", "verdict": "supported", "evidence_chunk_id": "a#1"}],
        "refused": False,
        "answer_correctness": 1,
    }
    reply = parse_reply(raw, CLAIMS)
    assert reply.claims == (Claim("x", "supported", "a#1", None, ""),)
    assert reply.answer_correctness == 1.0
    assert parse_reply({**raw, "refused": True}, CLAIMS).claims == ()


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


FULL = {
    "claims": [],
    "refused": False,
    "answer_correctness": 0.5,
    "chunks": [
        {"id": "b#2", "relevant": False, "reason": "off topic"},
        {"id": "a#1", "relevant": True, "reason": "names it"},
    ],
    "answer_relevancy": {"score": 0.8, "reason": "answers it"},
    "statements": [
        {"text": "A is 1.", "attributed": True, "evidence_chunk_id": "a#1", "evidence": "A=1"},
        {"text": "B is 2.", "attributed": False, "evidence_chunk_id": None, "evidence": None},
    ],
}


def test_every_new_part_is_read_with_ranks():
    reply = parse_reply(FULL, ALL)
    assert [(v.chunk_id, v.rank, v.relevant) for v in reply.chunk_verdicts] == [
        ("a#1", 1, True),
        ("b#2", 2, False),
    ]
    assert (reply.answer_relevancy, reply.answer_relevancy_reason) == (0.8, "answers it")
    assert [(s.text, s.attributed, s.evidence_chunk_id) for s in reply.statements] == [
        ("A is 1.", True, "a#1"),
        ("B is 2.", False, None),
    ]


def test_a_refusal_has_no_relevancy_and_no_reference_no_statements():
    refusal = parse_reply({**FULL, "refused": True, "answer_relevancy": None}, ALL)
    assert refusal.answer_relevancy is None and refusal.chunk_verdicts is not None
    free = parse_reply(
        {**FULL, "statements": None, "answer_correctness": None}, Asked(IDS, reference=False)
    )
    assert free.statements is None and free.answer_correctness is None


def _chunks(*items):
    return {**FULL, "chunks": list(items)}


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({k: v for k, v in FULL.items() if k != "chunks"}, "'chunks' is missing"),
        (
            {k: v for k, v in FULL.items() if k != "answer_relevancy"},
            "'answer_relevancy' is missing",
        ),
        ({k: v for k, v in FULL.items() if k != "statements"}, "'statements' is missing"),
        ({**FULL, "chunks": {}}, "'chunks' must be a list"),
        (_chunks({"id": "a#1", "relevant": True}), "no verdict for retrieved chunk(s) 'b#2'"),
        (
            _chunks({"id": "a#1", "relevant": True}, {"id": "a#1", "relevant": True}),
            "'a#1' is judged more than once",
        ),
        (_chunks({"id": "z#9", "relevant": True}), "'z#9' is not a retrieved chunk"),
        (_chunks({"id": "a#1", "relevant": "yes"}), "chunks[0].relevant must be true or false"),
        (_chunks({"id": 1, "relevant": True}), "chunks[0].id must be a string"),
        ({**FULL, "answer_relevancy": {"score": 1.5}}, "answer_relevancy.score must lie between"),
        (
            {**FULL, "answer_relevancy": {"score": "high"}},
            "answer_relevancy.score must be a number",
        ),
        ({**FULL, "answer_relevancy": None}, "must be an object: the answer is not a refusal"),
        ({**FULL, "statements": []}, "'statements' is empty"),
        (
            {**FULL, "statements": [{"text": "A", "attributed": 1}]},
            "attributed must be true or false",
        ),
        ({**FULL, "statements": [{"text": "A", "attributed": True}]}, "names no evidence_chunk_id"),
        (
            {**FULL, "statements": [{"text": "A", "attributed": True, "evidence_chunk_id": "q"}]},
            "statements[0].evidence_chunk_id 'q' is not a retrieved chunk",
        ),
    ],
)
def test_new_part_violations_say_where(raw, problem):
    with pytest.raises(ReplyError, match=re.escape(problem)):
        parse_reply(raw, ALL)


def test_only_selected_parts_are_required():
    reply = parse_reply(
        {"refused": False, "chunks": FULL["chunks"]}, Asked(IDS, frozenset({"context_relevance"}))
    )
    assert reply.claims == () and len(reply.chunk_verdicts) == 2
    assert reply.answer_relevancy is None and reply.statements is None


def test_stricter_new_parts_need_both_readings():
    first, second = (
        parse_reply(FULL, ALL),
        parse_reply(
            {
                **FULL,
                "chunks": [
                    {"id": "a#1", "relevant": False, "reason": "no"},
                    {"id": "b#2", "relevant": True},
                ],
                "answer_relevancy": {"score": 0.3, "reason": "vague"},
                "statements": [{"text": "a is 1", "attributed": False, "reason": "absent"}],
            },
            ALL,
        ),
    )
    merged = stricter(first, second)
    assert [v.relevant for v in merged.chunk_verdicts] == [False, False]
    assert merged.answer_relevancy == 0.3 and merged.answer_relevancy_reason == "vague"
    assert [s.attributed for s in merged.statements] == [False, False]
    assert merged.statements[0].reason == "absent"
