"""Every candidate checked automatically, each check keeping why (docs/generate.md, "Checks").

- `quotes` — every quote stands exactly once in its document (the loader's rule,
  `quotes.find_quote`); an answerable candidate has one, a multi-hop one has quotes in
  two documents.
- `supported` — the reference answer is supported by the quotes: every checkable clause
  of it passes the offline judge's claim check (`judges/offline.check_claim`) against
  them, or, with `--judge`, the judge finds every claim of it supported.
- `specific` — the question shares a rare word (`RARE_SHARE`) with its quotes or their
  documents: "What is this document about?" shares none.
- `paraphrased` (user-vocabulary only) — at most `PARAPHRASE_SHARE` of the question's
  content words are in its quotes.
- `unanswerable` (unanswerable only) — no sentence of any document holds the question's
  names and numbers and `threshold` of its content words (the claim check, with the
  question as the claim, against every document).
- `duplicate` — not an exact or near-duplicate (`similarity.py`) of a question of the
  existing dataset or of an earlier candidate that passed its other checks.

A candidate whose checks all pass is `accepted-by-checks`; any other is `rejected`, its
failed checks' details its reasons.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from rageval_core.candidates.documents import sections
from rageval_core.candidates.model import Candidate, Check, Quote
from rageval_core.candidates.quotes import find_quote
from rageval_core.candidates.similarity import NearIndex, exact_key, jaccard, words
from rageval_core.errors import shown
from rageval_core.judges import Judge
from rageval_core.judges.offline import DEFAULT_THRESHOLD, check_claim, clauses
from rageval_core.judges.text import chunk_tokens, listed, split_sentences, terms
from rageval_core.models import Document, JudgeInput, RetrievedChunk

RARE_SHARE = 0.10
"""A word is rare when at most this share of all sections (and at least 2) hold it."""
PARAPHRASE_SHARE = 0.5

QUOTES, SUPPORTED, SPECIFIC = "quotes", "supported", "specific"
PARAPHRASED, UNANSWERABLE, DUPLICATE = "paraphrased", "unanswerable", "duplicate"

Support = Callable[[Candidate, tuple[RetrievedChunk, ...]], Check]


def _chunks(quotes: Sequence[Quote]) -> tuple[RetrievedChunk, ...]:
    """The quotes as the chunks a judge reads; a quote's line breaks read as spaces (a
    sentence of hard-wrapped text is one sentence, not one per line)."""
    return tuple(
        RetrievedChunk(f"{q.doc_id}:{q.start}-{q.end}", " ".join(q.text.split()), doc_id=q.doc_id)
        for q in quotes
    )


def locate_quotes(c: Candidate, docs: dict[str, Document]) -> tuple[Candidate, Check]:
    """The candidate with each quote placed where it stands once, and the `quotes` check."""
    placed, problems = [], []
    for i, q in enumerate(c.quotes):
        doc = docs.get(q.doc_id)
        if doc is None:
            problems.append(f"quote {i + 1}: document {shown(q.doc_id)} is not in the documents")
            placed.append(replace(q, start=None, end=None))
            continue
        found = find_quote(doc.text, q.text)
        if found.once:
            placed.append(replace(q, start=found.starts[0], end=found.starts[0] + len(q.text)))
            continue
        placed.append(replace(q, start=None, end=None))
        where = (
            f"found more than once in {shown(q.doc_id)} (at {found.starts[0]} and "
            f"{found.starts[1]})"
            if found.count
            else f"not in {shown(q.doc_id)}"
        )
        problems.append(f"quote {i + 1} {shown(q.text, 60)} is {where}")
    if c.answerable and not c.quotes:
        problems.append("an answerable question needs a quote")
    if c.kind == "multi-hop" and len({q.doc_id for q in c.quotes}) < 2:
        problems.append("a multi-hop question needs quotes in two documents")
    detail = "; ".join(problems) or f"{len(c.quotes)} quote(s), each found exactly once"
    return replace(c, quotes=tuple(placed)), Check(QUOTES, not problems, detail)


def offline_support(threshold: float = DEFAULT_THRESHOLD) -> Support:
    """The offline judge's claim check of every clause of the reference answer."""

    def check(c: Candidate, quotes: tuple[RetrievedChunk, ...]) -> Check:
        statements = clauses(split_sentences(c.reference_answer))
        if not statements:
            return Check(SUPPORTED, False, "the reference answer has no checkable statement")
        for text, t in statements:
            claim = check_claim(text, t, quotes, threshold)
            if claim.verdict != "supported":
                return Check(SUPPORTED, False, f"{shown(text, 60)}: {claim.reason}")
        return Check(SUPPORTED, True, f"{len(statements)} statement(s) supported by the quotes")

    return check


