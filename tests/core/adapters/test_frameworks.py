"""Each adapter against the real framework, offline: the run's rows hold the answer, the
ranked chunks, tokens and stage times; chunks carry their offsets into the source."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import rageval_core
from rageval_core.adapters import adapt
from rageval_core.cli import main
from rageval_core.errors import ConfigError, PipelineError
from tests.core.adapters import apps
from tests.core.adapters.apps import EXTRAS, need
from tests.core.adapters.pages import open_every_page


def built(framework: str):
    """(pipeline object, its chunks as (id, doc_id, text), tokens per question or None
    where the framework counts them)."""
    need(framework)
    if framework == "llamaindex":
        _, nodes = apps.llamaindex_parts()
        return apps.llamaindex_engine(), apps.chunk_rows(nodes, "llamaindex"), None
    if framework == "langchain":
        chunks = apps.chunk_rows(apps.langchain_chunks(), "langchain")
        usage = apps.LANGCHAIN_USAGE
        return apps.langchain_chain(), chunks, (usage["input_tokens"], usage["output_tokens"])
    pipeline = apps.haystack_pipeline()
    usage = apps.HAYSTACK_USAGE
    return (
        pipeline,
        apps.haystack_store_chunks(pipeline),
        (usage["prompt_tokens"], usage["completion_tokens"]),
    )


@pytest.mark.parametrize("framework", list(EXTRAS))
def test_a_framework_run_records_answer_ranked_chunks_tokens_and_stage_times(framework, tmp_path):
    obj, chunks, tokens = built(framework)
    dataset = apps.write_dataset(tmp_path / "data", chunks)
    result = rageval_core.evaluate(
        obj, dataset, results=tmp_path / "results", progress=False, concurrency=4
    )
    assert result.status == "complete"
    rows = result.rows.set_index("question_id")
    assert rows["error"].isna().all(), rows["error"].tolist()
    assert (rows["answer"].str.len() > 0).all()
    assert all(len(ids) == 2 for ids in rows["retrieved_ids"])
    for qid in ("q1", "q2", "q3"):  # the hashing embedding / BM25 ranks the gold first
        assert rows.loc[qid, "retrieved_ids"][0] in rows.loc[qid, "gold_ids"], qid
        assert rows.loc[qid, "recall_at_1"] == 1.0
    texts = {cid: text for cid, _, text in chunks}
    for ids, got in zip(rows["retrieved_ids"], rows["retrieved_texts"], strict=True):
        assert [texts[i] for i in ids] == list(got)
    assert (rows["retrieval_ms"] > 0).all() and (rows["generation_ms"] > 0).all()
    assert (rows["total_ms"] >= rows["retrieval_ms"] + rows["generation_ms"] - 1e-6).all()
    if tokens is None:  # LlamaIndex counts MockLLM's prompt and reply with its tokenizer
        assert (rows["input_tokens"] > 20).all() and (rows["output_tokens"] == 6).all()
    else:
        assert rows["input_tokens"].tolist() == [tokens[0]] * len(rows)
        assert rows["output_tokens"].tolist() == [tokens[1]] * len(rows)


def test_framework_runs_open_on_every_page(tmp_path, monkeypatch):
    results = tmp_path / "results"
    for framework in EXTRAS:
        obj, chunks, _ = built(framework)
        dataset = apps.write_dataset(tmp_path / framework, chunks)
        run = rageval_core.evaluate(obj, dataset, results=results, run_id=framework, progress=False)
        assert run.status == "complete"
    open_every_page(monkeypatch, results, "haystack", "llamaindex")
    open_every_page(monkeypatch, results, "langchain", "haystack")


@pytest.mark.parametrize("framework", list(EXTRAS))
def test_every_chunk_carries_its_document_and_the_offsets_of_its_text(framework):
    obj, _, _ = built(framework)
    ask = adapt(obj)
    for _, question, _ in apps.QUESTIONS:
        out = ask(question)
        assert out["retrieved"], question
        scores = [c.get("score") for c in out["retrieved"]]
        if framework != "langchain":  # LangChain retrievers return no scores
            assert scores == sorted(scores, reverse=True)
        for c in out["retrieved"]:
            source = apps.DOCUMENTS[c["doc_id"]]
            assert source[c["start"] : c["end"]] == c["text"], c


def test_tokens_stay_with_their_question_under_concurrency(tmp_path):
    """LlamaIndex's events reach one global handler; each must land on its own question."""
    need("llamaindex")
    _, nodes = apps.llamaindex_parts()
    dataset = apps.write_dataset(tmp_path / "data", apps.chunk_rows(nodes, "llamaindex"))
    engine = apps.llamaindex_engine()
    serial = adapt(engine)
    expected = {q: serial(text)["input_tokens"] for q, text, _ in apps.QUESTIONS}
    assert len(set(expected.values())) > 1  # the prompts differ, so mixing would show
    for n in range(3):
        run = rageval_core.evaluate(
            engine,
            dataset,
            results=tmp_path / "r",
            run_id=f"run-{n}",
            concurrency=4,
            progress=False,
        )
        assert dict(zip(run.rows["question_id"], run.rows["input_tokens"], strict=True)) == expected


