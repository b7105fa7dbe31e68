"""The offline judge: hand-checked verdicts, refusals, claim splitting, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.errors import ConfigError
from rageval_core.judges import make_judge
from rageval_core.judges.offline import OfflineJudge, extract_claims
from rageval_core.judges.text import split_clauses, split_sentences
from rageval_core.metrics.generation import answer_correctness
from rageval_core.metrics.words import stem
from rageval_core.models import VERDICTS, JudgeInput, RetrievedChunk

MUSEUM = (
    RetrievedChunk(
        "museum#1", "The city museum opened in 1998 in Lyon. It was designed by a local firm."
    ),
    RetrievedChunk("museum#2", "The building has 3 floors. Entry costs 12 euros for adults."),
)


def judged(answer, retrieved=MUSEUM, reference=None, **config):
    judge = make_judge({"kind": "offline", **config})
    return judge.judge(JudgeInput("q", answer, retrieved, reference))


def test_supported_claim_carries_evidence_and_reason():
    (claim,) = judged("The museum opened in 1998 in Lyon.").claims
    assert claim.verdict == "supported"
    assert claim.evidence_chunk_id == "museum#1"
    assert claim.evidence == "The city museum opened in 1998 in Lyon."
    assert claim.reason == "100% of content words found in museum#1"


def test_missing_number_makes_a_claim_unsupported_despite_overlap():
    (claim,) = judged("The museum was designed by a local firm in 2003.").claims
    assert claim.verdict == "unsupported"
    assert "2003" in claim.reason
    assert claim.evidence_chunk_id is None


def test_missing_name_makes_a_claim_unsupported_despite_overlap():
    (claim,) = judged("The city museum was designed by Renzo Piano.").claims
    assert claim.verdict == "unsupported"
    assert "renzo" in claim.reason and "piano" in claim.reason


def test_low_overlap_is_unsupported_and_names_the_missing_words():
    (claim,) = judged("Visitors enjoy a rooftop restaurant with panoramic views.").claims
    assert claim.verdict == "unsupported"
    assert "restaurant" in claim.reason and "panoramic" in claim.reason


def test_a_sentence_missing_a_number_without_stating_another_is_not_a_contradiction():
    (claim,) = judged("The museum opened in 1998 in Lyon, it has 2 floors.").claims
    assert claim.verdict == "unsupported"  # 1998 is there, 2 is simply missing


def test_codes_with_digits_are_names_not_numbers():
    chunk = (RetrievedChunk("c", "Pharma storage is sold as NCC-PH1 at 14.50 euros."),)
    (claim,) = judged("Pharma storage is sold as NCC-PH2 at 14.50 euros.", chunk).claims
    assert claim.verdict == "unsupported" and "ph2" in claim.reason


def test_a_different_number_in_the_same_context_is_contradicted():
    (claim,) = judged("The building has 4 floors.").claims
    assert claim.verdict == "contradicted"
    assert claim.evidence == "The building has 3 floors."
    assert claim.reason == "museum#2 says 3 where the answer says 4"


def test_multi_sentence_answer_is_split_into_sentences_and_clauses():
    answer = (
        "The museum opened in 1998 in Lyon; it was designed by a local firm. "
        "The building has 3 floors, but entry costs 20 euros."
    )
    result = judged(answer)
    assert [c.text for c in result.claims] == [
        "The museum opened in 1998 in Lyon",
        "it was designed by a local firm.",
        "The building has 3 floors",
        "entry costs 20 euros.",
    ]
    assert [c.verdict for c in result.claims] == [
        "supported",
        "supported",
        "supported",
        "contradicted",
    ]
    assert result.faithfulness == 0.75


def test_plural_and_case_do_not_matter():
    chunk = (RetrievedChunk("c", "Each query retrieves five chunks from the index."),)
    (claim,) = judged("Queries retrieve five chunk from the Index.", chunk).claims
    assert claim.verdict == "supported"


@pytest.mark.parametrize(
    "answer",
    [
        "I don't know.",
        "I do not know based on the documents.",
        "I cannot find that in the context. The CEO is tall.",
        "The answer is not in the provided context.",
        "There is no information about the CEO's shoe size.",
        "I'm unable to answer this question from the retrieved documents.",
        "The provided documents do not contain this information.",
        "",
    ],
)
def test_refusals_have_no_claims_and_null_faithfulness(answer):
    result = judged(answer, reference="1998")
    assert result.refused is True
    assert result.claims == ()
    assert result.faithfulness is None


def test_a_later_hedge_is_not_a_refusal_and_not_a_claim():
    result = judged("The museum opened in 1998. I could not find who runs it today.")
    assert result.refused is False
    assert [c.text for c in result.claims] == ["The museum opened in 1998."]


def test_answer_correctness_uses_the_reference():
    assert judged("It opened in 1998.", reference="1998").answer_correctness == 1.0
    assert judged("It opened in 1998.", reference=None).answer_correctness is None


def test_no_retrieved_chunks_means_unsupported_with_a_reason():
    (claim,) = judged("The museum opened in 1998.", retrieved=()).claims
    assert claim.verdict == "unsupported" and claim.reason == "no chunks were retrieved"


def test_threshold_is_configurable():
    answer = "The museum opened in 1998 with a rooftop garden."  # 3 of 5 content words
    assert judged(answer).claims[0].verdict == "supported"
    assert judged(answer, threshold=0.7).claims[0].verdict == "unsupported"


def test_deterministic_across_calls_and_instances():
    answer = "The museum opened in 1998; it has 4 floors, and entry costs 12 euros."
    runs = [judged(answer) for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]


def test_text_helpers_keep_decimals_abbreviations_and_and_lists():
    assert split_sentences("Rates rose 3.5 percent, e.g. for loans. Then they fell.") == [
        "Rates rose 3.5 percent, e.g. for loans.",
        "Then they fell.",
    ]
    assert split_clauses("It uses salt and pepper") == ["It uses salt and pepper"]
    assert [stem(w) for w in ("queries", "chunks", "boxes", "class", "bus")] == [
        "query",
        "chunk",
        "box",
        "class",
        "bus",
    ]


def test_describe_and_config_errors():
    assert make_judge(None).describe().kind == "offline"
    assert make_judge({}).describe().version == OfflineJudge().describe().version
    with pytest.raises(ConfigError) as err:
        make_judge({"kind": "offline", "threshold": 2, "colour": "blue"})
    assert "judge.threshold must be <= 1" in str(err.value)
    assert "judge.colour is not a setting" in str(err.value)
    with pytest.raises(ConfigError, match="unknown judge kind 'gpt'"):
        make_judge({"kind": "gpt"})


def test_sentence_starting_capital_is_not_a_required_name():
    claims, refused = extract_claims("Hybrid search helps. It beats BM25 on Tuesdays.")
    assert not refused
    first, second = (t for _, t in claims)
    assert "hybrid" not in first.names
    assert second.names == {"tuesday", "bm25"}  # an identifier, not a quantity
    assert second.numbers == frozenset()


_words = st.sampled_from(
    "the museum opened in 1998 Lyon I don't know 3 floors cost 12 euros ; , and but . ! ? "
    "not in the provided context e.g. 3.5 Paris chunks query".split()
)
_text = st.one_of(st.text(max_size=200), st.lists(_words, max_size=40).map(" ".join))


@settings(max_examples=200, deadline=None)
@given(answer=_text, chunks=st.lists(_text, max_size=4), reference=st.none() | _text)
def test_never_crashes_and_stays_in_range(answer, chunks, reference):
    retrieved = tuple(RetrievedChunk(f"c{i}", t) for i, t in enumerate(chunks))
    result = OfflineJudge().judge(JudgeInput("q", answer, retrieved, reference))
    ids = {c.id for c in retrieved}
    assert all(c.verdict in VERDICTS for c in result.claims)
    assert all(c.evidence_chunk_id in ids for c in result.claims if c.verdict != "unsupported")
    assert result.faithfulness is None or 0 <= result.faithfulness <= 1
    assert result.faithfulness is not None or not result.claims
    assert not (result.refused and result.claims)
    assert result.error is None and result.cost_usd == 0


# ------------------------------------------------------------ offline-2 fixes (issue 21)


def test_typographic_quotes_and_dashes_are_the_plain_words():
    assert (
        answer_correctness("Python uses the “termination” model…", "the termination model") == 1.0
    )
    chunk = (RetrievedChunk("c", "Python’s handlers follow the termination model (3–5 cases)."),)
    (claim,) = judged("Python's handlers follow the “termination” model (3-5 cases).", chunk).claims
    assert claim.verdict == "supported"


@pytest.mark.parametrize(
    ("answer", "note", "rest"),
    [
        (
            "New in version 3.3.  os.scandir() is faster.",
            "New in version 3.3.",
            "os.scandir() is faster.",
        ),
        (
            "Changed in version 3.8: The default is now spawn.",
            "Changed in version 3.8:",
            "The default is now spawn.",
        ),
        (
            "Deprecated since version 3.10, use run() instead.",
            "Deprecated since version 3.10",
            "use run() instead.",
        ),
    ],
)
def test_a_release_note_is_its_own_claim(answer, note, rest):
    claims, _ = extract_claims(answer)
    assert [c for c, _ in claims] == [note, rest]


def test_a_release_note_does_not_sink_the_sentence_it_precedes():
    chunk = (RetrievedChunk("c", "The scandir function is faster than listdir."),)
    result = judged("New in version 3.5. scandir is faster than listdir.", chunk)
    assert [c.verdict for c in result.claims] == ["unsupported", "supported"]


def test_a_complete_answer_is_not_punished_for_being_longer_than_the_reference():
    reference = "3 days; the Cold Chain Basics module"
    answer = (
        "Access to ColdView is granted only after the new starter has passed the Cold Chain "
        "Basics module. Warehouse staff also complete forklift training, which takes 3 days."
    )
    assert answer_correctness(answer, reference) == 1.0
    wrong = (
        "Shift swaps between drivers must be approved by the transport planner at least "
        "48 hours in advance."
    )
    assert answer_correctness(wrong, "at least 24 hours in advance") < 0.5  # number missing
    unrelated = " ".join(["forklift", "rota", "invoice", "pallet", "seal"] * 20)
    assert answer_correctness(unrelated, reference) == 0.0
