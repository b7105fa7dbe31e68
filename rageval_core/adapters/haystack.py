"""Haystack pipelines as pipelines (needs the `haystack` extra).

The question goes to every open input socket named `query`, `question` or `text` (a
retriever's query, a prompt builder's variable, a text embedder's text). The documents
are those of the last component in the documents chain (one whose `documents` output
feeds no other documents-producing component: a retriever, ranker or joiner), the answer
that of the `answers` component (an AnswerBuilder) else of the last generator, the tokens
the `usage` its replies' meta reports. Without a generator the run is retrieval-only.

Stage times come from Haystack's own tracer: it is wrapped once (whatever tracer was set,
an OpenTelemetry one included, keeps receiving every span) so each component run is timed
for the question the current context is answering — components with a `replies` output
are generation, those with `documents` or `embedding` outputs retrieval.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from haystack import Document, tracing
from haystack.core.pipeline import Pipeline
from haystack.dataclasses import ChatMessage

from rageval_core.adapters.common import (
    Tally,
    chunk,
    each_of,
    missing,
    other,
    placed,
    usage_tokens,
)
from rageval_core.errors import shown

QUESTION_SOCKETS = ("query", "question", "text")
_CURRENT: ContextVar[tuple[Tally, Mapping[str, str]] | None] = ContextVar(
    "rageval_haystack", default=None
)
_installed = threading.Lock()


class _TimingTracer(tracing.Tracer):
    """Times component runs for the current question, then defers to the tracer it wraps."""

    def __init__(self, inner: tracing.Tracer):
        self.inner = inner

    @contextlib.contextmanager
    def trace(
        self,
        operation_name: str,
        tags: dict[str, Any] | None = None,
        parent_span: tracing.Span | None = None,
    ) -> Iterator[tracing.Span]:
        current = _CURRENT.get()
        stage = None
        if current is not None and operation_name == "haystack.component.run":
            stage = current[1].get((tags or {}).get("haystack.component.name", ""))
        with self.inner.trace(operation_name, tags=tags, parent_span=parent_span) as span:
            if stage is None:
                yield span
            else:
                with current[0].timed(stage):
                    yield span

    def current_span(self) -> tracing.Span | None:
        return self.inner.current_span()


def _install() -> None:
    with _installed:
        if not isinstance(tracing.tracer.actual_tracer, _TimingTracer):
            tracing.enable_tracing(_TimingTracer(tracing.tracer.actual_tracer))


def _outputs(pipeline: Pipeline, name: str) -> Mapping[str, Any]:
    return pipeline.graph.nodes[name]["output_sockets"]


def _last(pipeline: Pipeline, socket: str) -> str | None:
    """The one component producing `socket` whose `socket` output feeds no other producer
    of it (None when none produces it; ambiguous is an error)."""
    makers = [n for n in pipeline.graph.nodes if socket in _outputs(pipeline, n)]
    last = [n for n in makers if not set(_outputs(pipeline, n)[socket].receivers) & set(makers)]
    if len(last) > 1:
        raise missing(
            "Haystack",
            f"components {sorted(last)} all end a chain of {socket!r}",
            f"join them (DocumentJoiner) so one component's {socket!r} is the pipeline's",
        )
    return last[0] if last else None


def _stage(outputs: Mapping[str, Any]) -> str | None:
    if "replies" in outputs:
        return "generation"
    if "documents" in outputs or "embedding" in outputs:
        return "retrieval"
    return None


def _reply_text(reply: Any) -> str:
    return (reply.text or "") if isinstance(reply, ChatMessage) else str(reply)


def _chunks(documents: list[Document]) -> list[dict[str, Any]]:
    out = []
    for doc in documents:
        text = doc.content or ""
        where = placed(doc.meta or {}, text, ("doc_id", "source_id"), ("start", "split_idx_start"))
        out.append(chunk(doc.id, text, doc.score, **where))
    return out


class HaystackPipeline:
    """A Haystack pipeline run once per question."""

    def __init__(self, pipeline: Pipeline):
        self.pipeline = pipeline
        self.inputs = {
            name: [s for s in sockets if s in QUESTION_SOCKETS]
            for name, sockets in pipeline.inputs().items()
        }
        if not any(self.inputs.values()):
            raise missing(
                "Haystack",
                "the pipeline has no open input named query, question or text",
                "name the retriever's or prompt builder's question input one of those",
            )
        self.documents = _last(pipeline, "documents")
        if self.documents is None:
            raise missing(
                "Haystack",
                "no component of the pipeline outputs documents",
                "add a retriever: rageval records the documents it returns",
            )
        self.answers = _last(pipeline, "answers")
        self.generators = [n for n in pipeline.graph.nodes if "replies" in _outputs(pipeline, n)]
        self.stages = {n: _stage(_outputs(pipeline, n)) for n in pipeline.graph.nodes}
        self.include = {self.documents, *self.generators} | ({self.answers} - {None})

    def __call__(self, question: str) -> dict[str, Any]:
        tally = Tally()
        data = {name: dict.fromkeys(s, question) for name, s in self.inputs.items() if s}
        token = _CURRENT.set((tally, self.stages))
        try:
            result = self.pipeline.run(data, include_outputs_from=self.include)
        finally:
            _CURRENT.reset(token)
        documents = each_of(
            "Haystack",
            result.get(self.documents, {}).get("documents"),
            Document,
            f"the documents of component {shown(self.documents, 60)}",
            "return haystack Document objects (Document(content=..., meta=...))",
        )
        answer = ""
        if self.answers is not None:
            answers = result.get(self.answers, {}).get("answers") or []
            answer = (answers[0].data or "") if answers else ""
        for name in self.generators:
            out = result.get(name, {})
            replies = out.get("replies") or []
            if self.answers is None and name == self.generators[-1] and replies:
                answer = _reply_text(replies[0])
            metas = [r.meta for r in replies if isinstance(r, ChatMessage)] + list(
                out.get("meta") or []
            )
            for meta in metas:
                tally.add_tokens(*usage_tokens((meta or {}).get("usage")))
        return tally.output(answer, _chunks(documents))


def adapt(obj: Any) -> Any:
    if isinstance(obj, Pipeline):
        _install()
        return HaystackPipeline(obj)
    return other(
        obj,
        "Haystack",
        "return a haystack Pipeline with a retriever (and a generator)",
    )
