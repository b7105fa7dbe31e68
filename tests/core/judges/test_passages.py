"""Evidence across chunk boundaries (issue 32, item 1): the same text cut into pieces is
judged as the text whole — offline and by an LLM judge told where each chunk lies."""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.judges import make_judge
from rageval_core.judges.offline import OfflineJudge
from rageval_core.judges.passages import overlap, passages
from rageval_core.judges.prompt import user_message
from rageval_core.models import JudgeInput, RetrievedChunk

DOC = (
    "If a conflict stops the rebase, git prints the paths that need attention. "
    "Edit each file until the markers are gone. "
    "Then stage the result with git add and run git rebase --continue. "
    "To give up, run git rebase --abort and the branch returns to where it was. "
    "The option --skip drops the commit that caused the conflict. "
    "Interactive mode opens an editor with one line for each of 12 commits."
)
QUESTION = "How do I continue a rebase after fixing a conflict?"
ANSWER = (
    "Edit each file until the markers are gone. "
    "Then stage the result with git add and run git rebase --continue. "
    "Interactive mode opens an editor with one line for each of 12 commits."
)
REFERENCE = "Stage the result with git add and run git rebase --continue."


def whole() -> tuple[RetrievedChunk, ...]:
    return (RetrievedChunk("w", DOC, None, "manual", 0, len(DOC)),)


def cut(cuts: list[int], placed: bool = True, lead: int = 0) -> tuple[RetrievedChunk, ...]:
    """DOC in pieces at `cuts`, each reaching `lead` characters back into the one before
    (an overlap), placed in the document or not; in an order that is not the document's."""
    bounds = [0, *cuts, len(DOC)]
    pieces = [
        RetrievedChunk(
            f"p{i}",
            DOC[max(0, a - lead) : b],
            None,
            *(("manual", max(0, a - lead), b) if placed else (None, None, None)),
        )
        for i, (a, b) in enumerate(itertools.pairwise(bounds))
    ]
    return tuple(pieces[1::2] + pieces[0::2])


def figures(retrieved, judge=None) -> tuple:
    j = (judge or OfflineJudge()).judge(JudgeInput(QUESTION, ANSWER, retrieved, REFERENCE))
    assert j.error is None, j.error
    return j.faithfulness, j.answer_correctness, j.context_recall


def test_a_quote_straddling_a_boundary_is_supported_and_names_both_chunks():
    at = DOC.index("and run")  # each side holds 4 of its 7 content words: 57%, below 60%
    (claim,) = (
        OfflineJudge()
        .judge(
            JudgeInput(
                QUESTION,
                "Then stage the result with git add and run git rebase --continue.",
                cut([at]),
                REFERENCE,
            )
        )
        .claims
    )
    assert claim.verdict == "supported", claim.reason
    assert claim.evidence == "Then stage the result with git add and run git rebase --continue."
    assert claim.evidence_chunk_id == "p0"
    assert claim.reason == "100% of content words found in p0 + p1"


def test_the_split_control_gives_the_figures_of_the_whole_window():
    cuts = [DOC.index("markers"), DOC.index("git add"), DOC.index("--abort")]
    assert figures(whole()) == (1.0, 1.0, 1.0)
    assert figures(cut(cuts)) == figures(whole())
    # without places, pieces that overlap by text (a splitter's chunk_overlap) join too
    assert figures(cut(cuts, placed=False, lead=20)) == figures(whole())


def test_unplaced_pieces_without_an_overlap_stay_apart():
    """Contiguous text cannot be told from unrelated chunks without places: documented."""
    pieces = cut([DOC.index("and run")], placed=False)
    assert len(passages(pieces)) == 2
    claim = "Then stage the result with git add and run git rebase --continue."
    j = OfflineJudge().judge(JudgeInput(QUESTION, claim, pieces, None))
    assert j.claims[0].verdict == "unsupported"


def test_placed_pieces_a_dropped_space_apart_are_adjacent():
    a, b = DOC.index("Then stage"), DOC.index("git add")
    pieces = (
        RetrievedChunk("x", DOC[:a].rstrip(), None, "manual", 0, a - 1),
        RetrievedChunk("y", DOC[a:b].rstrip(), None, "manual", a, b - 1),
        RetrievedChunk("z", DOC[b:], None, "manual", b, len(DOC)),
    )
    (passage,) = passages(pieces)
    assert passage.text == DOC
    assert [p[0] for p in passage.pieces] == ["x", "y", "z"]


