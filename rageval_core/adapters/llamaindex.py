"""LlamaIndex query engines and retrievers as pipelines (needs the `llamaindex` extra).

The answer and the source nodes come from the engine's `Response`; each node keeps its id,
score, source document (`ref_doc_id`) and character offsets (`start_char_idx`,
`end_char_idx`). Stage times and tokens come from LlamaIndex's instrumentation: one event
handler on the root dispatcher, added once, files each event under the question the
current context is answering (a ContextVar, so the run's threads never mix questions).
Tokens are the usage the LLM reports; where it reports none (MockLLM, some local models)
LlamaIndex's own tokenizer counts them, as its TokenCountingHandler does. A call that
makes another (a CustomLLM's `chat` calls its `complete`) is counted once, innermost.
"""

from __future__ import annotations

import threading
import time
from contextvars import ContextVar
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks.token_counting import get_tokens_from_response
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import (
    LLMChatEndEvent,
    LLMChatStartEvent,
    LLMCompletionEndEvent,
    LLMCompletionStartEvent,
)
from llama_index.core.instrumentation.events.retrieval import (
    RetrievalEndEvent,
    RetrievalStartEvent,
)
from llama_index.core.instrumentation.events.synthesis import (
    SynthesizeEndEvent,
    SynthesizeStartEvent,
)
from llama_index.core.schema import MetadataMode, NodeWithScore
from llama_index.core.utilities.token_counting import TokenCounter

from rageval_core.adapters.common import Tally, chunk, document_rows, each_of, missing, other

_CURRENT: ContextVar[_Question | None] = ContextVar("rageval_llamaindex", default=None)
_STARTS = {RetrievalStartEvent: "retrieval", SynthesizeStartEvent: "generation"}
_ENDS = {RetrievalEndEvent: "retrieval", SynthesizeEndEvent: "generation"}
_installed = threading.Lock()
_handler: _Handler | None = None


class _Question:
    """The tally of the question being answered, with its open stages' start times."""

    def __init__(self) -> None:
        self.tally = Tally()
        self.open: dict[str, list[float]] = {"retrieval": [], "generation": []}
        # Per open LLM call, whether a call inside it was counted: a CustomLLM's `chat`
        # calls its `complete`, both fire events, and the call is counted once, innermost
        # (as importers/otel.py counts a traced call).
        self.llm_calls: list[bool] = []


class _Handler(BaseEventHandler):
    """Files LlamaIndex's events under the current question (none: not ours, ignored)."""

    @classmethod
    def class_name(cls) -> str:
        return "RagevalHandler"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        question = _CURRENT.get()
        if question is None:
            return
        now = time.perf_counter()
        kind = type(event)
        if kind in _STARTS:
            question.open[_STARTS[kind]].append(now)
        elif kind in _ENDS and question.open[_ENDS[kind]]:
            question.tally.add_interval(_ENDS[kind], question.open[_ENDS[kind]].pop(), now)
        elif isinstance(event, LLMChatStartEvent | LLMCompletionStartEvent):
            question.llm_calls.append(False)
        elif isinstance(event, LLMChatEndEvent | LLMCompletionEndEvent):
            counted = question.llm_calls.pop() if question.llm_calls else False
            if event.response and not counted:
                question.tally.add_tokens(*_tokens(event))
                counted = True
            if counted and question.llm_calls:
                question.llm_calls[-1] = True


def _tokens(event: LLMChatEndEvent | LLMCompletionEndEvent) -> tuple[int, int]:
    """(input, output) tokens of one LLM call: reported usage, else LlamaIndex's count."""
    prompt, completion = get_tokens_from_response(event.response)
    counter = TokenCounter()
    if not prompt:
        if isinstance(event, LLMChatEndEvent):
            prompt = counter.estimate_tokens_in_messages(event.messages)
        else:
            prompt = counter.get_string_tokens(event.prompt)
    if not completion:
        completion = counter.get_string_tokens(str(event.response))
    return prompt, completion


def _install() -> None:
    global _handler
    with _installed:
        if _handler is None:
            _handler = _Handler()
            get_dispatcher().add_event_handler(_handler)


def _answering(call: Any, question: str) -> tuple[Any, Tally]:
    """`call(question)` with its events filed under a fresh tally."""
    current = _Question()
    token = _CURRENT.set(current)
    try:
        return call(question), current.tally
    finally:
        _CURRENT.reset(token)


def _chunks(nodes: list[NodeWithScore]) -> list[dict[str, Any]]:
    return [
        chunk(
            n.node.node_id,
            n.node.get_content(metadata_mode=MetadataMode.NONE),
            n.score,
            n.node.ref_doc_id,
            getattr(n.node, "start_char_idx", None),
            getattr(n.node, "end_char_idx", None),
        )
        for n in nodes
    ]


def _nodes(nodes: Any) -> list[NodeWithScore]:
    return each_of(
        "LlamaIndex",
        nodes,
        NodeWithScore,
        "the source nodes",
        "return NodeWithScore(node=TextNode(...), score=...) from a custom retriever or engine",
    )


class QueryEngine:
    """A LlamaIndex query engine asked one question per call."""

    def __init__(self, engine: BaseQueryEngine):
        self.engine = engine

    def __call__(self, question: str) -> dict[str, Any]:
        response, tally = _answering(self.engine.query, question)
        if hasattr(response, "get_response"):  # streaming: drain it
            response = response.get_response()
        nodes = getattr(response, "source_nodes", None)
        if nodes is None:
            raise missing(
                "LlamaIndex",
                f"the query engine returned {type(response).__name__}, which has no source_nodes",
                "return a Response (any RetrieverQueryEngine does), or hand rageval the "
                "engine's retriever for a retrieval-only run",
            )
        answer = getattr(response, "response", None)
        return tally.output("" if answer is None else str(answer), _chunks(_nodes(nodes)))


class Retriever:
    """A LlamaIndex retriever: a retrieval-only run (the answer is empty)."""

    def __init__(self, retriever: BaseRetriever):
        self.retriever = retriever

    def __call__(self, question: str) -> dict[str, Any]:
        nodes, tally = _answering(self.retriever.retrieve, question)
        return tally.output("", _chunks(_nodes(nodes)))


def documents(loaded: Any) -> list[dict[str, str]]:
    """The documents file rows of loaded LlamaIndex documents: the id each node keeps as
    `ref_doc_id`, the text its `start_char_idx`/`end_char_idx` index."""
    return document_rows(
        ((d.doc_id, d.get_content(metadata_mode=MetadataMode.NONE)) for d in loaded),
        "LlamaIndex",
        "give each document a stable id: Document(id_=...) or "
        "SimpleDirectoryReader(..., filename_as_id=True)",
    )


def adapt(obj: Any) -> Any:
    if isinstance(obj, BaseQueryEngine):
        _install()
        return QueryEngine(obj)
    if isinstance(obj, BaseRetriever):
        _install()
        return Retriever(obj)
    return other(
        obj,
        "LlamaIndex",
        "return a query engine (index.as_query_engine()) or a retriever (index.as_retriever())",
    )