def test_a_run_config_factory_may_return_a_query_engine(tmp_path, capsys):
    need("llamaindex")
    _, nodes = apps.llamaindex_parts()
    dataset = apps.write_dataset(tmp_path / "data", apps.chunk_rows(nodes, "llamaindex"))
    config = tmp_path / "run.yaml"
    config.write_text(
        json.dumps(
            {
                "name": "llamaindex",
                "dataset": str(dataset),
                "pipeline": {
                    "factory": "tests.core.adapters.apps:llamaindex_engine",
                    "params": {"top_k": 3},
                },
            }
        )
    )
    results = tmp_path / "results"
    assert main(["run", str(config), "--results", str(results), "--run-id", "li"]) == 0
    import pyarrow.parquet as pq

    rows = pq.read_table(results / "li" / "questions.parquet").to_pylist()
    assert [len(r["retrieved_ids"]) for r in rows] == [3] * 4
    assert all(r["input_tokens"] and r["answer"] for r in rows)


@pytest.mark.parametrize("framework", ["llamaindex", "langchain", "haystack"])
def test_a_retriever_alone_makes_a_retrieval_only_run(framework, tmp_path):
    need(framework)
    obj = {
        "llamaindex": apps.llamaindex_retriever,
        "langchain": apps.langchain_retriever,
        "haystack": lambda: apps.haystack_pipeline(generator=False),
    }[framework]()
    out = adapt(obj)(apps.QUESTIONS[0][1])
    assert out["answer"] == "" and len(out["retrieved"]) == 2
    assert out["retrieval_ms"] > 0 and out["generation_ms"] is None
    assert out["input_tokens"] is None


# ---------------------------------------------------------------------------- errors


def test_langchain_output_without_an_answer_names_what_is_missing_and_how(tmp_path):
    need("langchain")
    from langchain_core.runnables import RunnableParallel, RunnablePassthrough

    chain = RunnableParallel(context=apps.langchain_retriever(), question=RunnablePassthrough())
    with pytest.raises(PipelineError, match=r"no answer text; return \{'answer'"):
        adapt(chain)("q")
    _, chunks, _ = built("langchain")
    run = rageval_core.evaluate(
        chain, apps.write_dataset(tmp_path / "d", chunks), results=tmp_path / "r", progress=False
    )
    assert run.rows["error"].str.contains("LangChain: the runnable returned a dict").all()


def test_langchain_documents_without_ids_are_refused():
    need("langchain")
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    chain = RunnableLambda(lambda q: {"answer": "a", "context": [Document(page_content="x")]})
    with pytest.raises(PipelineError, match="rank 1 has no id; give documents ids"):
        adapt(chain)("q")


def test_langchain_answer_only_takes_the_documents_the_retriever_returned():
    need("langchain")
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate

    prompt = ChatPromptTemplate.from_template("{context}")
    out = adapt(apps.langchain_retriever() | prompt | apps.langchain_llm() | StrOutputParser())(
        apps.QUESTIONS[1][1]
    )
    assert out["answer"] == "Use it for exact codes."
    assert [c["id"] for c in out["retrieved"]][0] == "office#0"
    assert out["input_tokens"] == apps.LANGCHAIN_USAGE["input_tokens"]


