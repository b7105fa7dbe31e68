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
   that share reaches `threshold`. Sentences are read from passages, the retrieved chunks
   adjacent in their document joined in document order (`judges/passages.py`), so cutting
   the same text into more chunks changes no verdict; evidence names every chunk it spans.
4. `contradicted`: no sentence supports the claim, but one matches its words (numbers
   aside) at the threshold, lacks one of the claim's numbers and states a number the
   claim does not — "opened in 1999" against "opened in 1998". Otherwise `unsupported`,
   with the missing words in the reason.

5. Chunk relevance (`chunk_verdicts`): a chunk is relevant when it holds every key term
   of the question (number, name) that some retrieved chunk holds, and at least half of
   the question's content words.
6. Answer relevancy: the share of the question's content words the answer mentions,
   raised to `KEY_FLOOR` when the answer names all of the question's key terms, and to
   `DIRECT_SCORE` when its first sentence is a short reply of the kind a wh-question asks
   for (a quantity for "how many", "when"...; a name or number for "who", "which"...);
   times the share of the answer that addresses the question (sentences restating the
   question address nothing); at most `DIRECT_SCORE` without a complete sentence;
   None for a refusal.
7. Statements (context recall): the reference answer's clauses, split as claims are, each
   attributed when `check_claim` would call it supported by the retrieved chunks.

Only the metrics a judge config asks for (`metrics:`) are computed.
It must never do I/O and never depend on anything but its inputs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rageval_core.judges.options import Options
from rageval_core.judges.passages import passage_sentences, passages
from rageval_core.judges.text import (
    Terms,
    chunk_tokens,
    is_refusal,
    listed,
    raw_tokens,
    split_clauses,
    split_notes,
    split_sentences,
    terms,
    text_tokens,
)
from rageval_core.metrics.generation import answer_correctness
from rageval_core.models import (
    JUDGE_METRICS,
    ChunkVerdict,
    Claim,
    JudgeInput,
    Judgement,
    JudgeRef,
    RetrievedChunk,
    Statement,
)

# Bump when a rule changes, so runs judged under different rules are told apart.
OFFLINE_VERSION = "offline-3"
DEFAULT_THRESHOLD = 0.6
# Answer relevancy of an answer that names every key term of the question: a short answer
# such as "Northwind opened in 1998." repeats few question words yet plainly addresses it.
KEY_FLOOR = 0.5
# A direct reply ("ColdSan 40.", "Within 21 days.") rarely repeats the question's words,
# so word overlap alone calls it irrelevant; a short first sentence of the asked-for kind
# counts as addressing the question.
DIRECT_SCORE = 0.75
DIRECT_WORDS = 15
# A longer sentence is read for focus in pieces of this many words: an echoed prompt's
# list of chunks may have no sentence break, yet only some of it addresses the question;
# a real sentence is rarely longer.
UNIT_WORDS = 40
# A complete sentence ends in . ! ? (a closing quote or bracket may follow).
_COMPLETE = re.compile(r"[.!?][\"'”’)\]]*(?:\s|$)")
_WH = re.compile(r"\b(?:who|whom|whose|which|what|where|when|how)\b", re.IGNORECASE)
_WANTS_QUANTITY = re.compile(
    r"\b(?:how\s+(?:many|much|long|often|far|old|soon|large|high|low|cold|warm)"
    r"|when\b|within\s+how|(?:what|which)\s+(?:year|time|date|days?|temperature|share))",
    re.IGNORECASE,
)


def clauses(sentences: list[str]) -> list[tuple[str, Terms]]:
    """The checkable clauses of some sentences with their terms: release notes split off,
    then clauses; those without a content word dropped."""
    out = []
    for sentence in sentences:
        for piece in split_notes(sentence):
            for i, clause in enumerate(split_clauses(piece)):
                t = terms(clause, sentence_start=i == 0)
                if t.content:
                    out.append((clause, t))
    return out


def declines(answer: str) -> bool:
    """The offline judge's refusal rule: an empty answer, or one whose first sentence is
    refusal-worded. Also how an imported answer whose tool reports no refusal is read
    (`scoring.py`)."""
    return _declining(split_sentences(answer))


def _declining(sentences: list[str]) -> bool:
    return not sentences or is_refusal(sentences[0])


def extract_claims(answer: str) -> tuple[list[tuple[str, Terms]], bool]:
    """(claims with their terms, refused) for an answer; a refusal has no claims, and a
    refusal-worded sentence later in the answer is a hedge, not a claim."""
    sentences = split_sentences(answer)
    if _declining(sentences):
        return [], True
    return clauses([s for s in sentences if not is_refusal(s)]), False


def _named(ids: tuple[str, ...]) -> str:
    """The chunks a piece of evidence spans, for a reason: "c1" or "c1 + c2"."""
    return " + ".join(ids)