class JudgeSupport:
    """The judge's faithfulness verdicts on the reference answer read as an answer, the
    quotes as its chunks: every claim supported, or the first one that is not. Keeps
    what the judge's calls cost (`cost_usd`)."""

    def __init__(self, judge: Judge):
        self.judge = judge
        self.cost_usd = 0.0

    def __call__(self, c: Candidate, quotes: tuple[RetrievedChunk, ...]) -> Check:
        verdict = self.judge.judge(JudgeInput(c.question, c.reference_answer, quotes, None))
        self.cost_usd += verdict.cost_usd or 0.0
        if verdict.error:
            return Check(SUPPORTED, False, f"the judge failed: {shown(verdict.error, 120)}")
        if verdict.refused or not verdict.claims:
            return Check(SUPPORTED, False, "the judge found no claim in the reference answer")
        for claim in verdict.claims:
            if claim.verdict != "supported":
                return Check(
                    SUPPORTED, False, f"{claim.verdict}: {shown(claim.reason or claim.text, 80)}"
                )
        return Check(SUPPORTED, True, f"the judge found {len(verdict.claims)} claim(s) supported")


@dataclass(frozen=True)
class Vocabulary:
    """The documents' words, read once: how many sections hold each, the most a rare
    word may be in, and each document's words."""

    sections_with: Counter
    rare_at_most: int
    document_words: dict[str, frozenset[str]]

    @classmethod
    def of(cls, documents: Sequence[Document]) -> Vocabulary:
        counts: Counter = Counter()
        words, n = {}, 0
        for d in documents:
            held = [chunk_tokens(d.text[a:b]) for a, b in sections(d.text)]
            n += len(held)
            counts.update(w for s in held for w in s)
            words[d.id] = frozenset().union(*held)
        return cls(counts, max(2, int(RARE_SHARE * n)), words)

    def rare(self, found: frozenset[str]) -> frozenset[str]:
        return frozenset(w for w in found if 0 < self.sections_with[w] <= self.rare_at_most)


def specific(c: Candidate, vocabulary: Vocabulary) -> Check:
    asked = terms(c.question).content
    held = [chunk_tokens(q.text) for q in c.quotes]
    held += [vocabulary.document_words.get(q.doc_id, frozenset()) for q in c.quotes]
    shared = vocabulary.rare(frozenset(w for w in asked if any(w in h for h in held)))
    if shared:
        return Check(SPECIFIC, True, f"shares rare word(s) with its source: {listed(shared)}")
    why = "no content word" if not asked else f"none of {listed(asked)} is rare in its source"
    return Check(SPECIFIC, False, f"generic: {why}")


def paraphrased(c: Candidate) -> Check:
    asked = terms(c.question).content
    held = frozenset().union(*(chunk_tokens(q.text) for q in c.quotes))
    share = len(asked & held) / len(asked) if asked else 0.0
    detail = f"{share:.0%} of its content words are in its quotes"
    return Check(PARAPHRASED, bool(asked) and share <= PARAPHRASE_SHARE, detail)


def unanswerable(c: Candidate, everything: tuple[RetrievedChunk, ...], threshold: float) -> Check:
    t = terms(c.question)
    if not t.content:
        return Check(UNANSWERABLE, False, "the question has no content word to look for")
    claim = check_claim(c.question, t, everything, threshold)
    if claim.verdict == "supported":
        return Check(
            UNANSWERABLE,
            False,
            f"{shown(claim.evidence_chunk_id)} may answer it: {shown(claim.evidence, 100)}",
        )
    n = len(everything)
    return Check(UNANSWERABLE, True, f"none of the {n} documents answers it ({claim.reason})")


def verify(
    candidates: Sequence[Candidate],
    documents: Sequence[Document],
    vocabulary: Vocabulary,
    *,
    existing: Sequence[tuple[str, str]] = (),
    support: Support | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> tuple[list[Candidate], NearIndex]:
    """Every candidate with its checks and status, in order; and the near-duplicate index
    (its `compared` count says how much work deduplication took). `existing` is the
    (id, question) of each question of the existing dataset."""
    docs = {d.id: d for d in documents}
    support = support or offline_support(threshold)
    everything = tuple(RetrievedChunk(d.id, d.text, doc_id=d.id) for d in documents)
    kept_keys = {exact_key(q): qid for qid, q in existing}
    kept_sets = [words(q) for _, q in existing]
    kept_names = [qid for qid, _ in existing]
    index = NearIndex.for_sets([*kept_sets, *(words(c.question) for c in candidates)])
    for s in kept_sets:
        index.add(s)
    out = []
    for c in candidates:
        c, quoted = locate_quotes(c, docs)
        checks = [quoted]
        if c.answerable:
            chunks = _chunks(c.quotes)
            checks.append(
                support(c, chunks) if quoted.passed else Check(SUPPORTED, False, "no quote")
            )
        else:
            checks.append(unanswerable(c, everything, threshold))
        checks.append(specific(c, vocabulary))
        if c.kind == "user-vocabulary":
            checks.append(paraphrased(c))
        mine = words(c.question)
        key = exact_key(c.question)
        if key in kept_keys:
            dup = Check(DUPLICATE, False, f"the same question as {kept_keys[key]}")
        elif near := index.probe(mine):
            first = near[0]
            score = jaccard(mine, kept_sets[first])
            dup = Check(DUPLICATE, False, f"near {kept_names[first]} (Jaccard {score:.2f})")
        else:
            dup = Check(DUPLICATE, True, "no exact or near duplicate")
        checks.append(dup)
        c = c.checked(tuple(checks))
        if all(ch.passed for ch in checks):
            kept_keys[key] = c.id
            kept_sets.append(mine)
            kept_names.append(c.id)
            index.add(mine)
        out.append(c)
    return out, index
