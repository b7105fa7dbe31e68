"""Frozen dataclasses that cross module boundaries.

Dicts exist only at the I/O edge (YAML, JSON, Parquet rows); everything inside the
library passes these typed values. This module must not do I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, get_args

from rageval_core.errors import PipelineError, RagevalError

# Question ids travel in URLs (`?question=`), file names and messages: a safe alphabet, so
# every id that validates round-trips through a link (rageval_core/links.py uses this pattern;
# here, not in the dataset package, so links.py stays light).
QUESTION_ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:@#+-]{0,127}$")

Verdict = Literal["supported", "unsupported", "contradicted"]
VERDICTS: tuple[str, ...] = get_args(Verdict)

# Order matters: a question gets the first type that applies (docs/metrics.md).
FailureType = Literal[
    "error",
    "missed_refusal",
    "false_refusal",
    "retrieval_miss",
    "ranking_miss",
    "unscored",
    "irrelevant_context",
    "unfaithful",
    "off_topic",
    "incorrect",
    "ok",
]
FAILURE_TYPES: tuple[str, ...] = get_args(FailureType)

RunStatus = Literal["running", "complete", "failed"]
Direction = Literal["higher", "lower"]
Unit = Literal["unit", "ms", "usd", "count", "number"]


@dataclass(frozen=True)
class DeclaredMetric:
    """A per-question numeric column a run declares in its manifest (`metrics:`).

    Built only by `catalogue.parse_declared`, which validates the name: it later names a
    column of the run's files, so nothing else may construct one from user text.
    """

    name: str
    label: str
    direction: Direction = "higher"
    unit: Unit = "unit"
    range: tuple[float, float] | None = None


@dataclass(frozen=True)
class Chunk:
    """One retrievable passage of the corpus."""

    id: str
    doc_id: str
    text: str
    version: str | None = None


@dataclass(frozen=True)
class Document:
    """One source document of a dataset (`documents:`): gold spans and retrieved chunks
    are character ranges of its `text`, exactly as loaded."""

    id: str
    text: str
    title: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class GoldSpan:
    """A half-open character range `[start, end)` of one document that answers a question."""

    doc_id: str
    start: int
    end: int

    @property
    def label(self) -> str:
        """How the row's `gold_ids` name the span: `doc:start-end`."""
        return f"{self.doc_id}:{self.start}-{self.end}"


Answerability = Literal["answerable", "unanswerable", "reference_free"]


@dataclass(frozen=True)
class GoldenQuestion:
    """A question with its reference answer and gold (chunk ids and/or spans).

    `answerability` is decided once, by `dataset.answerability` (the rule is there).
    """

    id: str
    question: str
    reference_answer: str | None
    gold_chunk_ids: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    gold_spans: tuple[GoldSpan, ...] = ()
    answerability: Answerability | None = None
    """Set by the loader from `dataset.answerability`; None (a question built in code)
    becomes the old rule: gold given = answerable, none = should be declined."""
    stale: str | None = None
    """Why its gold no longer matches the documents (`stale: true` in the file, written by
    `rageval dataset refresh`); a stale question is left out of runs. None: current."""

    def __post_init__(self) -> None:
        if self.answerability is None:
            kind = "answerable" if self.has_retrieval_gold else "unanswerable"
            object.__setattr__(self, "answerability", kind)

    @property
    def answerable(self) -> bool:
        """Should the pipeline answer (True) or decline (False)?"""
        return self.answerability != "unanswerable"

    @property
    def has_retrieval_gold(self) -> bool:
        """Whether retrieval can be scored: gold ids or spans were given."""
        return bool(self.gold_chunk_ids or self.gold_spans)

    @property
    def gold_labels(self) -> tuple[str, ...]:
        """The row's `gold_ids`: the spans' labels on a span question, else the chunk ids."""
        if self.gold_spans:
            return tuple(s.label for s in self.gold_spans)
        return self.gold_chunk_ids


