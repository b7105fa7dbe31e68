"""Answer relevancy falls with the share of the answer that does not address the
question (issue 32, item 3): an echoed prompt, a page of padding and a bare synopsis line
do not score 1.0."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rageval_core.judges.offline import DIRECT_SCORE, answer_relevancy

QUESTION = "How do I remove stale worktree information?"
GOOD = "Run git worktree prune to remove stale worktree information."
OFF = [
    "The index keeps one entry per tracked file.",
    "Tags name a commit for good.",
    "A remote is a named URL that git fetches from.",
    "Hooks run scripts at fixed points of a command.",
]


def score(answer: str, question: str = QUESTION) -> float:
    return answer_relevancy(question, answer)[0]


def test_a_focused_answer_scores_fully():
    assert score(GOOD) == 1.0


def test_a_bare_synopsis_line_is_not_a_full_answer():
    synopsis = "git worktree prune [-n] [-v] [--expire <expire>]"
    got, reason = answer_relevancy("What does git worktree prune do?", synopsis)
    assert got == DIRECT_SCORE and "no complete sentence" in reason


def test_the_whole_prompt_echoed_is_not_a_full_answer():
    prompt = f"Answer from the context only.\nContext: {' '.join(OFF)} {GOOD}\nQuestion: {QUESTION}"
    got, reason = answer_relevancy(QUESTION, prompt)
    assert got < 0.5, reason
    # the question alone, echoed, addresses nothing
    assert score(f"Question: {QUESTION}") == 0.0


@given(st.lists(st.sampled_from(OFF), max_size=12))
def test_padding_lowers_relevancy_in_proportion(padding):
    padded = " ".join([GOOD, *padding])
    assert score(padded) <= score(GOOD)
    if padding:
        assert score(padded) < 1.0
        assert score(padded) >= score(" ".join([GOOD, *padding, *padding])) - 1e-12
