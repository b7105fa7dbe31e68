"""LangChain runnables and retrievers as pipelines (needs the `langchain` extra).

A runnable is invoked with the question (a string, or `{key: question}` when its input
schema is an object: `input`, `question` or `query`, else its one required key). Its output
may be any of the documented "return sources" shapes: a dict holding the answer (`answer`,
`result`, `output`, `text`, `response`) beside its documents (`context`,
`source_documents`, `documents`, `docs`, `sources`), as `create_retrieval_chain`,
`RetrievalQA(return_source_documents=True)` and `RunnablePassthrough.assign(answer=...)`
return; or only the answer (a string or a message), the documents then being those the
last retriever to finish returned; or a list of documents (a retriever: retrieval-only).

Stage times, tokens and those documents come from a callback handler passed with each
call (one per question, so the run's threads never mix): retriever runs are the retrieval
stage, LLM and chat-model runs the generation stage, tokens the messages'
`usage_metadata` (else the LLM's `token_usage`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable

from rageval_core.adapters.common import (
    DOC_ID_KEYS,
    SCORE_KEYS,
    START_KEYS,
    Tally,
    chunk,
    document_rows,
    each_of,
    missing,
    other,
    placed,
    usage_tokens,
)

ANSWER_KEYS = ("answer", "result", "output", "text", "response")
DOCUMENT_KEYS = ("context", "source_documents", "documents", "docs", "sources")
INPUT_KEYS = ("input", "question", "query")
HOW_TO_RETURN = (
    "return {'answer': ..., 'context': docs}, e.g. "
    "RunnableParallel(context=retriever, question=RunnablePassthrough())"
    ".assign(answer=prompt | llm | StrOutputParser())"
)


class _Recorder(BaseCallbackHandler):
    """One question's stage times, tokens and the last retriever's documents."""

    def __init__(self) -> None:
        self.tally = Tally()
        self.started: dict[UUID, float] = {}
        self.documents: Sequence[Document] | None = None

    def _start(self, run_id: UUID) -> None:
        self.started[run_id] = time.perf_counter()

    def _end(self, stage: str, run_id: UUID) -> None:
        start = self.started.pop(run_id, None)
        if start is not None:
            self.tally.add_interval(stage, start, time.perf_counter())

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID, **kw: Any) -> None:
        self._start(run_id)

    def on_retriever_end(self, documents: Sequence[Document], *, run_id: UUID, **kw: Any) -> None:
        self._end("retrieval", run_id)
        self.documents = documents

    def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: UUID, **kw: Any) -> None:
        self._start(run_id)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **kw: Any
    ) -> None:
        self._start(run_id)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kw: Any) -> None:
        self._end("generation", run_id)
        reported = [
            g.message.usage_metadata
            for gens in response.generations
            for g in gens
            if isinstance(g, ChatGeneration) and getattr(g.message, "usage_metadata", None)
        ]
        if not reported and response.llm_output:
            reported = [response.llm_output.get("token_usage")]
        for usage in reported:
            self.tally.add_tokens(*usage_tokens(usage))


def _text(value: Any) -> str | None:
    """An answer value as text: a string, or a message's text."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseMessage):
        return value.text if isinstance(value.text, str) else str(value.content)
    return None


def _documents(value: Any) -> Sequence[Document] | None:
    if isinstance(value, Sequence) and all(isinstance(d, Document) for d in value):
        return value
    return None


def _chunks(documents: Sequence[Document]) -> list[dict[str, Any]]:
    out = []
    for rank, doc in enumerate(documents, start=1):
        meta = doc.metadata or {}
        cid = doc.id if doc.id is not None else meta.get("id")
        if cid is None:
            raise missing(
                "LangChain",
                f"the document at rank {rank} has no id",
                "give documents ids (Document(id=...), or vector_store.add_documents(docs, "
                "ids=...)): the default ids are random and cannot match gold",
            )
        score = next((meta[k] for k in SCORE_KEYS if meta.get(k) is not None), None)
        where = placed(meta, doc.page_content, DOC_ID_KEYS, START_KEYS)
        out.append(chunk(cid, doc.page_content, score, **where))
    return out


def _answer_and_documents(
    output: Any, recorder: _Recorder
) -> tuple[str, Sequence[Document] | None]:
    docs = _documents(output)
    if docs is not None:
        return "", docs  # a retriever, or a chain ending in one
    if isinstance(output, Mapping):
        answer = next((output[k] for k in ANSWER_KEYS if k in output), None)
        text = _text(answer)
        if text is None:
            raise missing(
                "LangChain",
                f"the runnable returned a dict with keys {sorted(map(str, output))[:8]} and "
                "no answer text",
                HOW_TO_RETURN,
            )
        found = (_documents(output[k]) for k in DOCUMENT_KEYS if k in output)
        return text, next((d for d in found if d is not None), recorder.documents)
    text = _text(output)
    if text is None and isinstance(output, Sequence) and not isinstance(output, str | bytes):
        each_of("LangChain", output, Document, "the runnable returned a list", HOW_TO_RETURN)
    if text is None:
        raise missing(
            "LangChain",
            f"the runnable returned {type(output).__name__}, neither an answer nor documents",
            HOW_TO_RETURN,
        )
    return text, recorder.documents


def _input_key(runnable: Runnable) -> str | None:
    """The key to pass the question under, or None to pass it as a string."""
    try:
        schema = runnable.get_input_jsonschema()
    except Exception:  # an input type pydantic cannot describe: pass the text
        return None
    props = schema.get("properties") if schema.get("type") == "object" else None
    if not props:
        return None
    key = next((k for k in INPUT_KEYS if k in props), None)
    required = schema.get("required") or []
    if key is None and len(required) == 1:
        key = required[0]
    if key is None:
        raise missing(
            "LangChain",
            f"the runnable takes an object with keys {sorted(props)[:8]}, none of them the "
            "question",
            f"name its question input one of {', '.join(INPUT_KEYS)}",
        )
    return key


class RunnablePipeline:
    """A LangChain runnable (or retriever) invoked once per question."""

    def __init__(self, runnable: Runnable):
        self.runnable = runnable
        self.key = _input_key(runnable)

    def __call__(self, question: str) -> dict[str, Any]:
        recorder = _Recorder()
        value: Any = question if self.key is None else {self.key: question}
        output = self.runnable.invoke(value, config={"callbacks": [recorder]})
        answer, docs = _answer_and_documents(output, recorder)
        if docs is None:
            raise missing(
                "LangChain",
                "the runnable's output holds no documents and no retriever ran",
                HOW_TO_RETURN,
            )
        return recorder.tally.output(answer, _chunks(docs))


def documents(loaded: Sequence[Document]) -> list[dict[str, str]]:
    """The documents file rows of loaded (unsplit) LangChain documents, each named as its
    chunks will name it: `metadata['doc_id']`, else the loader's `metadata['source']`."""
    return document_rows(
        (
            (next((d.metadata[k] for k in DOC_ID_KEYS if d.metadata.get(k)), None), d.page_content)
            for d in loaded
        ),
        "LangChain",
        "give each document metadata['doc_id'] (or the loader's metadata['source']), one "
        "per document; split with add_start_index=True so chunks keep their offsets",
    )


def adapt(obj: Any) -> Any:
    if isinstance(obj, BaseRetriever | Runnable):
        return RunnablePipeline(obj)
    return other(
        obj,
        "LangChain",
        "return a runnable chain or a retriever (vector_store.as_retriever())",
    )
