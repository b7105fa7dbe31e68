"""What the framework adapters share: one retrieved chunk as docs/pipeline.md keys, the
per-question stage clock and token tally, and the error for an output that lacks what a
run needs."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rageval_core.errors import PipelineError

STAGES = ("retrieval", "generation")
# Where a chunk's metadata names its source document (loaders set `source`, splitters copy
# it) and its start in it (LangChain's `add_start_index=True` sets `start_index`).
DOC_ID_KEYS = ("doc_id", "source")
START_KEYS = ("start_index", "start")
# Where a chunk's metadata holds its retrieval score (rerankers and vector stores differ).
SCORE_KEYS = ("score", "relevance_score", "similarity_score")
# A uuid4 as frameworks make when no id is given: new on every load, so gold cannot name it.
_RANDOM_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def chunk(
    id: Any,
    text: str,
    score: Any = None,
    doc_id: Any = None,
    start: Any = None,
    end: Any = None,
) -> dict[str, Any]:
    """A retrieved chunk as the runner reads it (docs/pipeline.md, "Retrieved chunks"):
    `doc_id`, and `start`/`end` with it, only where the framework placed the chunk in its
    source document (character offsets, half-open)."""
    out: dict[str, Any] = {"id": str(id), "text": text}
    if isinstance(score, int | float) and not isinstance(score, bool):
        out["score"] = float(score)
    if doc_id is not None:
        out["doc_id"] = str(doc_id)
        if _offset(start) and _offset(end) and start <= end:
            out["start"], out["end"] = start, end
    return out


def _offset(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def placed(
    meta: Mapping[str, Any], text: str, doc_keys: Sequence[str], start_keys: Sequence[str]
) -> dict[str, Any]:
    """`doc_id`/`start`/`end` of a chunk from its metadata, as splitters record them (the
    first key present wins; `end` is `start` plus the text's length unless given)."""
    doc_id, start = first_present(meta, doc_keys), first_present(meta, start_keys)
    end = meta.get("end")
    if end is None and _offset(start):
        end = start + len(text)
    return {"doc_id": doc_id, "start": start, "end": end}


class Tally:
    """One question's stage times and tokens, as the framework's own hooks report them.

    A stage's time is the union of its intervals, so nested calls (a retriever calling
    retrievers) count once and parallel branches are not added up. Hooks may fire from a
    framework's worker threads, hence the lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: dict[str, list[tuple[float, float]]] = {s: [] for s in STAGES}
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None

    def add_interval(self, stage: str, start: float, end: float) -> None:
        with self._lock:
            self._spans[stage].append((start, end))

    @contextmanager
    def timed(self, stage: str | None) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            if stage is not None:
                self.add_interval(stage, start, time.perf_counter())

    def add_tokens(self, input_tokens: Any, output_tokens: Any) -> None:
        with self._lock:
            if _count(input_tokens):
                self.input_tokens = (self.input_tokens or 0) + int(input_tokens)
            if _count(output_tokens):
                self.output_tokens = (self.output_tokens or 0) + int(output_tokens)

    def ms(self, stage: str) -> float | None:
        """Milliseconds covered by the stage's intervals; None when it never ran."""
        spans = sorted(self._spans[stage])
        if not spans:
            return None
        total, (lo, hi) = 0.0, spans[0]
        for a, b in spans[1:]:
            if a > hi:
                total += hi - lo
                lo = a
            hi = max(hi, b)
        return (total + hi - lo) * 1000

    def output(self, answer: str, retrieved: list[dict[str, Any]]) -> dict[str, Any]:
        """The docs/pipeline.md dict of one question."""
        return {
            "answer": answer,
            "retrieved": retrieved,
            "retrieval_ms": self.ms("retrieval"),
            "generation_ms": self.ms("generation"),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def usage_tokens(usage: Any) -> tuple[Any, Any]:
    """(input, output) tokens of a usage mapping in any provider's spelling."""
    if not isinstance(usage, Mapping):
        return None, None
    return (
        first_present(usage, ("input_tokens", "prompt_tokens", "prompt_token_count")),
        first_present(usage, ("output_tokens", "completion_tokens", "candidates_token_count")),
    )


def first_present(values: Mapping[str, Any], keys: Sequence[str]) -> Any:
    """The value of the first of `keys` present (not None) in `values`."""
    return next((values[k] for k in keys if values.get(k) is not None), None)


def document_rows(ids_and_texts: Iterable[tuple[Any, Any]], framework: str, how: str) -> list:
    """`{id, text}` rows of a dataset's documents file from a framework's loaded documents,
    refusing what would make gold spans go stale: a missing, random (UUID) or repeated id."""
    rows, seen = [], set()
    for n, (doc_id, text) in enumerate(ids_and_texts, start=1):
        if doc_id is None or _RANDOM_ID.fullmatch(str(doc_id)):
            what = "has no id" if doc_id is None else f"has a random id {str(doc_id)!r}"
            raise missing(framework, f"document {n} {what}", how)
        if str(doc_id) in seen:
            raise missing(framework, f"document {n} repeats the id {str(doc_id)!r}", how)
        seen.add(str(doc_id))
        rows.append({"id": str(doc_id), "text": str(text or "")})
    if not rows:
        raise missing(framework, "the loader returned no documents", "return a list of them")
    return rows


def other(obj: Any, framework: str, how: str) -> Any:
    """A framework object no adapter takes: itself when callable (a pipeline already),
    else the error saying what to return instead."""
    if callable(obj):
        return obj
    raise missing(framework, f"a {type(obj).__name__} is not a pipeline", how)


def missing(framework: str, what: str, how: str) -> PipelineError:
    """The one error of a framework object whose output lacks what a run records."""
    return PipelineError(f"{framework}: {what}; {how}")


def each_of(framework: str, items: Any, kind: type, what: str, how: str) -> list[Any]:
    """`items` (None: none) as a list of `kind`, else the error naming the type it got and
    the one expected: a retriever returning strings says so, not "'str' object has no
    attribute 'content'"."""
    if items is None:
        return []
    expected = f"{kind.__module__.split('.')[0]}'s {kind.__qualname__}"
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
        raise missing(
            framework,
            f"{what}: got type {type(items).__name__}, expected a list of {expected}",
            how,
        )
    for rank, item in enumerate(items, start=1):
        if not isinstance(item, kind):
            got = type(item).__name__
            raise missing(
                framework, f"{what}: rank {rank} has type {got}, expected {expected}", how
            )
    return list(items)