@dataclass(frozen=True)
class GoldenDataset:
    """A validated golden dataset; `sha256` identifies the exact content used by a run."""

    name: str
    version: str
    path: str
    questions: tuple[GoldenQuestion, ...]
    corpus: tuple[Chunk, ...]
    sha256: str
    documents: tuple[Document, ...] = ()
    warnings: tuple[str, ...] = ()
    """What the loader noticed that does not make the dataset invalid (documents changed
    since the versions it records); not part of the content hash."""

    def document_map(self) -> dict[str, Document]:
        return {d.id: d for d in self.documents}

    def chunk_map(self) -> dict[str, Chunk]:
        return {c.id: c for c in self.corpus}


@dataclass(frozen=True)
class RetrievedChunk:
    """One ranked chunk returned by a pipeline (docs/pipeline.md, "Retrieved chunks").

    `doc_id`, `start`, `end` optionally place it in a dataset document: half-open
    character offsets into the document's text as loaded (Python string indices). A chunk
    without them is placed by finding its text (`metrics/placement.py`). Framework adapters
    fill them from the framework's own node offsets.
    """

    id: str
    text: str
    score: float | None = None
    doc_id: str | None = None
    start: int | None = None
    end: int | None = None

    @classmethod
    def from_value(
        cls, item: Any, where: str, error: type[RagevalError] = PipelineError
    ) -> RetrievedChunk:
        """`item` (a mapping, or a `RetrievedChunk` built in code) checked by one set of
        rules: a string `id`, a string `text` (absent: empty), a finite `score`, offsets
        as `_offsets` wants them. A bad field is `error` naming `where`."""
        if isinstance(item, RetrievedChunk):
            item = {f.name: getattr(item, f.name) for f in fields(item)}
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            raise error(f"{where} needs a string 'id'")
        text = item.get("text")
        if text is not None and not isinstance(text, str):
            raise error(f"{where}.text must be a string, got {type(text).__name__}")
        return cls(
            id=item["id"],
            text=text or "",
            score=number(item.get("score"), f"{where}.score", error),
            **_offsets(item, where, error),
        )


MAX_TEXT_CHARS = 2_000_000
"""The characters of one answer, question or chunk text a row keeps (docs/pipeline.md,
"Size limits"); the rest is cut and counted (`n_chars_cut`): a 50 MB answer would be
judged, scored and written whole, with gigabytes of memory."""


def capped(text: str) -> tuple[str, int]:
    """`text` cut to `MAX_TEXT_CHARS`, and how many characters were cut."""
    if len(text) <= MAX_TEXT_CHARS:
        return text, 0
    return text[:MAX_TEXT_CHARS], len(text) - MAX_TEXT_CHARS


def capped_chunks(chunks: Sequence[RetrievedChunk]) -> tuple[tuple[RetrievedChunk, ...], int]:
    """Each chunk's text cut to `MAX_TEXT_CHARS`, and the characters cut in all."""
    out, cut = [], 0
    for c in chunks:
        text, n = capped(c.text)
        out.append(replace(c, text=text) if n else c)
        cut += n
    return tuple(out), cut


@dataclass(frozen=True)
class PipelineOutput:
    """What a pipeline returns for one question (docs/pipeline.md).

    Users may return a plain dict with the same keys; `from_value` checks it so a bad
    return value names the field that is wrong instead of failing later.
    """

    answer: str
    retrieved: tuple[RetrievedChunk, ...] = ()
    retrieval_ms: float | None = None
    generation_ms: float | None = None
    ttft_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    """Extra per-question scores, one per metric the run config declares (`metrics:`);
    the runner refuses undeclared names and non-numbers, naming the question."""
    chars_cut: int = 0
    """Characters of the answer and chunk texts beyond `MAX_TEXT_CHARS`, cut."""

    @classmethod
    def from_value(cls, value: Any, error: type[RagevalError] = PipelineError) -> PipelineOutput:
        """`value` (a dict, or a `PipelineOutput` built in code) checked field by field:
        both by the same rules, so an object cannot carry what a dict could not. A bad
        field is `error` naming it (the runner records it as the question's error)."""
        earlier = value.chars_cut if isinstance(value, PipelineOutput) else 0
        if isinstance(value, PipelineOutput):
            value = {f.name: getattr(value, f.name) for f in fields(value)}
        if not isinstance(value, Mapping):
            raise error(
                f"pipeline returned {type(value).__name__}; expected PipelineOutput or dict"
            )
        answer = value.get("answer")
        if not isinstance(answer, str):
            raise error("pipeline output field 'answer' must be a string")
        items = value.get("retrieved") or ()
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise error(
                f"pipeline output field 'retrieved' must be a list of chunks, "
                f"got {type(items).__name__}"
            )
        where = "pipeline output retrieved"
        answer, cut = capped(answer)
        chunks, cut_chunks = capped_chunks(
            [
                RetrievedChunk.from_value(item, f"{where}[{i}]", error)
                for i, item in enumerate(items)
            ]
        )
        return cls(
            answer=answer,
            scores=_scores(value.get("scores"), error),
            retrieved=chunks,
            chars_cut=earlier + cut + cut_chunks,
            retrieval_ms=number(
                value.get("retrieval_ms"), "pipeline output field 'retrieval_ms'", error
            ),
            generation_ms=number(
                value.get("generation_ms"), "pipeline output field 'generation_ms'", error
            ),
            ttft_ms=number(value.get("ttft_ms"), "pipeline output field 'ttft_ms'", error),
            input_tokens=count(
                value.get("input_tokens"), "pipeline output field 'input_tokens'", error
            ),
            output_tokens=count(
                value.get("output_tokens"), "pipeline output field 'output_tokens'", error
            ),
        )