def test_chunks_of_other_documents_or_far_apart_are_not_joined():
    a = DOC.index("To give up")
    far = (
        RetrievedChunk("a", DOC[:40], None, "manual", 0, 40),
        RetrievedChunk("b", DOC[a:], None, "manual", a, len(DOC)),
        RetrievedChunk("c", DOC[40:a], None, "other", 40, a),
    )
    assert sorted(len(p.pieces) for p in passages(far)) == [1, 1, 1]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(1, len(DOC) - 1), min_size=3, max_size=3, unique=True),
    st.sampled_from([(True, 0), (True, 25), (False, 25)]),
)
def test_any_cut_into_four_pieces_changes_no_generation_figure(cuts, how):
    placed, lead = how
    assert figures(cut(sorted(cuts), placed, lead)) == figures(whole())


@given(st.text(min_size=0, max_size=60), st.text(min_size=0, max_size=60))
def test_overlap_is_a_true_suffix_prefix_of_both(left, right):
    n = overlap(left, right)
    assert n == 0 or (n >= 16 and left.endswith(right[:n]) and n < min(len(left), len(right)) + 1)


# ------------------------------------------------------------------ an LLM judge


def test_the_prompt_numbers_chunks_with_their_document_and_offsets():
    inp = JudgeInput(QUESTION, ANSWER, cut([50]) + (RetrievedChunk("loose", "text"),), None)
    chunks = json.loads(user_message(inp))["retrieved_chunks"]
    assert chunks[0] == {
        "rank": 1,
        "id": "p1",
        "document": "manual",
        "start": 50,
        "end": len(DOC),
        "text": DOC[50:],
    }
    assert chunks[2] == {"rank": 3, "id": "loose", "text": "text"}


def grading_server(chat):
    """A loopback model that grades as the prompt asks: it reads the chunks' documents
    and offsets from the message (nothing else), joins what is adjacent and quotes
    evidence from the joined text — the offline judge's rules behind the HTTP protocol."""

    def script(n, request):
        material = json.loads(request.body["messages"][1]["content"])
        chunks = tuple(
            RetrievedChunk(
                c["id"], c["text"], None, c.get("document"), c.get("start"), c.get("end")
            )
            for c in material["retrieved_chunks"]
        )
        j = OfflineJudge().judge(
            JudgeInput(
                material["question"], material["answer"], chunks, material["reference_answer"]
            )
        )
        reply = {
            "claims": [
                {
                    "text": c.text,
                    "verdict": c.verdict,
                    "evidence_chunk_id": c.evidence_chunk_id,
                    "evidence": c.evidence,
                    "reason": c.reason,
                }
                for c in j.claims
            ],
            "answer_correctness": j.answer_correctness,
            "chunks": [
                {"id": v.chunk_id, "relevant": v.relevant, "reason": v.reason}
                for v in j.chunk_verdicts or ()
            ],
            "answer_relevancy": {"score": j.answer_relevancy, "reason": "r"},
            "statements": [
                {
                    "text": s.text,
                    "attributed": s.attributed,
                    "evidence_chunk_id": s.evidence_chunk_id,
                    "evidence": s.evidence,
                    "reason": s.reason,
                }
                for s in j.statements or ()
            ],
            "refused": j.refused,
        }
        return chat.Step(content=reply)

    return script


def test_the_split_control_with_a_loopback_llm_judge(chat, monkeypatch):
    monkeypatch.setenv("SPLIT_JUDGE_KEY", "k")
    cuts = [DOC.index("markers"), DOC.index("git add"), DOC.index("--abort")]
    with chat.ChatServer(grading_server(chat)) as srv:
        judge = make_judge(
            {
                "kind": "openai",
                "base_url": srv.base_url,
                "model": "m",
                "api_key_env": "SPLIT_JUDGE_KEY",
                "cache": False,
            }
        )
        try:
            assert figures(whole(), judge) == (1.0, 1.0, 1.0)
            assert figures(cut(cuts), judge) == figures(whole(), judge)
        finally:
            judge.close()
