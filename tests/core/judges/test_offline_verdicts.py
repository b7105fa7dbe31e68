"""The offline judge's reference-free verdicts: chunk relevance, answer relevancy,
reference statements, and the `metrics:` choice."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.errors import ConfigError
from rageval_core.judges import make_judge
from rageval_core.judges.offline import DIRECT_SCORE, KEY_FLOOR, OfflineJudge
from rageval_core.models import JUDGE_METRICS, JudgeInput, RetrievedChunk

QUESTION = "When did the Northwind office open in Berlin?"
CHUNKS = (
    RetrievedChunk("nw#1", "The Northwind office in Berlin opened in 1998. It has 40 staff."),
    RetrievedChunk("nw#2", "The Northwind office in Oslo is small."),
    RetrievedChunk("sw#1", "Southwind sells boats."),
)


def judged(answer, question=QUESTION, retrieved=CHUNKS, reference=None, **config):
    judge = make_judge({"kind": "offline", **config})
    return judge.judge(JudgeInput(question, answer, retrieved, reference))


def test_chunk_relevance_needs_the_key_terms_other_chunks_hold():
    verdicts = judged("It opened in 1998.").chunk_verdicts
    assert [(v.chunk_id, v.rank, v.relevant) for v in verdicts] == [
        ("nw#1", 1, True),
        ("nw#2", 2, False),
        ("sw#1", 3, False),
    ]
    assert verdicts[0].reason == (
        "shares 3 of 4 question words: berlin, northwind, office; missing: open"
    )
    assert verdicts[1].reason.endswith("lacks key terms other chunks hold: berlin")


def test_a_key_term_no_chunk_holds_does_not_decide():
    question = "When did the Northwind office open in Paris?"
    verdicts = judged("1998.", question=question).chunk_verdicts
    assert [v.relevant for v in verdicts] == [True, True, False]


def test_context_precision_rewards_relevant_chunks_ranked_first():
    late = judged("x", retrieved=CHUNKS[::-1])
    assert judged("x").context_precision == 1.0
    assert late.context_precision == pytest.approx(1 / 3)
    assert late.context_relevance == pytest.approx(1 / 3)


def test_no_chunks_or_no_question_words_give_no_verdicts():
    assert judged("x", retrieved=()).chunk_verdicts is None
    assert judged("x", question="What is it?").chunk_verdicts is None


def test_answer_relevancy_is_the_share_of_question_words_mentioned():
    j = judged("The Northwind office in Berlin will open next year.")
    assert j.answer_relevancy == 1.0
    assert j.answer_relevancy_reason.startswith("mentions 4 of 4 question words")
    assert judged("Bananas are yellow.").answer_relevancy == 0.0


def test_naming_every_key_term_lifts_relevancy_to_the_floor():
    # not a wh-question, so no reply is "direct": the key terms alone lift the score
    question = "Tell me the year the Northwind office opened its doors in Berlin."
    j = judged("Northwind chose Berlin in 1998.", question=question)
    assert j.answer_relevancy == KEY_FLOOR
    assert "names every key term (berlin, northwind)" in j.answer_relevancy_reason
    assert judged("Northwind did it in 1998.", question=question).answer_relevancy == 1 / 7


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Which cleaning agent is approved for food-contact surfaces?", "ColdSan 40."),
        ("Within how many days can a customer dispute an invoice line?", "Within 21 days."),
        ("Which days is the whole company closed?", "1 January, 25 December and 26 December."),
        ("Who is Northwind's Chief Technology Officer?", "Felipe Arriaga."),
    ],
)
def test_a_short_direct_reply_addresses_its_question(question, answer):
    j = judged(answer, question=question)
    assert j.answer_relevancy == DIRECT_SCORE
    assert "short reply" in j.answer_relevancy_reason


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        # a long sentence about something else keeps its word-overlap score
        (
            "Which days is the whole company closed?",
            "It reviews all severity 1 and severity 2 incidents of the previous month and "
            "tracks corrective actions until they are closed.",
        ),
        # a quantity question answered without one
        ("How many pallet positions does RTM-1 have?", "Bananas are yellow."),
    ],
)
def test_a_long_or_wrong_kind_reply_is_not_a_direct_reply(question, answer):
    assert judged(answer, question=question).answer_relevancy < DIRECT_SCORE


def test_a_refusal_has_no_answer_relevancy():
    j = judged("I don't know, the context does not say.")
    assert j.refused and j.answer_relevancy is None and j.answer_relevancy_reason is None


def test_reference_statements_are_attributed_with_evidence():
    reference = "The Berlin office opened in 1998; it closed in 2005."
    first, second = judged("x", reference=reference).statements
    assert (first.text, first.attributed, first.evidence_chunk_id) == (
        "The Berlin office opened in 1998",
        True,
        "nw#1",
    )
    assert first.evidence == "The Northwind office in Berlin opened in 1998."
    assert not second.attributed and "2005" in second.reason
    assert judged("x", reference=reference).context_recall == 0.5


def test_no_reference_means_no_statements():
    assert judged("x", reference=None).statements is None
    assert judged("x", reference="").statements is None


def test_only_asked_for_metrics_are_computed_and_described():
    config = {"kind": "offline", "metrics": ["context_recall", "faithfulness"]}
    judge = make_judge(config)
    assert judge.describe().metrics == ("faithfulness", "context_recall")
    j = judge.judge(JudgeInput(QUESTION, "It opened in 1998.", CHUNKS, "It opened in 1998."))
    assert j.claims and j.statements
    assert j.answer_correctness is None and j.chunk_verdicts is None
    assert j.answer_relevancy is None
    none = make_judge({"kind": "offline", "metrics": ["answer_relevancy"]}).judge(
        JudgeInput(QUESTION, "It opened in 1998.", CHUNKS, "It opened in 1998.")
    )
    assert none.claims == () and none.statements is None and none.answer_correctness is None
    assert none.answer_relevancy is not None


def test_all_metrics_by_default_and_unknown_metrics_refused():
    assert make_judge({"kind": "offline"}).describe().metrics == JUDGE_METRICS
    with pytest.raises(ConfigError):
        make_judge({"kind": "offline", "metrics": ["vibes"]})


WORDS = st.sampled_from(
    "the Northwind office Berlin opened 1998 boats staff in of was 40 Oslo small and".split()
)
TEXT = st.lists(WORDS, max_size=12).map(" ".join)
CHUNK_LISTS = st.lists(TEXT, max_size=5).map(
    lambda texts: tuple(RetrievedChunk(f"c{i}", t) for i, t in enumerate(texts))
)


@settings(max_examples=200, deadline=None)
@given(question=TEXT, answer=TEXT, retrieved=CHUNK_LISTS, reference=st.none() | TEXT)
def test_scores_lie_in_unit_range_and_are_deterministic(question, answer, retrieved, reference):
    inp = JudgeInput(question, answer, retrieved, reference)
    judge = OfflineJudge()
    j = judge.judge(inp)
    assert j == judge.judge(inp)
    for score in (j.answer_relevancy, j.context_relevance, j.context_precision, j.context_recall):
        assert score is None or 0.0 <= score <= 1.0
    if j.chunk_verdicts is not None:
        assert [v.rank for v in j.chunk_verdicts] == list(range(1, len(retrieved) + 1))
        if all(v.relevant for v in j.chunk_verdicts):
            assert j.context_precision == 1.0
    if j.refused:
        assert j.answer_relevancy is None
    if not reference:
        assert j.statements is None


@settings(max_examples=100, deadline=None)
@given(
    question=TEXT,
    answer=TEXT,
    retrieved=CHUNK_LISTS,
    reference=TEXT,
    metrics=st.sets(st.sampled_from(JUDGE_METRICS), min_size=1),
)
def test_metrics_left_out_stay_empty(question, answer, retrieved, reference, metrics):
    j = OfflineJudge(metrics=tuple(metrics)).judge(
        JudgeInput(question, answer, retrieved, reference)
    )
    full = OfflineJudge().judge(JudgeInput(question, answer, retrieved, reference))
    pairs = {
        "faithfulness": (j.claims, full.claims, ()),
        "answer_correctness": (j.answer_correctness, full.answer_correctness, None),
        "context_relevance": (j.chunk_verdicts, full.chunk_verdicts, None),
        "answer_relevancy": (j.answer_relevancy, full.answer_relevancy, None),
        "context_recall": (j.statements, full.statements, None),
    }
    for metric, (got, everything, empty) in pairs.items():
        assert got == (everything if metric in metrics else empty)