def number(raw: Any, where: str | Callable[[], str], error: type[RagevalError]) -> float | None:
    """A finite number as a float, or None; anything else is `error` naming `where` (a
    callable is asked only then: a message is not built for every good value)."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise error(f"{where() if callable(where) else where} must be a number, got {_kind(raw)}")
    return float(raw)


def count(raw: Any, where: str | Callable[[], str], error: type[RagevalError]) -> int | None:
    """A whole number >= 0 (3.0 is 3; 3.7 is refused, never truncated), or None."""
    value = number(raw, where, error)
    if value is None:
        return None
    if not value.is_integer() or value < 0:
        where = where() if callable(where) else where
        raise error(f"{where} must be a whole number >= 0, got {raw!r:.40}")
    return int(raw)


def _kind(raw: Any) -> str:
    return repr(raw)[:40] if isinstance(raw, float) else type(raw).__name__


def _offsets(item: Mapping[str, Any], where: str, error: type[RagevalError]) -> dict[str, Any]:
    """`doc_id`, `start`, `end` of a retrieved item, checked: a string document id, and
    offsets both given or both absent, integers (never floats, never bools) with
    0 <= start <= end, and a document to count them in."""
    doc_id, start, end = item.get("doc_id"), item.get("start"), item.get("end")
    if doc_id is not None and not isinstance(doc_id, str):
        raise error(f"{where}.doc_id must be a string")
    if (start is None) != (end is None):
        raise error(f"{where}: give both 'start' and 'end' or neither")
    if start is not None:
        if doc_id is None:
            raise error(f"{where}: 'start' and 'end' need a 'doc_id'")
        if any(isinstance(v, bool) or not isinstance(v, int) for v in (start, end)):
            raise error(f"{where}: 'start' and 'end' must be integers")
        if not 0 <= start <= end:
            raise error(f"{where}: needs 0 <= start <= end, got {start}, {end}")
    return {"doc_id": doc_id, "start": start, "end": end}


def _scores(raw: Any, error: type[RagevalError]) -> dict[str, Any]:
    """`scores` of a pipeline output as a dict. Names and values are checked against the
    run's declarations (`scoring.py`), where an error can name the question."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise error(f"pipeline output field 'scores' must be a mapping, got {type(raw).__name__}")
    return {str(k): v for k, v in raw.items()}


@dataclass(frozen=True)
class Claim:
    """One factual statement of an answer with the judge's verdict and its evidence."""

    text: str
    verdict: Verdict
    evidence_chunk_id: str | None = None
    evidence: str | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # the field order is the row's struct order


JUDGE_METRICS: tuple[str, ...] = (
    "faithfulness",
    "answer_correctness",
    "context_relevance",
    "answer_relevancy",
    "context_recall",
)
"""What a judge can be asked for (a judge config's `metrics:`; all by default).
`context_relevance` also gives `context_precision`, its rank-weighted form."""


@dataclass(frozen=True)
class ChunkVerdict:
    """Whether one retrieved chunk (1-based `rank`) is relevant to the question, and why."""

    chunk_id: str
    rank: int
    relevant: bool
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # the field order is the row's struct order