def check_claim(
    text: str, t: Terms, retrieved: tuple[RetrievedChunk, ...], threshold: float
) -> Claim:
    """Verdict, evidence and reason for one claim against the retrieved chunks, read as
    passages (`judges/passages.py`): a sentence cut by a chunk boundary is read whole, and
    evidence names every chunk it spans (its id the first; the reason all of them)."""
    if not retrieved:
        return Claim(text, "unsupported", reason="no chunks were retrieved")
    n = len(t.content)
    best: tuple[bool, float] = (False, -1.0)
    best_at: tuple[tuple[str, ...], str, frozenset[str]] = ((), "", frozenset())
    rival: tuple[float, tuple[str, ...], str, frozenset[str]] | None = None
    words = t.content - t.numbers
    for passage in passages(retrieved):
        for sentence, tokens, numbers, ids in passage_sentences(passage):
            score = (t.key <= tokens, len(t.content & tokens) / n)
            if score > best:
                best, best_at = score, (ids, sentence, tokens)
            if t.numbers and words and numbers - t.numbers and not t.numbers <= tokens:
                share = len(words & tokens) / len(words)
                if share >= threshold and (rival is None or share > rival[0]):
                    rival = (share, ids, sentence, numbers)
    keys_ok, share = best
    ids, sentence, tokens = best_at
    if keys_ok and share >= threshold:
        return Claim(
            text,
            "supported",
            evidence_chunk_id=ids[0],
            evidence=sentence,
            reason=f"{share:.0%} of content words found in {_named(ids)}",
        )
    if rival is not None:
        _, r_ids, r_sentence, r_numbers = rival
        return Claim(
            text,
            "contradicted",
            evidence_chunk_id=r_ids[0],
            evidence=r_sentence,
            reason=f"{_named(r_ids)} says {listed(r_numbers - t.numbers)} "
            f"where the answer says {listed(t.numbers - r_numbers)}",
        )
    missing_keys = t.key - tokens
    if missing_keys:
        reason = f"not in any retrieved sentence with its context: {listed(missing_keys)}"
    else:
        reason = (
            f"only {max(share, 0):.0%} of content words found (best: {_named(ids)}); "
            f"missing: {listed(t.content - tokens)}"
        )
    return Claim(text, "unsupported", reason=reason)


def chunk_verdicts(
    question: str, retrieved: tuple[RetrievedChunk, ...]
) -> tuple[ChunkVerdict, ...] | None:
    """Relevance of each retrieved chunk (rank 1..n) by the words it shares with the question.

    Relevant = holds every key term of the question that some retrieved chunk holds (a key
    term no chunk holds cannot tell chunks apart) and at least half of its content words.
    None when nothing was retrieved or the question has no content word to compare.
    """
    q = terms(question)
    if not retrieved or not q.content:
        return None
    tokens = [chunk_tokens(c.text) for c in retrieved]
    keys = q.key & frozenset().union(*tokens)
    verdicts = []
    for rank, (chunk, held) in enumerate(zip(retrieved, tokens, strict=True), 1):
        shared, lacking = q.content & held, keys - held
        reason = f"shares {len(shared)} of {len(q.content)} question words"
        reason += f": {listed(shared)}" if shared else ""
        if q.content - shared:
            reason += f"; missing: {listed(q.content - shared)}"
        if lacking:
            reason += f"; lacks key terms other chunks hold: {listed(lacking)}"
        relevant = not lacking and 2 * len(shared) >= len(q.content)
        verdicts.append(ChunkVerdict(chunk.id, rank, relevant, reason))
    return tuple(verdicts)


def _units(answer: str) -> list[list[str]]:
    """The answer's sentences as lists of tokens, a sentence longer than `UNIT_WORDS`
    words read in pieces of that many (a pasted list of chunks is one "sentence")."""
    out = []
    for sentence in split_sentences(answer):
        toks = raw_tokens(sentence)
        out += [toks[i : i + UNIT_WORDS] for i in range(0, len(toks), UNIT_WORDS)]
    return out


def _without_question(question: str, answer: str) -> str:
    """The answer with every verbatim copy of the question (white space and case aside)
    taken out: an echoed prompt holds the question, which addresses nothing."""
    words = question.split()
    if not words:
        return answer
    copy = re.compile(r"\s+".join(map(re.escape, words)), re.IGNORECASE)
    return copy.sub(" ", answer)