def test_haystack_without_a_retriever_is_refused_when_built(tmp_path):
    need("haystack")
    from haystack import Pipeline
    from haystack.components.builders import PromptBuilder

    p = Pipeline()
    p.add_component("prompt", PromptBuilder(template="{{ question }}"))
    with pytest.raises(PipelineError, match="no component of the pipeline outputs documents"):
        adapt(p)
    with pytest.raises(PipelineError, match="outputs documents"):
        rageval_core.evaluate(p, tmp_path / "none.yaml", results=tmp_path)


def test_evaluate_names_what_it_takes_when_given_neither_kind(tmp_path):
    with pytest.raises(ConfigError, match="or a LlamaIndex, LangChain or Haystack object"):
        rageval_core.evaluate(42, tmp_path / "none.yaml", results=tmp_path)


def test_a_framework_object_that_is_no_pipeline_says_what_to_return():
    need("llamaindex")
    from llama_index.core.llms import MockLLM

    with pytest.raises(PipelineError, match=r"LlamaIndex: a MockLLM is not a pipeline"):
        adapt(MockLLM())


def test_installing_rageval_without_extras_imports_no_framework():
    code = (
        "import sys, rageval_core, rageval_core.cli, rageval_core.notebook, "
        "rageval_core.engines\n"
        "from rageval_core.adapters import adapt\n"
        "rageval_core.cli.build_parser()\n"
        "assert adapt(len) is len\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('llama_index', 'langchain_core', 'haystack', 'opentelemetry', 'openinference')]\n"
        "print(bad)\n"
    )
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_haystack_answer_builder_and_chat_replies_give_the_answer_and_usage():
    need("haystack")
    from haystack import component
    from haystack.components.builders import AnswerBuilder, ChatPromptBuilder
    from haystack.dataclasses import ChatMessage

    @component
    class FixedChat:
        def __init__(self):  # types given as values: this module's annotations are strings
            component.set_input_types(self, messages=list[ChatMessage])

        @component.output_types(replies=list[ChatMessage])
        def run(self, **kwargs) -> dict:
            usage = {"prompt_tokens": 11, "completion_tokens": 3}
            return {"replies": [ChatMessage.from_assistant("Nine.", meta={"usage": usage})]}

    p = apps.haystack_pipeline(generator=False)
    template = [ChatMessage.from_user("{{ question }}")]
    p.add_component("prompt", ChatPromptBuilder(template=template, required_variables="*"))
    p.add_component("llm", FixedChat())
    p.add_component("answers", AnswerBuilder())
    p.connect("prompt.prompt", "llm.messages")
    p.connect("llm.replies", "answers.replies")
    p.connect("retriever.documents", "answers.documents")
    out = adapt(p)(apps.QUESTIONS[1][1])
    assert out["answer"] == "Nine."
    assert (out["input_tokens"], out["output_tokens"]) == (11, 3)
    assert out["retrieved"][0]["doc_id"] == "office"
    assert out["generation_ms"] > 0 and out["retrieval_ms"] > 0


@pytest.mark.parametrize("calls", [1, 3])
def test_a_chat_through_a_custom_llm_is_counted_once_as_its_completion(calls):
    """A CustomLLM's `chat` (MockLLM, local models) formats the messages and calls its own
    `complete`: LlamaIndex fires a chat and a completion event for the one call, and the
    question counts it once, as that completion (as the OTel import counts the trace)."""
    need("llamaindex")
    from llama_index.core.llms import ChatMessage, MockLLM

    from rageval_core.adapters.llamaindex import _answering, _install

    _install()
    llm = MockLLM()
    messages = [ChatMessage(role="user", content="How do I rotate an API key?")]

    def chats(_):
        for _ in range(calls):
            llm.chat(messages)

    def completes(_):
        for _ in range(calls):
            llm.complete(llm.messages_to_prompt(messages), formatted=True)

    _, chat = _answering(chats, "q")
    _, complete = _answering(completes, "q")
    got = chat.output("", [])
    assert got["input_tokens"] and got["output_tokens"]
    want = complete.output("", [])
    assert (got["input_tokens"], got["output_tokens"]) == (
        want["input_tokens"],
        want["output_tokens"],
    )
