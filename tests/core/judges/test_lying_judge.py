"""A lying LLM judge, against a real chat-completions server on 127.0.0.1 (issue 32 item 5):
evidence quotes no chunk holds and reference statements that do not stand for the
reference are refused (one repair request, then a judge error), so they cannot inflate
faithfulness or context recall."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.judges import make_judge
from rageval_core.judges.grounding import MIN_COVERAGE, quote_found, ungrounded_statements
from rageval_core.models import Statement

LONG_REFERENCE = "The museum opened in 1998 in Lyon and its building has three floors."


def _judge(srv, **kw):
    return make_judge(
        {"kind": "openai", "base_url": srv.base_url, "model": "m", "cache": False, **kw}
    )


def _claim(evidence, chunk_id="museum#1", text="The museum opened in 1998."):
    return {
        "text": text,
        "verdict": "supported",
        "evidence_chunk_id": chunk_id,
        "evidence": evidence,
        "reason": "r",
    }


def _faithfulness_reply(*claims):
    return {"claims": list(claims), "refused": False}


def _recall_reply(*texts, attributed=True):
    statements = [
        {
            "text": t,
            "attributed": attributed,
            "evidence_chunk_id": "museum#1" if attributed else None,
            "evidence": None,
            "reason": "r",
        }
        for t in texts
    ]
    return {"statements": statements, "refused": False}


def _ask(chat, sample_input, *replies, metrics=("faithfulness",)):
    with chat.ChatServer([chat.Step(content=r) for r in replies]) as srv:
        got = _judge(srv, metrics=list(metrics)).judge(sample_input)
    return got, srv


@pytest.mark.parametrize(
    ("claim", "problem"),
    [
        (_claim("The museum opened in 1998 in Paris."), "is not in chunk 'museum#1'"),
        # a true quote, of another chunk than the one named
        (_claim("The museum opened in 1998 in Lyon.", "museum#2"), "is not in chunk 'museum#2'"),
        (_claim("The museum was founded by the city.", None), "is not in any retrieved chunk"),
    ],
)
def test_a_fabricated_evidence_quote_is_repaired_once_then_a_judge_error(
    chat, sample_input, claim, problem
):
    got, srv = _ask(chat, sample_input, _faithfulness_reply(claim))
    assert srv.calls == 2  # the reply, then one repair request saying what was wrong
    assert problem in srv.requests[1].body["messages"][3]["content"]
    assert got.error and problem in got.error and "after one repair retry" in got.error
    assert got.claims == () and got.faithfulness is None


def test_a_repaired_quote_is_used(chat, sample_input):
    bad = _faithfulness_reply(_claim("The museum opened in 1998 in Paris."))
    good = _faithfulness_reply(_claim("The museum opened in 1998 in Lyon."))
    got, srv = _ask(chat, sample_input, bad, good)
    assert srv.calls == 2 and got.error is None and got.faithfulness == 1.0


def test_a_quote_with_other_spacing_typography_case_and_an_elision_is_found(chat, sample_input):
    quoted = _claim("“the  museum\nopened … 1998”", text="The museum opened in 1998.")
    got, srv = _ask(chat, sample_input, _faithfulness_reply(quoted))
    assert srv.calls == 1 and got.error is None and got.faithfulness == 1.0


@pytest.mark.parametrize(
    ("statements", "problem"),
    [
        (("It is.",), "states nothing of the reference answer"),
        (("Lyon.",), "hold only"),
        (("The museum opened in 1998.", "It is."), "states nothing of the reference answer"),
    ],
)
def test_statements_that_do_not_stand_for_the_reference_are_refused(
    chat, sample_input, statements, problem
):
    inp = replace(sample_input, reference_answer=LONG_REFERENCE)
    got, srv = _ask(chat, inp, _recall_reply(*statements), metrics=("context_recall",))
    assert srv.calls == 2 and problem in srv.requests[1].body["messages"][3]["content"]
    assert got.error and problem in got.error
    assert got.context_recall is None  # never 1.0 from a statement that says nothing


def test_statements_covering_the_reference_pass(chat, sample_input):
    inp = replace(sample_input, reference_answer=LONG_REFERENCE)
    reply = _recall_reply("The museum opened in 1998 in Lyon.", "The building has three floors.")
    reply["statements"][1].update(attributed=False, evidence_chunk_id=None)
    got, srv = _ask(chat, inp, reply, metrics=("context_recall",))
    assert srv.calls == 1 and got.error is None and got.context_recall == 0.5


# ------------------------------------------------------------------ the rules as properties

_WORDS = st.lists(
    st.text(alphabet="abcdefghij0123456789", min_size=1, max_size=6), min_size=1, max_size=12
)


@settings(max_examples=200, deadline=None)
@given(words=_WORDS, data=st.data())
def test_any_run_of_a_chunks_words_respaced_and_recased_is_found(words, data):
    text = " ".join(words) + "."
    i = data.draw(st.integers(0, len(words) - 1))
    j = data.draw(st.integers(i + 1, len(words)))
    gaps = data.draw(st.lists(st.sampled_from([" ", "  ", "\n", "\u00a0", "\t "]), min_size=j - i))
    quote = "".join(w + g for w, g in zip(words[i:j], gaps, strict=False)).upper()
    assert quote_found(f"“{quote.strip()}”", text)


@settings(max_examples=200, deadline=None)
@given(words=_WORDS, extra=st.text(alphabet="klmnopq", min_size=1, max_size=5))
def test_a_quote_with_a_word_the_chunk_lacks_is_not_found(words, extra):
    text = " ".join(words)
    assert not quote_found(f"{words[0]} {extra}", text)


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(
        st.sampled_from("alpha beta gamma delta epsilon zeta eta theta".split()),
        min_size=3,
        max_size=8,
        unique=True,
    ),
    kept=st.integers(0, 8),
)
def test_statements_must_hold_the_documented_share_of_the_reference(words, kept):
    reference = " ".join(words)
    held = words[: min(kept, len(words))] or ["It is"]
    problem = ungrounded_statements([Statement(" ".join(held), True)], reference)
    share = len(held) / len(words) if kept else 0.0
    assert (problem is None) == (share >= MIN_COVERAGE)