@dataclass(frozen=True)
class Statement:
    """One statement of the reference answer, attributed to a retrieved chunk (with the
    evidence sentence) or not: the unit of context recall."""

    text: str
    attributed: bool
    evidence_chunk_id: str | None = None
    evidence: str | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # the field order is the row's struct order


@dataclass(frozen=True)
class JudgeInput:
    """Everything a judge sees for one question."""

    question: str
    answer: str
    retrieved: tuple[RetrievedChunk, ...]
    reference_answer: str | None


@dataclass(frozen=True)
class Judgement:
    """A judge's verdicts for one answer. A refusal has no claims and NULL faithfulness."""

    claims: tuple[Claim, ...]
    refused: bool
    answer_correctness: float | None
    cost_usd: float = 0.0
    error: str | None = None
    chunk_verdicts: tuple[ChunkVerdict, ...] | None = None
    """One per top-k retrieved chunk; None when not asked for (or nothing was retrieved)."""
    answer_relevancy: float | None = None
    """0..1: does the answer address the question; None for a refusal or when not asked."""
    answer_relevancy_reason: str | None = None
    statements: tuple[Statement, ...] | None = None
    """The reference answer's statements; None without a reference or when not asked."""

    @property
    def context_relevance(self) -> float | None:
        """Share of the judged chunks that are relevant; None when none were judged."""
        if self.error or not self.chunk_verdicts:
            return None
        return sum(v.relevant for v in self.chunk_verdicts) / len(self.chunk_verdicts)

    @property
    def context_precision(self) -> float | None:
        """Average precision over the verdicts in rank order: the mean of precision@i at
        each relevant rank i; 0 when no chunk is relevant, None when none were judged."""
        if self.error or not self.chunk_verdicts:
            return None
        hits, total = 0, 0.0
        for i, v in enumerate(sorted(self.chunk_verdicts, key=lambda v: v.rank), 1):
            if v.relevant:
                hits += 1
                total += hits / i
        return total / hits if hits else 0.0

    @property
    def context_recall(self) -> float | None:
        """Attributed statements / statements; None without statements."""
        if self.error or not self.statements:
            return None
        return sum(s.attributed for s in self.statements) / len(self.statements)

    @property
    def faithfulness(self) -> float | None:
        """supported claims / claims; None when there are no claims (never 1.0 by default)."""
        if not self.claims or self.error:
            return None
        return sum(c.verdict == "supported" for c in self.claims) / len(self.claims)

    @property
    def unsupported_claims(self) -> tuple[str, ...]:
        return tuple(c.text for c in self.claims if c.verdict != "supported")


@dataclass(frozen=True)
class DatasetRef:
    """The dataset a run used, as recorded in its manifest."""

    name: str
    version: str
    sha256: str
    n_questions: int
    path: str = ""


@dataclass(frozen=True)
class JudgeRef:
    """The judge a run used, as recorded in its manifest."""

    kind: str
    model: str | None = None
    version: str | None = None
    prompt_hash: str | None = None
    metrics: tuple[str, ...] | None = None
    """The `JUDGE_METRICS` it was asked for; None in manifests written before the choice
    existed (faithfulness and correctness only)."""


@dataclass(frozen=True)
class RunManifest:
    """Run metadata (docs/pipeline.md, "A run's folder"): written first as `running`,
    rewritten at the end."""

    run_id: str
    status: RunStatus
    created_at: str
    config: Mapping[str, Any]
    dataset: DatasetRef
    judge: JudgeRef
    schema_version: int = 1
    finished_at: str | None = None
    git_commit: str | None = None
    tags: tuple[str, ...] = ()
    totals: Mapping[str, Any] = field(default_factory=dict)
    shards: int = 1
    metrics: tuple[DeclaredMetric, ...] = ()
    """The run's own per-question metrics (validated; invalid ones are dropped by the
    reader and reported as a problem of the run)."""
    source_run: str | None = None
    """The run whose answers this one judged again (`rageval rescore`); None otherwise."""
    stale_questions: Mapping[str, str] = field(default_factory=dict)
    """Question id -> why its gold no longer matches the documents: the dataset's stale
    questions the run left out (docs/datasets.md#refreshing-gold); every page says so."""
