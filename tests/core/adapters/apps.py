"""Small RAG apps built with the real frameworks, offline: each framework's own mock LLM
(or, for Haystack, which ships none, a tiny generator component) and a deterministic
hashing embedding, over one three-document handbook. Factories for run configs too
(`tests.core.adapters.apps:llamaindex_engine`)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import import_or_skip_unless_ci

# Telemetry to Haystack's servers is on by default and read when haystack is imported.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

DOCUMENTS = {
    "search-guide": (
        "Hybrid search mixes keyword scores with vector similarity. "
        "Use hybrid search when queries contain exact product codes. "
        "Pure vector search misses rare identifiers such as part numbers. "
        "The keyword side is usually BM25 over an inverted index."
    ),
    "office": (
        "The office opens at nine in the morning. "
        "Lunch is served in the canteen at noon. "
        "Visitors sign in at the front desk on the ground floor."
    ),
    "billing": (
        "Invoices are sent on the first day of each month. "
        "A refund takes five working days to reach the card. "
        "Annual plans are billed once with a discount of two months."
    ),
}
QUESTIONS = [
    ("q1", "When should I use hybrid search with product codes?", "exact product codes"),
    ("q2", "When does the office open in the morning?", "opens at nine"),
    ("q3", "How long does a refund take to reach the card?", "five working days"),
    ("q4", "What is the CEO's shoe size?", None),
]
DIM = 64


def hashed(text: str) -> list[float]:
    """A bag-of-words vector of hashed lowercase words, unit length: deterministic, and
    questions land near the chunks that share their words."""
    v = [0.0] * DIM
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        v[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIM] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


def sentences(text: str) -> list[tuple[int, str]]:
    """(start offset, sentence) of each sentence: the hand-made chunking."""
    return [(m.start(), m.group()) for m in re.finditer(r"[^.\s][^.]*\.", text)]


def write_dataset(folder: Path, chunks: Iterable[tuple[str, str, str]]) -> Path:
    """A golden dataset over `chunks` (id, doc_id, text): gold is the chunk holding each
    question's key phrase (none: unanswerable)."""
    chunks = list(chunks)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w") as fh:
        for cid, doc_id, text in chunks:
            fh.write(json.dumps({"id": cid, "doc_id": doc_id, "text": text}) + "\n")
    questions = []
    for qid, question, phrase in QUESTIONS:
        gold = [c for c, _, t in chunks if phrase and phrase in t]
        entry: dict[str, Any] = {"id": qid, "question": question, "gold_chunk_ids": gold}
        if phrase:
            entry["reference_answer"] = phrase
        questions.append(entry)
    doc = {"name": "handbook", "version": "1", "corpus": "corpus.jsonl", "questions": questions}
    path = folder / "dataset.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def write_span_dataset(folder: Path, documents: Sequence[dict[str, str]]) -> Path:
    """A span dataset over `documents` (documents file rows): gold is each question's key
    phrase quoted in the document holding it (none: unanswerable)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "documents.jsonl"
    out.write_text("".join(json.dumps(d) + "\n" for d in documents))
    questions = []
    for qid, question, phrase in QUESTIONS:
        entry: dict[str, Any] = {"id": qid, "question": question}
        if phrase:
            doc = next(d["id"] for d in documents if phrase in d["text"])
            entry["gold_spans"] = [{"doc_id": doc, "text": phrase}]
            entry["reference_answer"] = phrase
        else:
            entry["answerable"] = False
        questions.append(entry)
    doc = {"name": "handbook-spans", "version": "1", "documents": out.name, "questions": questions}
    path = folder / "dataset.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def by_hand(engine: Any) -> Any:
    """The framework object's chunks as a plain pipeline would give them: id, text and
    score only (placed by their text)."""
    from rageval_core.adapters import adapt

    ask = adapt(engine)

    def pipeline(question: str) -> dict:
        out = ask(question)
        return {
            "answer": out["answer"],
            "retrieved": [{k: c[k] for k in ("id", "text", "score")} for c in out["retrieved"]],
        }

    return pipeline


# ---------------------------------------------------------------------------- LlamaIndex


def llamaindex_embedding() -> Any:
    """LlamaIndex's embedding interface over `hashed`."""
    from llama_index.core.embeddings import BaseEmbedding

    class HashingEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return hashed(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return hashed(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return hashed(text)

    return HashingEmbedding()


def llamaindex_parts(chunk_size: int = 24) -> tuple[Any, list[Any]]:
    """A vector index over the handbook (node ids `doc#i`) and its nodes."""
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter

    docs = [Document(text=t, id_=d) for d, t in DOCUMENTS.items()]
    splitter = SentenceSplitter(
        chunk_size=chunk_size, chunk_overlap=0, id_func=lambda i, doc: f"{doc.doc_id}#{i}"
    )
    nodes = splitter.get_nodes_from_documents(docs)
    return VectorStoreIndex(nodes, embed_model=llamaindex_embedding()), nodes


def llamaindex_sentence_window_engine(top_k: int = 2) -> Any:
    """LlamaIndex's sentence-window pattern: one node per sentence (its offsets), the
    sentences around it as `window` metadata, which the postprocessor puts in its place:
    the recorded text is the window, the offsets stay the sentence's."""
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.node_parser import SentenceWindowNodeParser
    from llama_index.core.postprocessor import MetadataReplacementPostProcessor

    docs = [Document(text=t, id_=d) for d, t in DOCUMENTS.items()]
    nodes = SentenceWindowNodeParser.from_defaults(window_size=1).get_nodes_from_documents(docs)
    index = VectorStoreIndex(nodes, embed_model=llamaindex_embedding())
    return index.as_query_engine(
        llm=MockLLM(max_tokens=6),
        similarity_top_k=top_k,
        node_postprocessors=[MetadataReplacementPostProcessor(target_metadata_key="window")],
    )


def write_handbook(folder: Path) -> Path:
    """The handbook as one text file per document, as an app's `data/` folder holds it."""
    folder.mkdir(parents=True, exist_ok=True)
    for doc_id, text in DOCUMENTS.items():
        (folder / f"{doc_id}.txt").write_text(text)
    return folder


def llamaindex_directory_documents(folder: str | Path) -> list[Any]:
    """The documented loader: `SimpleDirectoryReader(..., filename_as_id=True)`, whose
    document ids are the files' absolute paths."""
    from llama_index.core import SimpleDirectoryReader

    return SimpleDirectoryReader(str(folder), filename_as_id=True).load_data()


def llamaindex_directory_engine(folder: str | Path, top_k: int = 2) -> Any:
    """A query engine over the files of `folder`, loaded with `filename_as_id=True`."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.node_parser import SentenceSplitter

    docs = llamaindex_directory_documents(folder)
    # the file's path counts against the chunk size: a chunk of 24 tokens leaves no room
    nodes = SentenceSplitter(chunk_size=96, chunk_overlap=0).get_nodes_from_documents(docs)
    index = VectorStoreIndex(nodes, embed_model=llamaindex_embedding())
    return index.as_query_engine(llm=MockLLM(max_tokens=6), similarity_top_k=top_k)


def llamaindex_engine(top_k: int = 2) -> Any:
    """The factory of a run config: a query engine answering with MockLLM."""
    from llama_index.core.llms import MockLLM

    index, _ = llamaindex_parts()
    return index.as_query_engine(llm=MockLLM(max_tokens=6), similarity_top_k=top_k)


def llamaindex_retriever(top_k: int = 2) -> Any:
    index, _ = llamaindex_parts()
    return index.as_retriever(similarity_top_k=top_k)


def llamaindex_documents() -> list[Any]:
    """`rageval dataset documents --from-llamaindex` input: the loaded documents."""
    from llama_index.core import Document

    return [Document(text=t, id_=d) for d, t in DOCUMENTS.items()]


# ---------------------------------------------------------------------------- LangChain

LANGCHAIN_USAGE = {"input_tokens": 40, "output_tokens": 7, "total_tokens": 47}


def langchain_chunks() -> list[Any]:
    """Sentence chunks with stable ids and their place in the source (`start_index`)."""
    from langchain_core.documents import Document

    return [
        Document(
            id=f"{doc_id}#{i}",
            page_content=text,
            metadata={"source": doc_id, "start_index": start},
        )
        for doc_id, body in DOCUMENTS.items()
        for i, (start, text) in enumerate(sentences(body))
    ]


def langchain_retriever(top_k: int = 2) -> Any:
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class HashingEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [hashed(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return hashed(text)

    store = InMemoryVectorStore(HashingEmbeddings())
    store.add_documents(langchain_chunks())
    return store.as_retriever(search_kwargs={"k": top_k})


def langchain_llm() -> Any:
    """A fake chat model whose replies carry usage metadata, as a provider's do."""
    import itertools

    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    reply = AIMessage(content="Use it for exact codes.", usage_metadata=LANGCHAIN_USAGE)
    return GenericFakeChatModel(messages=itertools.repeat(reply))


def langchain_chain(top_k: int = 2) -> Any:
    """The documented "return sources" chain: {context, question, answer}."""
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableParallel, RunnablePassthrough

    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    return RunnableParallel(
        context=langchain_retriever(top_k), question=RunnablePassthrough()
    ).assign(answer=prompt | langchain_llm() | StrOutputParser())


def langchain_documents() -> list[Any]:
    from langchain_core.documents import Document

    return [Document(page_content=t, metadata={"source": d}) for d, t in DOCUMENTS.items()]


# ---------------------------------------------------------------------------- Haystack

HAYSTACK_USAGE = {"prompt_tokens": 30, "completion_tokens": 5}


def haystack_pipeline(top_k: int = 2, generator: bool = True) -> Any:
    """BM25 over sentence splits (DocumentSplitter records source_id and split_idx_start),
    a prompt builder and a generator component."""
    from haystack import Document, Pipeline, component
    from haystack.components.builders import PromptBuilder
    from haystack.components.preprocessors import DocumentSplitter
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    @component
    class FixedGenerator:
        """Haystack ships no mock generator: this one answers one line with usage."""

        @component.output_types(replies=list[str], meta=list[dict[str, Any]])
        def run(self, prompt: str) -> dict[str, Any]:
            return {"replies": ["Use it for exact codes."], "meta": [{"usage": HAYSTACK_USAGE}]}

    splitter = DocumentSplitter(split_by="period", split_length=1, split_overlap=0)
    docs = [Document(id=d, content=t) for d, t in DOCUMENTS.items()]
    store = InMemoryDocumentStore()
    store.write_documents(splitter.run(docs)["documents"])
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(store, top_k=top_k))
    if generator:
        template = "{% for d in documents %}{{ d.content }}\n{% endfor %}Question: {{ question }}"
        pipeline.add_component(
            "prompt", PromptBuilder(template=template, required_variables=["question"])
        )
        pipeline.add_component("llm", FixedGenerator())
        pipeline.connect("retriever.documents", "prompt.documents")
        pipeline.connect("prompt.prompt", "llm.prompt")
    return pipeline


def haystack_store_chunks(pipeline: Any) -> list[tuple[str, str, str]]:
    store = pipeline.get_component("retriever").document_store
    return [(d.id, d.meta["source_id"], d.content) for d in store.filter_documents()]


def chunk_rows(chunks: Sequence[Any], kind: str) -> list[tuple[str, str, str]]:
    """(id, doc_id, text) of LlamaIndex nodes or LangChain documents."""
    if kind == "llamaindex":
        return [(n.node_id, n.ref_doc_id, n.text) for n in chunks]
    return [(d.id, d.metadata["source"], d.page_content) for d in chunks]


EXTRAS = {
    "llamaindex": ("llama_index.core", "pip install 'rageval[llamaindex]'"),
    "langchain": ("langchain_core", "pip install 'rageval[langchain]'"),
    "haystack": ("haystack", "pip install 'rageval[haystack]'"),
}


def need(framework: str) -> None:
    """Skip without the framework's extra; under CI=true, fail (tests/conftest.py)."""
    import_or_skip_unless_ci(*EXTRAS[framework])
