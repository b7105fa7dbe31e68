"""The offline judge: deterministic, zero-cost claim checking by word overlap.

How it decides (docs/judges.md has the long version and where it is fooled):

1. Refusal: if the answer's first sentence declines ("I don't know", "not in the provided
   context", ...) the answer is a refusal with no claims. An empty answer is a refusal too.
2. Claims: the answer's sentences, a leading release note ("New in version 3.3.") split
   from the text after it, then split into clauses on `;`, `, and`, `, but`, ` but `,
   ` whereas `...; refusal-worded sentences later in the answer are hedges, not claims, and
   clauses without a content word are dropped.
3. Evidence: for each claim, the retrieved sentence that contains all of the claim's key
   terms (numbers, names) and the largest share of its content words. `supported` when
   that share reaches `threshold`.
4. `contradicted`: no sentence supports the claim, but one matches its words (numbers
   aside) at the threshold, lacks one of the claim's numbers and states a number the
   claim does not — "opened in 1999" against "opened in 1998". Otherwise `unsupported`,
   with the missing words in the reason.

It must never do I/O and never depend on anything but its inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rageval_core.judges.options import Options
from rageval_core.judges.text import (
    Terms,
    is_refusal,
    sentence_terms,
    listed,
    split_clauses,
    split_notes,
    split_sentences,
    terms,
)
from rageval_core.metrics.generation import answer_correctness
from rageval_core.models import Claim, JudgeInput, Judgement, JudgeRef, RetrievedChunk

# Bump when a rule changes, so runs judged under different rules are told apart.
OFFLINE_VERSION = "offline-2"
DEFAULT_THRESHOLD = 0.6


def extract_claims(answer: str) -> tuple[list[tuple[str, Terms]], bool]:
    """(claims with their terms, refused) for an answer; a refusal has no claims."""
    sentences = split_sentences(answer)
    if not sentences or is_refusal(sentences[0]):
        return [], True
    claims = []
    for sentence in sentences:
        if is_refusal(sentence):
            continue
        for piece in split_notes(sentence):
            for i, clause in enumerate(split_clauses(piece)):
                t = terms(clause, sentence_start=i == 0)
                if t.content:
                    claims.append((clause, t))
    return claims, False


def check_claim(
    text: str, t: Terms, retrieved: tuple[RetrievedChunk, ...], threshold: float
) -> Claim:
    """Verdict, evidence and reason for one claim against the retrieved chunks."""
    if not retrieved:
        return Claim(text, "unsupported", reason="no chunks were retrieved")
    n = len(t.content)
    best: tuple[bool, float] = (False, -1.0)
    best_at: tuple[str, str, frozenset[str]] = ("", "", frozenset())
    rival: tuple[float, str, str, frozenset[str]] | None = None
    words = t.content - t.numbers
    for chunk in retrieved:
        for sentence, tokens, numbers in sentence_terms(chunk.text):
            score = (t.key <= tokens, len(t.content & tokens) / n)
            if score > best:
                best, best_at = score, (chunk.id, sentence, tokens)
            if t.numbers and words and numbers - t.numbers and not t.numbers <= tokens:
                share = len(words & tokens) / len(words)
                if share >= threshold and (rival is None or share > rival[0]):
                    rival = (share, chunk.id, sentence, numbers)
    keys_ok, share = best
    chunk_id, sentence, tokens = best_at
    if keys_ok and share >= threshold:
        return Claim(
            text,
            "supported",
            evidence_chunk_id=chunk_id,
            evidence=sentence,
            reason=f"{share:.0%} of content words found in {chunk_id}",
        )
    if rival is not None:
        _, r_id, r_sentence, r_numbers = rival
        return Claim(
            text,
            "contradicted",
            evidence_chunk_id=r_id,
            evidence=r_sentence,
            reason=f"{r_id} says {listed(r_numbers - t.numbers)} "
            f"where the answer says {listed(t.numbers - r_numbers)}",
        )
    missing_keys = t.key - tokens
    if missing_keys:
        reason = f"not in any retrieved sentence with its context: {listed(missing_keys)}"
    else:
        reason = (
            f"only {max(share, 0):.0%} of content words found (best: {chunk_id}); "
            f"missing: {listed(t.content - tokens)}"
        )
    return Claim(text, "unsupported", reason=reason)


class OfflineJudge:
    """Deterministic rules judge (module docstring); stateless, so thread-safe."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD):
        self.threshold = threshold

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OfflineJudge:
        opts = Options(config, "offline")
        threshold = opts.get("threshold", (int, float), DEFAULT_THRESHOLD, minimum=0, maximum=1)
        opts.finish()
        return cls(threshold=float(threshold))

    def describe(self) -> JudgeRef:
        return JudgeRef(
            kind="offline", model=f"overlap>={self.threshold:g}", version=OFFLINE_VERSION
        )

    def judge(self, inp: JudgeInput) -> Judgement:
        claims, refused = extract_claims(inp.answer)
        return Judgement(
            claims=tuple(check_claim(c, t, inp.retrieved, self.threshold) for c, t in claims),
            refused=refused,
            answer_correctness=answer_correctness(inp.answer, inp.reference_answer),
        )

    def close(self) -> None:
        """Nothing to release; present for the Judge protocol."""

    def __repr__(self) -> str:
        return f"OfflineJudge(threshold={self.threshold:g})"
