"""The example RAG pipeline: BM25 retrieval, an optional reranker, an extractive generator.

It stands in for a user's pipeline in `rageval demo` and the tutorial, so it imports
nothing from rageval but the dataset loader and behaves like a real system would: it can
miss, mis-rank, fail to decline and, in its deliberately bad settings, invent things.
No model and no network: latency and tokens come from the cost model in
`docs/pipeline.md`, with noise seeded by (question, settings), so the same settings give
the same numbers on every machine.

    build(top_k=5, reranker=False, generator="extractive", verbose=False,
          never_refuse=False, chunk_size=None, pool=20, min_coverage=0.5,
          source="corpus", offsets=True, dataset=<the run's>)

- retrieval: BM25 (rank_bm25) over the corpus, optionally re-chunked into `chunk_size`-word
  passages; each passage keeps the id of the chunk it came from, and results are unique
  by that id so gold matching still works. With `source="documents"` it indexes the
  dataset's documents instead, cut into `chunk_size`-word windows with ids `<doc>:<n>` —
  a chunker of its own, scored on the dataset's gold spans: with `offsets` each chunk
  carries `doc_id`, `start`, `end`; without, only its words joined by single spaces (rageval
  then finds them in the documents). The first stage tokenises the way most BM25
  set-ups start out: lower-cased words with punctuation trimmed, no stemming, no stopwords.
- reranker: re-scores the BM25 top `pool` by how densely one sentence covers the
  question's content words, shared word pairs (bigrams), and drops a passage to the bottom
  when a newer version of the same document was retrieved too.
- generator `extractive`: the best one or two retrieved sentences; declines ("I don't
  know based on the provided documents.") when no sentence covers `min_coverage` of the
  question's weighted content words. `never_refuse` answers anyway.
- generator `memorising`: answers with the reference answer it "remembers" from the
  dataset — correct, but only supported when retrieval happened to find the evidence.
- `verbose`: appends a plausible sentence with an invented name and number.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from rank_bm25 import BM25Okapi

from rageval_core.dataset import document_id, load_dataset
from rageval_core.models import GoldenDataset, PipelineOutput, RetrievedChunk

REFUSAL = "I don't know based on the provided documents."
GENERATORS = ("extractive", "memorising")
SOURCES = ("corpus", "documents")

# Cost model (docs/pipeline.md). Milliseconds and tokens of a mid-sized hosted model.
PROMPT_TOKENS = 60  # system prompt and instructions around the question and passages
TOKENS_PER_WORD = 1.3
RETRIEVAL_BASE_MS = 12.0
RETRIEVAL_PER_INDEXED_MS = 0.05  # BM25 scores every passage of the index
RETRIEVAL_PER_RESULT_MS = 1.5  # fetching each returned passage
RERANK_PER_CANDIDATE_MS = 6.0  # one cross-encoder-sized pass per candidate
PREFILL_BASE_MS = 150.0
PREFILL_PER_TOKEN_MS = 0.35
DECODE_PER_TOKEN_MS = 22.0
NOISE_SIGMA = 0.12
SPIKE_CHANCE = 0.05  # a busy model server now and then: the p95 tail
SPIKE_FACTOR = (1.8, 3.0)

_TOKEN = re.compile(r"[a-z0-9]+(?:[.,:/-][0-9]+)*")
_TRIM = ".,;:?!()[]\"'"
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_STOP = frozenset(
    """a an the and or of to in on at for by with from is are was were be been being do does
    did has have had what which who whom whose when where why how this that these those it
    its as if than then there their they them i you we he she my our your can could should
    would will shall may might must not no any all each per into about after before under
    over between up out so such only also more most many much some other how long often
    get got go goes going just us s t m don doesn won isn give kind still done take need
    needed used northwind""".split()
)

# Inventions of the `verbose` setting: names and numbers that appear in no document.
_PEOPLE = ("Petra Lindholm", "Jonas Brevik", "Elena Vasquez", "Karim Haddad", "Mei Tanaka")
_INVENTED = (
    "This was agreed with {person} during the {year} audit of {n} depots.",
    "{person} confirmed in {year} that the same rule applies to the {n} partner carriers.",
    "According to {person}, about {n} shipments a year are affected since {year}.",
)


def tokens(text: str) -> list[str]:
    """Lower-case content tokens, stopwords dropped, a plural `s` stripped."""
    out = []
    for t in _TOKEN.findall(text.lower()):
        if t in _STOP:
            continue
        if len(t) > 3 and t.endswith("s") and not t.endswith("ss") and t.isalpha():
            t = t[:-1]
        out.append(t)
    return out


def bm25_tokens(text: str) -> list[str]:
    """First-stage tokens: whitespace words, lower case, surrounding punctuation trimmed."""
    return [w for w in (t.strip(_TRIM) for t in text.lower().split()) if w]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _bigrams(toks: Sequence[str]) -> set[tuple[str, str]]:
    return set(zip(toks, toks[1:], strict=False))


def coverage(idf: Callable[[str], float], tokens: Collection[str], terms: Iterable[str]) -> float:
    """Share of the idf weight of `terms` that `tokens` contains (0 when it weighs nothing).

    `math.fsum` is exactly rounded, so the result does not depend on the order the terms
    come in: a set of words iterates in another order in every process (str hashes are
    salted), and a plain `sum` then differed in the last bit, flipping scores that sit on
    `min_coverage` (PYTHONHASHSEED changed the answers).
    """
    weights = [(idf(t), t in tokens) for t in terms]
    total = math.fsum(w for w, _ in weights)
    return math.fsum(w for w, hit in weights if hit) / total if total else 0.0


@dataclass(frozen=True)
class Passage:
    """A retrievable unit: a whole chunk or a `chunk_size`-word piece of one, or a window
    of a document (`place`: its document id, start and end; None for corpus passages of a
    dataset without documents)."""

    chunk_id: str
    doc_id: str
    version: str | None
    text: str
    place: tuple[str, int | None, int | None] | None = None


@dataclass(frozen=True)
class Index:
    passages: tuple[Passage, ...]
    bm25: BM25Okapi
    # content token -> inverse document frequency over passages (always > 0)
    idf_table: dict[str, float]
    # doc_id -> newest version present, to spot stale passages
    latest: dict[str, str]

    def idf(self, term: str) -> float:
        """Weight of a content word; a word in no passage weighs like the rarest ones."""
        return self.idf_table.get(term, self.max_idf)

    @property
    def max_idf(self) -> float:
        return math.log(1 + (len(self.passages) + 0.5) / 0.5)


def _passages(dataset: GoldenDataset, chunk_size: int | None) -> list[Passage]:
    documents = {d.id for d in dataset.documents}
    out = []
    for c in dataset.corpus:
        words = c.text.split()
        step = chunk_size or max(len(words), 1)
        doc = document_id(c)
        # the document the chunk is a piece of, when the dataset has it (no offsets)
        place = (doc, None, None) if doc in documents else None
        for i in range(0, max(len(words), 1), step):
            out.append(Passage(c.id, c.doc_id, c.version, " ".join(words[i : i + step]), place))
    return out


_WORD = re.compile(r"\S+")


def _windows(dataset: GoldenDataset, chunk_size: int) -> list[Passage]:
    """`chunk_size`-word windows of every document, each with its character range. A tail
    shorter than half a window joins the window before it, as common chunkers do: a
    two-word tail ("with food.") says nothing and, its text found twice in the document,
    cannot be placed without offsets."""
    out = []
    for d in dataset.documents:
        words = list(_WORD.finditer(d.text))
        starts = list(range(0, len(words), chunk_size))
        if len(starts) > 1 and len(words) - starts[-1] < chunk_size / 2:
            starts.pop()
        for n, i in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(words)
            piece = words[i:end]
            text = " ".join(w.group() for w in piece)
            place = (d.id, piece[0].start(), piece[-1].end())
            out.append(Passage(f"{d.id}:{n}", d.title or d.id, d.version, text, place))
    return out


@lru_cache(maxsize=8)
def _load(dataset_path: str, chunk_size: int | None, source: str) -> tuple[GoldenDataset, Index]:
    """Dataset and index, shared by every pipeline built with the same settings."""
    dataset = load_dataset(dataset_path)
    if source == "documents":
        if not dataset.documents:
            raise ValueError(f"source='documents' needs a dataset with documents: {dataset_path}")
        passages = _windows(dataset, chunk_size or 100)
    else:
        passages = _passages(dataset, chunk_size)
    latest: dict[str, str] = {}
    for p in passages:
        if p.version and p.version > latest.get(p.doc_id, ""):
            latest[p.doc_id] = p.version
    bm25 = BM25Okapi([bm25_tokens(p.text) or ["<empty>"] for p in passages])
    df = Counter(t for p in passages for t in set(tokens(p.text)))
    n = len(passages)
    idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    return dataset, Index(tuple(passages), bm25, idf, latest)


@dataclass(frozen=True)
class Settings:
    """The knobs of `build`, validated; also what seeds the latency noise."""

    top_k: int = 5
    reranker: bool = False
    generator: str = "extractive"
    verbose: bool = False
    never_refuse: bool = False
    chunk_size: int | None = None
    pool: int = 20
    min_coverage: float = 0.5
    source: str = "corpus"
    offsets: bool = True

    def __post_init__(self) -> None:
        problems = []
        if self.top_k < 1:
            problems.append(f"top_k must be >= 1, got {self.top_k}")
        if self.pool < self.top_k:
            problems.append(f"pool ({self.pool}) must be >= top_k ({self.top_k})")
        if self.generator not in GENERATORS:
            problems.append(f"generator must be one of {GENERATORS}, got {self.generator!r}")
        if self.chunk_size is not None and self.chunk_size < 5:
            problems.append(f"chunk_size must be >= 5 words, got {self.chunk_size}")
        if self.source not in SOURCES:
            problems.append(f"source must be one of {SOURCES}, got {self.source!r}")
        if not 0 <= self.min_coverage <= 1:
            problems.append(f"min_coverage must be in [0, 1], got {self.min_coverage}")
        if problems:
            raise ValueError("; ".join(problems))


class ExamplePipeline:
    """callable(question) -> PipelineOutput; stateless after construction, so thread-safe."""

    def __init__(self, settings: Settings, dataset_path: str):
        self.settings = settings
        self.dataset, self.index = _load(dataset_path, settings.chunk_size, settings.source)
        self._memory = {q.question: q.reference_answer for q in self.dataset.questions}
        # The dataset's hash, not its path, so the noise is the same on every machine; the
        # settings added for documents only when used, so older runs replay unchanged.
        knobs = asdict(settings)
        if settings.source == "corpus":
            del knobs["source"], knobs["offsets"]
        self._seed_key = json.dumps([knobs, self.dataset.sha256], sort_keys=True)

    # -- retrieval

    def _bm25(self, question: str, n: int) -> list[tuple[Passage, float]]:
        """Best-scoring passage per source chunk, ranked, at most `n` chunks."""
        scores = self.index.bm25.get_scores(bm25_tokens(question))
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        seen: set[str] = set()
        out = []
        for i in order:
            p = self.index.passages[i]
            if p.chunk_id not in seen:
                seen.add(p.chunk_id)
                out.append((p, round(float(scores[i]), 4)))
                if len(out) == n:
                    break
        return out

    def _coverage(self, text_tokens: set[str], q_terms: set[str]) -> float:
        return coverage(self.index.idf, text_tokens, q_terms)

    def _rerank(
        self, q_tokens: list[str], candidates: list[tuple[Passage, float]]
    ) -> list[tuple[Passage, float]]:
        """Second stage: sentence-level coverage + bigram overlap, stale versions last."""
        q_terms, q_pairs = set(q_tokens), _bigrams(q_tokens)
        top_bm25 = max((s for _, s in candidates), default=0.0) or 1.0
        docs_versions = {(p.doc_id, p.version) for p, _ in candidates}
        scored = []
        for p, bm25 in candidates:
            best_sentence = max(
                (self._coverage(set(tokens(s)), q_terms) for s in sentences(p.text)), default=0.0
            )
            pairs = len(q_pairs & _bigrams(tokens(p.text))) / len(q_pairs) if q_pairs else 0.0
            score = 0.1 * bm25 / top_bm25 + best_sentence + 0.5 * pairs
            newer = self.index.latest.get(p.doc_id)
            if p.version and newer != p.version and (p.doc_id, newer) in docs_versions:
                score -= 1.0  # the same passage exists in a newer version: prefer that
            scored.append((p, round(score, 4)))
        return sorted(scored, key=lambda ps: -ps[1])

    def retrieve(self, question: str) -> list[tuple[Passage, float]]:
        s = self.settings
        if not s.reranker:
            return self._bm25(question, s.top_k)
        return self._rerank(tokens(question), self._bm25(question, s.pool))[: s.top_k]

    # -- generation

    def _extract(self, question: str, passages: list[Passage]) -> str | None:
        """The best one or two sentences, or None when none covers enough of the question."""
        q_terms = set(tokens(question))
        ranked = []
        for rank, p in enumerate(passages):
            for s in sentences(p.text):
                toks = set(tokens(s))
                ranked.append((self._coverage(toks, q_terms), -rank, s, toks))
        if not ranked:
            return None
        ranked.sort(key=lambda r: (r[0], r[1]), reverse=True)
        best, _, sentence, covered = ranked[0]
        if best < self.settings.min_coverage and not self.settings.never_refuse:
            return None
        answer = [sentence]
        # A second sentence only when it covers question words the first one missed.
        for cov, _, s, toks in ranked[1:]:
            if s != sentence and (q_terms & toks) - covered and cov >= best / 2:
                answer.append(s)
                break
        return " ".join(answer)

    def _remember(self, question: str) -> str | None:
        ref = (self._memory.get(question) or "").strip()
        if not ref:
            return None
        ref = ref[0].upper() + ref[1:]
        return ref if ref[-1] in ".!?" else f"{ref}."

    def _invent(self, rng: random.Random) -> str:
        return rng.choice(_INVENTED).format(
            person=rng.choice(_PEOPLE), year=rng.randint(2011, 2019), n=rng.randint(13, 97)
        )

    # -- the call

    def _chunk(self, p: Passage, score: float) -> RetrievedChunk:
        """A retrieved chunk: its place only when it has one and `offsets` is on."""
        if p.place is None or not self.settings.offsets:
            return RetrievedChunk(p.chunk_id, p.text, score)
        doc, start, end = p.place
        return RetrievedChunk(p.chunk_id, p.text, score, doc_id=doc, start=start, end=end)

    def __call__(self, question: str) -> PipelineOutput:
        s = self.settings
        seed = hashlib.sha256(f"{self._seed_key}\n{question}".encode()).digest()
        rng = random.Random(int.from_bytes(seed[:8], "big"))
        hits = self.retrieve(question)
        passages = [p for p, _ in hits]
        if s.generator == "memorising":
            answer = self._remember(question)
        else:
            answer = self._extract(question, passages)
        answer = answer or REFUSAL
        if s.verbose and answer != REFUSAL:
            answer = f"{answer} {self._invent(rng)}"
        return PipelineOutput(
            answer=answer,
            retrieved=tuple(self._chunk(p, score) for p, score in hits),
            **cost_model(question, passages, answer, s, len(self.index.passages), rng),
        )


def _noise(rng: random.Random) -> float:
    return math.exp(rng.gauss(0.0, NOISE_SIGMA))


def cost_model(
    question: str,
    passages: Sequence[Passage],
    answer: str,
    settings: Settings,
    n_indexed: int,
    rng: random.Random,
) -> dict[str, float | int]:
    """Tokens and stage latencies of one call (formulas in docs/pipeline.md)."""
    words = len(question.split()) + sum(len(p.text.split()) for p in passages)
    input_tokens = PROMPT_TOKENS + round(TOKENS_PER_WORD * words)
    output_tokens = max(1, round(TOKENS_PER_WORD * len(answer.split())))
    retrieval = (
        RETRIEVAL_BASE_MS
        + RETRIEVAL_PER_INDEXED_MS * n_indexed
        + RETRIEVAL_PER_RESULT_MS * len(passages)
        + (RERANK_PER_CANDIDATE_MS * settings.pool if settings.reranker else 0.0)
    ) * _noise(rng)
    ttft = (PREFILL_BASE_MS + PREFILL_PER_TOKEN_MS * input_tokens) * _noise(rng)
    decode = DECODE_PER_TOKEN_MS * output_tokens * _noise(rng)
    if rng.random() < SPIKE_CHANCE:
        ttft *= rng.uniform(*SPIKE_FACTOR)
    return {
        "retrieval_ms": round(retrieval, 1),
        "ttft_ms": round(ttft, 1),
        "generation_ms": round(ttft + decode, 1),
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
    }


def build(dataset: str | Path | None = None, **params: object) -> ExamplePipeline:
    """The factory named in run configs: `rageval_core.example.pipeline:build`.

    `dataset` defaults to the dataset of the run being made (`$RAGEVAL_DATASET`, set by
    the runner): a config pointed at another dataset retrieves from that dataset's corpus.
    It used to default to the bundled example, which silently scored every gold chunk as
    missed. Unknown or invalid params raise TypeError or ValueError naming them (the runner
    reports it as a PipelineError).
    """
    settings = Settings(**params)  # type: ignore[arg-type]
    dataset = dataset or os.environ.get("RAGEVAL_DATASET")
    if not dataset:
        raise ValueError(
            "no dataset: pass dataset=PATH (the golden dataset whose corpus to index); "
            "in a run it defaults to the run's own"
        )
    return ExamplePipeline(settings, str(Path(dataset).resolve()))