def answer_relevancy(question: str, answer: str) -> tuple[float | None, str | None]:
    """(score, reason): coverage × focus.

    Coverage is the share of the question's content words the answer mentions, at least
    `KEY_FLOOR` when it names all of the question's key terms and `DIRECT_SCORE` for a
    direct reply. Focus is the share of the answer's words in units (sentences; pieces of
    `UNIT_WORDS` words of a longer one) that address the question: share a content word
    with it and say more than it, or are the direct reply. A verbatim copy of the
    question and a unit that only restates it (its content words all the question's)
    address nothing and lend no coverage, so an echoed prompt does not score by
    repeating the question. An answer with no complete sentence (none ends in . ! ?: a
    synopsis line, a title) reads at most `DIRECT_SCORE`. (None, None) for a question
    without content words; callers pass no refusal (it addresses nothing).
    """
    q = terms(question)
    if not q.content:
        return None, None
    direct = _direct_reply(question, answer)
    total = len(raw_tokens(answer))
    kept, addressing, restated = [], 0, 0
    for i, unit in enumerate(_units(_without_question(question, answer))):
        content = terms(" ".join(unit)).content
        if content and content <= q.content:
            restated += 1
            continue
        kept += unit
        if content & q.content or (i == 0 and direct):
            addressing += len(unit)
    said = text_tokens(" ".join(kept))
    shared = q.content & said
    score = len(shared) / len(q.content)
    reason = f"mentions {len(shared)} of {len(q.content)} question words"
    reason += f": {listed(shared)}" if shared else ""
    if q.content - shared:
        reason += f"; not: {listed(q.content - shared)}"
    if q.key and q.key <= said and score < KEY_FLOOR:
        score = KEY_FLOOR
        reason += f"; names every key term ({listed(q.key)}), so at least {KEY_FLOOR:g}"
    if direct and score < DIRECT_SCORE:
        score = DIRECT_SCORE
        reason += f"; {direct}, so {DIRECT_SCORE:g}"
    if restated:
        reason += f"; {restated} sentence(s) only restate the question"
    focus = min(1.0, addressing / total) if total else 0.0
    if focus < 1:
        score *= focus
        reason += f"; {focus:.0%} of the answer addresses the question, so × {focus:.2f}"
    if not _COMPLETE.search(answer) and score > DIRECT_SCORE:
        score = DIRECT_SCORE
        reason += f"; no complete sentence (none ends in . ! ?), so at most {DIRECT_SCORE:g}"
    return score, reason


def _direct_reply(question: str, answer: str) -> str | None:
    """What makes the answer's first sentence a short reply of the kind the wh-question
    asks for, or None: a quantity for "how many", "when"...; a name or a number for "who",
    "which", "what"... (names as `terms` finds them, not the sentence's first word)."""
    sentences = split_sentences(answer)
    if not sentences or not _WH.search(question):
        return None
    first = sentences[0]
    if not 0 < len(raw_tokens(first)) <= DIRECT_WORDS:
        return None
    t = terms(first)
    if _WANTS_QUANTITY.search(question):
        return "a short reply giving a quantity, as the question asks" if t.numbers else None
    return "a short reply naming what the question asks" if t.names or t.numbers else None


def statements(
    reference: str | None, retrieved: tuple[RetrievedChunk, ...], threshold: float
) -> tuple[Statement, ...] | None:
    """The reference answer's clauses, each attributed when `check_claim` finds it
    supported by a retrieved sentence; None without a reference (or a checkable clause)."""
    if not reference:
        return None
    out = []
    for text, t in clauses(split_sentences(reference)):
        claim = check_claim(text, t, retrieved, threshold)
        out.append(
            Statement(
                text,
                claim.verdict == "supported",
                evidence_chunk_id=claim.evidence_chunk_id,
                evidence=claim.evidence,
                reason=claim.reason,
            )
        )
    return tuple(out) or None


class OfflineJudge:
    """Deterministic rules judge (module docstring); stateless, so thread-safe."""

    def __init__(
        self, threshold: float = DEFAULT_THRESHOLD, metrics: tuple[str, ...] = JUDGE_METRICS
    ):
        self.threshold = threshold
        self.metrics = metrics

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OfflineJudge:
        opts = Options(config, "offline")
        threshold = opts.get("threshold", (int, float), DEFAULT_THRESHOLD, minimum=0, maximum=1)
        metrics = opts.metrics()
        opts.finish()
        return cls(threshold=float(threshold), metrics=metrics)

    def describe(self) -> JudgeRef:
        return JudgeRef(
            kind="offline",
            model=f"overlap>={self.threshold:g}",
            version=OFFLINE_VERSION,
            metrics=self.metrics,
        )

    def judge(self, inp: JudgeInput) -> Judgement:
        """Only the metrics asked for are computed; the others stay None (claims empty)."""
        asked = self.metrics.__contains__
        claims, refused = extract_claims(inp.answer)
        relevancy, why = (
            answer_relevancy(inp.question, inp.answer)
            if asked("answer_relevancy") and not refused
            else (None, None)
        )
        return Judgement(
            claims=tuple(check_claim(c, t, inp.retrieved, self.threshold) for c, t in claims)
            if asked("faithfulness")
            else (),
            refused=refused,
            answer_correctness=answer_correctness(inp.answer, inp.reference_answer)
            if asked("answer_correctness")
            else None,
            chunk_verdicts=chunk_verdicts(inp.question, inp.retrieved)
            if asked("context_relevance")
            else None,
            answer_relevancy=relevancy,
            answer_relevancy_reason=why,
            statements=statements(inp.reference_answer, inp.retrieved, self.threshold)
            if asked("context_recall")
            else None,
        )

    def close(self) -> None:
        """Nothing to release; present for the Judge protocol."""

    def __repr__(self) -> str:
        return f"OfflineJudge(threshold={self.threshold:g}, metrics={self.metrics!r})"
