"""Frozen dataclasses that cross module boundaries.

Dicts exist only at the I/O edge (YAML, JSON, Parquet rows); everything inside the
library passes these typed values. This module must not do I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from rageval_core.errors import PipelineError

Verdict = Literal["supported", "unsupported", "contradicted"]
VERDICTS: tuple[str, ...] = get_args(Verdict)

# Order matters: a question gets the first type that applies (docs/metrics.md).
FailureType = Literal[
    "error",
    "missed_refusal",
    "false_refusal",
    "retrieval_miss",
    "ranking_miss",
    "unfaithful",
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
class GoldenQuestion:
    """A question with its reference answer and gold chunk ids; no gold = unanswerable."""

    id: str
    question: str
    reference_answer: str | None
    gold_chunk_ids: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        return bool(self.gold_chunk_ids)


@dataclass(frozen=True)
class GoldenDataset:
    """A validated golden dataset; `sha256` identifies the exact content used by a run."""

    name: str
    version: str
    path: str
    questions: tuple[GoldenQuestion, ...]
    corpus: tuple[Chunk, ...]
    sha256: str

    def chunk_map(self) -> dict[str, Chunk]:
        return {c.id: c for c in self.corpus}


@dataclass(frozen=True)
class RetrievedChunk:
    """One ranked chunk returned by a pipeline."""

    id: str
    text: str
    score: float | None = None


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

    @classmethod
    def from_value(cls, value: Any) -> PipelineOutput:
        if isinstance(value, PipelineOutput):
            return value
        if not isinstance(value, Mapping):
            raise PipelineError(
                f"pipeline returned {type(value).__name__}; expected PipelineOutput or dict"
            )
        answer = value.get("answer")
        if not isinstance(answer, str):
            raise PipelineError("pipeline output field 'answer' must be a string")
        items = value.get("retrieved") or []
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise PipelineError(
                f"pipeline output field 'retrieved' must be a list of chunks, "
                f"got {type(items).__name__}"
            )
        retrieved = []
        for i, item in enumerate(items):
            if isinstance(item, RetrievedChunk):
                retrieved.append(item)
                continue
            if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
                raise PipelineError(f"pipeline output retrieved[{i}] needs a string 'id'")
            score = item.get("score")
            if score is not None and (
                isinstance(score, bool) or not isinstance(score, (int, float))
            ):
                raise PipelineError(f"pipeline output retrieved[{i}].score must be a number")
            retrieved.append(
                RetrievedChunk(
                    id=item["id"],
                    text=str(item.get("text") or ""),
                    score=None if score is None else float(score),
                )
            )

        def num(key: str, kind: type) -> Any:
            raw = value.get(key)
            if raw is None:
                return None
            if isinstance(raw, bool) or not isinstance(raw, (int, float)):
                raise PipelineError(f"pipeline output field '{key}' must be a number")
            return kind(raw)

        return cls(
            answer=answer,
            scores=_scores(value.get("scores")),
            retrieved=tuple(retrieved),
            retrieval_ms=num("retrieval_ms", float),
            generation_ms=num("generation_ms", float),
            ttft_ms=num("ttft_ms", float),
            input_tokens=num("input_tokens", int),
            output_tokens=num("output_tokens", int),
        )


def _scores(raw: Any) -> dict[str, Any]:
    """`scores` of a pipeline output as a dict. Names and values are checked by the runner
    against the run's declarations, where an error can name the question."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise PipelineError(
            f"pipeline output field 'scores' must be a mapping, got {type(raw).__name__}"
        )
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
        return {
            "text": self.text,
            "verdict": self.verdict,
            "evidence_chunk_id": self.evidence_chunk_id,
            "evidence": self.evidence,
            "reason": self.reason,
        }


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
