"""`rageval import otel`: traces the real OpenInference instrumentation wrote (offline, at
test time) become runs that open on every page; bad, hostile and huge files are refused
with one line naming file, line and span, and nothing is written."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

import rageval_core
from rageval_core.adapters import adapt
from rageval_core.catalogue import retrieval_columns, span_columns
from rageval_core.cli import main
from rageval_core.errors import SourceError
from rageval_core.importers import otel
from tests.conftest import import_or_skip_unless_ci
from tests.core.adapters import apps
from tests.core.adapters.pages import open_every_page
from tests.core.importers.otel_traces import ASKED, EXTRA, write_traces

INSTRUMENTORS = {
    "llamaindex": "openinference.instrumentation.llama_index",
    "langchain": "openinference.instrumentation.langchain",
}


@pytest.fixture(scope="module")
def traces() -> Iterator[dict[str, Path]]:
    """One trace file per framework, and the datasets of their chunks."""
    import_or_skip_unless_ci("opentelemetry.sdk", "pip install 'rageval[otel]'")
    for module in INSTRUMENTORS.values():
        import_or_skip_unless_ci(module, "pip install 'rageval[otel]'")
    with tempfile.TemporaryDirectory(prefix="rageval-otel-") as d:
        root = Path(d)
        files = {f: write_traces(root / f"{f}.jsonl", f) for f in INSTRUMENTORS}
        _, nodes = apps.llamaindex_parts()
        files["llamaindex-dataset"] = apps.write_dataset(
            root / "li", apps.chunk_rows(nodes, "llamaindex")
        )
        files["langchain-dataset"] = apps.write_dataset(
            root / "lc", apps.chunk_rows(apps.langchain_chunks(), "langchain")
        )
        for llm in CHAT_LLMS:
            files[f"llamaindex-{llm}"] = write_traces(
                root / f"{llm}.jsonl", "llamaindex", app=chat_engine(llm)
            )
        yield files


CHAT_LLMS = ("function-calling", "custom")


def chat_engine(llm: str):
    """The LlamaIndex app with a chat model: its calls are chats, their messages recorded
    instead of a prompt. LlamaIndex's mock chat model answers a chat itself; a CustomLLM
    made a chat model (MockLLM here, local models alike) answers it through its own
    `complete`, one call firing both a chat and a completion event."""
    from llama_index.core.llms import LLMMetadata, MockLLM
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    class ChatMockLLM(MockLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(is_chat_model=True)

    model = (
        MockFunctionCallingLLM(is_chat_model=True) if llm == "function-calling" else ChatMockLLM()
    )
    index, _ = apps.llamaindex_parts()
    return index.as_query_engine(llm=model, similarity_top_k=2)


def rows(results: Path, run_id: str) -> dict[str, dict]:
    table = pq.read_table(results / run_id / "questions.parquet").to_pylist()
    return {r["question_id"]: r for r in table}


@pytest.mark.parametrize("framework", list(INSTRUMENTORS))
def test_traces_matched_to_a_dataset_become_its_questions_with_chunks_tokens_and_times(
    framework, traces, tmp_path, capsys
):
    results = tmp_path / "results"
    args = ["import", "otel", str(traces[framework]), "--results", str(results)]
    dataset = str(traces[f"{framework}-dataset"])
    assert main([*args, "--dataset", dataset, "--run-id", "t"]) == 0
    out = capsys.readouterr().out
    assert "1 traced question(s) not in dataset 'handbook'" in out and EXTRA in out
    assert "1 repeated question(s)" in out
    got = rows(results, "t")
    assert sorted(got) == ["q1", "q2", "q3", "q4"]
    live = adapt(apps.llamaindex_engine() if framework == "llamaindex" else apps.langchain_chain())
    for qid, question, _ in apps.QUESTIONS:
        row, expected = got[qid], live(question)
        assert row["question"] == question
        assert row["retrieved_ids"] == [c["id"] for c in expected["retrieved"]]
        assert row["retrieved_texts"] == [c["text"] for c in expected["retrieved"]]
        assert row["answer"] == expected["answer"]
        assert row["retrieval_ms"] > 0 and row["generation_ms"] > 0, (framework, qid, row)
        assert row["total_ms"] >= max(row["retrieval_ms"], row["generation_ms"])
        # the fake chat model reports usage; MockLLM none, so both runs count its texts
        tokens = (expected["input_tokens"], expected["output_tokens"])
        assert (row["input_tokens"], row["output_tokens"]) == tokens and None not in tokens
        assert row["cost_usd"] is None  # tokens known, no price: unknown, never $0
        if framework == "langchain":
            assert tokens == (40, 7) and row["retrieved_scores"] == [None, None]
        else:
            assert row["retrieved_scores"] == [c["score"] for c in expected["retrieved"]]
    assert got["q1"]["recall_at_1"] == 1.0 and got["q1"]["gold_ids"]


@pytest.mark.parametrize("llm", CHAT_LLMS)
def test_a_llamaindex_chat_model_is_counted_from_its_messages_as_the_direct_run_counts(llm, traces):
    live = adapt(chat_engine(llm))
    records = {r["question"]: r for r in otel.read(traces[f"llamaindex-{llm}"]).records}
    for _, question, _ in apps.QUESTIONS:
        expected = live(question)
        tokens = (expected["input_tokens"], expected["output_tokens"])
        assert None not in tokens
        assert (records[question]["input_tokens"], records[question]["output_tokens"]) == tokens


@pytest.mark.parametrize("framework", list(INSTRUMENTORS))
def test_chunks_keep_the_document_and_offsets_the_trace_records(framework, traces):
    """LangChain's instrumentor records each document's metadata (`source`,
    `start_index`): the chunks are placed as the direct run places them. LlamaIndex's
    records a node's id, text, score and metadata, not its `ref_doc_id` or offsets: its
    chunks have no place and are placed by their text."""
    records = {r["question"]: r for r in otel.read(traces[framework]).records}
    live = adapt(apps.llamaindex_engine() if framework == "llamaindex" else apps.langchain_chain())
    for _, question, _ in apps.QUESTIONS:
        expected = live(question)["retrieved"]
        assert all("doc_id" in c and "start" in c for c in expected)
        if framework == "llamaindex":
            expected = [{k: c[k] for k in ("id", "text", "score")} for c in expected]
        assert records[question]["retrieved"] == expected


def test_hidden_prompts_leave_input_tokens_unknown(tmp_path):
    """OPENINFERENCE_HIDE_PROMPTS writes the prompt as `__REDACTED__`: its tokens are
    unknown, never the count of that word; the output, still recorded, is counted."""
    import_or_skip_unless_ci(
        "openinference.instrumentation.llama_index", "pip install 'rageval[otel]'"
    )
    from openinference.instrumentation import TraceConfig

    question = apps.QUESTIONS[0][1]
    path = write_traces(
        tmp_path / "hidden.jsonl", "llamaindex", [question], config=TraceConfig(hide_prompts=True)
    )
    (record,) = otel.read(path).records
    assert record["input_tokens"] is None
    assert record["output_tokens"] == adapt(apps.llamaindex_engine())(question)["output_tokens"]


def test_without_llama_index_uncounted_calls_stay_unknown_and_are_named(traces, monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_index.core.utilities.token_counting", None)
    imported = otel.read(traces["llamaindex"])
    assert all(r["input_tokens"] is None and r["output_tokens"] is None for r in imported.records)
    calls = f"{len(ASKED)} LlamaIndex LLM call(s) report no token counts"  # one per trace
    assert any(calls in n for n in imported.notes)
    # usage a span reports needs no counter
    assert otel.read(traces["langchain"]).records[0]["input_tokens"] == 40


def question_line(document: dict[str, str]) -> str:
    """A traced question whose retriever returned one document (its OpenInference
    attributes `document.*`)."""
    attrs = {
        "openinference.span.kind": "RETRIEVER",
        **{f"retrieval.documents.0.document.{k}": v for k, v in document.items()},
    }
    listed = [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]
    retriever = span("retrieve", spanId="s2", parentSpanId="s1", attributes=listed)
    return request(span(), retriever) + "\n"


JSONISH = st.one_of(
    st.integers(-5, 200),  # offsets near a document's, and names: the usual case first
    st.sampled_from(["search-guide", ""]),
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=150, deadline=None)
@example(meta={"source": "search-guide", "start_index": 59}, text="Use hybrid search")
@given(
    meta=st.dictionaries(
        st.sampled_from(["doc_id", "source", "start_index", "start", "end", "page"]), JSONISH
    ),
    text=st.text(max_size=20),
)
def test_a_place_from_metadata_is_a_document_with_whole_ordered_offsets_or_none(
    meta, text, tmp_path_factory
):
    """Whatever a document's metadata holds, its chunk gets a non-empty `doc_id` and
    integer offsets 0 <= start <= end, or no place (then it is placed by its text) —
    never a negative, fractional or reversed offset; a well-formed place is kept."""
    path = tmp_path_factory.mktemp("meta") / "traces.jsonl"
    document = {"id": "c1", "content": text, "metadata": json.dumps(meta)}
    path.write_text(question_line(document))
    ((chunk,),) = (r["retrieved"] for r in otel.read(path).records)
    if "doc_id" not in chunk:
        assert "start" not in chunk and "end" not in chunk
    else:
        assert isinstance(chunk["doc_id"], str) and chunk["doc_id"]
    if "start" in chunk:
        assert type(chunk["start"]) is int and type(chunk["end"]) is int
        assert 0 <= chunk["start"] <= chunk["end"]
    doc = next((meta[k] for k in ("doc_id", "source") if meta.get(k) is not None), None)
    start = next((meta[k] for k in ("start_index", "start") if meta.get(k) is not None), None)
    if isinstance(doc, str) and doc and type(start) is int and start >= 0 and "end" not in meta:
        assert (chunk["doc_id"], chunk["start"], chunk["end"]) == (doc, start, start + len(text))


@settings(max_examples=100, deadline=None)
@example(meta={"relevance_score": 0.75})
@given(
    meta=st.dictionaries(
        st.sampled_from(["score", "relevance_score", "similarity_score", "page"]),
        st.one_of(st.floats(-2, 2), st.integers(-3, 3), st.none(), st.sampled_from(["x", True])),
    )
)
def test_a_score_in_metadata_is_read_as_the_langchain_adapter_reads_it(meta, tmp_path_factory):
    """A traced LangChain document has no score attribute; a reranker's or vector store's
    score in its metadata is the chunk's score, by the rule the adapter applies to the
    same `Document` (a non-number is no score)."""
    import_or_skip_unless_ci("langchain_core", "pip install 'rageval[langchain]'")
    from langchain_core.documents import Document

    from rageval_core.adapters.langchain import _chunks

    path = tmp_path_factory.mktemp("score") / "traces.jsonl"
    path.write_text(question_line({"id": "c1", "content": "t", "metadata": json.dumps(meta)}))
    ((imported,),) = (r["retrieved"] for r in otel.read(path).records)
    (direct,) = _chunks([Document(id="c1", page_content="t", metadata=meta)])
    assert imported.get("score") == direct.get("score")


# ---------------------------------------------------------------------------- scoring


def gold_dataset(folder: Path, gold: str) -> Path:
    """The handbook over the LlamaIndex app's nodes, gold as chunk ids ("ids"), as quoted
    spans of its documents ("spans"), or both."""
    _, nodes = apps.llamaindex_parts()
    path = apps.write_dataset(folder, apps.chunk_rows(nodes, "llamaindex"))
    if gold == "ids":
        return path
    doc = yaml.safe_load(path.read_text())
    rows = [json.dumps({"id": d, "text": t}) + "\n" for d, t in apps.DOCUMENTS.items()]
    (folder / "documents.jsonl").write_text("".join(rows))
    doc["documents"] = "documents.jsonl"
    phrases = {qid: phrase for qid, _, phrase in apps.QUESTIONS}
    for q in doc["questions"]:
        phrase = phrases[q["id"]]
        where = [d for d, t in apps.DOCUMENTS.items() if phrase and phrase in t]
        q["gold_spans"] = [{"doc_id": d, "text": phrase} for d in where]
        if gold == "spans":
            del q["gold_chunk_ids"]
    if gold == "spans":
        del doc["corpus"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("gold", ["ids", "spans", "both"])
def test_an_imported_llamaindex_trace_scores_retrieval_as_the_direct_run_does(
    gold, traces, tmp_path
):
    """The same app asked the same questions: its OTel import and its direct run have
    the same retrieval and span figures, tokens included."""
    dataset = gold_dataset(tmp_path / "data", gold)
    results = tmp_path / "results"
    rageval_core.evaluate(
        apps.llamaindex_engine(), dataset, results=results, run_id="direct", progress=False
    )
    args = ["import", "otel", str(traces["llamaindex"]), "--dataset", str(dataset)]
    assert main([*args, "--results", str(results), "--run-id", "traced"]) == 0
    columns = ["retrieved_ids", "gold_ids", "gold_ranks", *retrieval_columns(), *span_columns()]
    columns += ["input_tokens", "output_tokens"]
    direct, traced = rows(results, "direct"), rows(results, "traced")
    assert sorted(direct) == sorted(traced) == ["q1", "q2", "q3", "q4"]
    figure = "recall_at_5" if gold == "ids" else "span_recall_at_5"
    assert [direct[q][figure] for q in ("q1", "q2", "q3")] == [1.0, 1.0, 1.0]
    for qid in direct:
        assert {c: traced[qid][c] for c in columns} == {c: direct[qid][c] for c in columns}, qid


def test_without_a_dataset_every_traced_question_is_a_reference_free_row(traces, tmp_path):
    results = tmp_path / "results"
    assert main(["import", "otel", str(traces["llamaindex"]), "--results", str(results),
                 "--run-id", "free"]) == 0  # fmt: skip
    got = list(rows(results, "free").values())
    assert len(got) == 5 and EXTRA in {r["question"] for r in got}
    assert all(r["gold_ids"] == [] and r["recall_at_5"] is None for r in got)
    manifest = json.loads((results / "free" / "manifest.json").read_text())
    assert manifest["config"]["pipeline"]["source"] == "otel"
    # then judged, as docs/import.md says: faithfulness of the answers to the traced texts
    judge = tmp_path / "judge.yaml"
    judge.write_text("judge: {kind: offline}\n")
    rescore = ["rescore", "free", "--judge", str(judge), "--results", str(results)]
    assert main([*rescore, "--run-id", "judged"]) == 0
    judged = list(rows(results, "judged").values())
    assert len(judged) == 5 and all(r["judge_error"] is None for r in judged)
    assert any(r["claims"] for r in judged)


def test_an_imported_trace_run_opens_on_every_page(traces, tmp_path, monkeypatch):
    results = tmp_path / "results"
    for f in INSTRUMENTORS:
        code = main(["import", "otel", str(traces[f]), "--results", str(results), "--run-id", f,
                     "--dataset", str(traces[f"{f}-dataset"])])  # fmt: skip
        assert code == 0
    open_every_page(monkeypatch, results, "langchain", "llamaindex")


# ---------------------------------------------------------------------------- bad files


def span(name: str = "q", **fields) -> dict:
    """One OTLP span (a question span, unless `fields` override it)."""
    base = {
        "traceId": "t1",
        "spanId": "s1",
        "name": name,
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000",
        "attributes": [{"key": "input.value", "value": {"stringValue": "q?"}}],
    }
    return {**base, **fields}


def request(*spans: dict) -> str:
    """An ExportTraceServiceRequest of `spans`, as one line of a trace file."""
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})


def one_span_line(name: str = "q", **fields) -> str:
    return request(span(name, **fields))


def refused(tmp_path: Path, content: bytes, capsys) -> str:
    path = tmp_path / "traces.jsonl"
    path.write_bytes(content)
    results = tmp_path / "results"
    code = main(["import", "otel", str(path), "--results", str(results)])
    err = capsys.readouterr().err
    assert code == 2, err  # the user's input
    assert err.count("\n") == 1 and "Traceback" not in err and str(path) in err
    assert not results.exists() or not [p for p in results.iterdir() if p.name != ".rageval"]
    assert not list(results.glob(".rageval/import-staging/*"))
    return err


def test_a_truncated_file_names_its_last_line(traces, tmp_path, capsys):
    whole = traces["langchain"].read_bytes()
    err = refused(tmp_path, whole[: len(whole) - 500], capsys)
    n = whole.count(b"\n")
    assert f"traces.jsonl:{n}: not valid JSON" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[" * 100_000 + b"\n", ":1: nested deeper than 64 levels"),
        (
            b'{"resourceSpans": [], "n": ' + b"9" * 10_000 + b"}\n",
            ":1: a number of 10000 characters",
        ),
        (b'{"resourceSpans": []}\n\xff\xfe\n', ":2: not UTF-8"),
        (b'{"spans": []}\n', ":1: not an ExportTraceServiceRequest"),
        (
            one_span_line(startTimeUnixNano="9" * 400).encode() + b"\n",
            "span 'q': startTimeUnixNano",
        ),
        (one_span_line(endTimeUnixNano="10").encode() + b"\n", "span 'q': ends before it starts"),
        (one_span_line(spanId="x" * 500).encode() + b"\n", "span 'q': spanId must be"),
        (
            one_span_line(
                attributes=[{"key": "input.value", "value": {"stringValue": "\ud800"}}]
            ).encode()
            + b"\n",
            "traces.jsonl:1: a lone surrogate escape",
        ),  # fmt: skip
        (one_span_line().encode() + b"\n", "no traced question"),
    ],
)
def test_hostile_lines_are_one_error_naming_file_line_and_span(content, message, tmp_path, capsys):
    assert message in refused(tmp_path, content, capsys)


def test_a_file_over_the_size_bound_is_refused_before_reading(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(otel, "MAX_FILE_BYTES", 1000)
    err = refused(tmp_path, (one_span_line() + "\n").encode() * 20, capsys)
    assert "more than the 1000 a trace file may hold" in err


def test_a_line_over_the_line_bound_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(otel, "MAX_LINE_BYTES", 100)
    err = refused(tmp_path, (one_span_line() + "\n").encode(), capsys)
    assert "traces.jsonl:1: line longer than 100 bytes" in err


# ---------------------------------------------------------------------------- GenAI


def genai_trace(path: Path) -> Path:
    """Two questions traced with OTel GenAI attributes through the real SDK, ids hex as a
    collector's file exporter writes them; the second question failed."""
    import base64

    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    for n, question in enumerate(["What is hybrid search?", "Who signs visitors in?"]):
        user = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
        reply = [{"role": "assistant", "parts": [{"type": "text", "content": f"answer {n}"}]}]
        with tracer.start_as_current_span("invoke_workflow rag") as root:
            root.set_attribute("gen_ai.operation.name", "invoke_workflow")
            root.set_attribute("gen_ai.input.messages", json.dumps(user))
            root.set_attribute("gen_ai.output.messages", json.dumps(reply))
            with tracer.start_as_current_span("retrieval") as r:
                r.set_attribute("gen_ai.operation.name", "retrieval")
                docs = [
                    {
                        "id": "a#1",
                        "score": 0.9,
                        "content": "A",
                        "metadata": {"source": "a", "start_index": 3},
                    },
                    {"id": "b#2", "score": 0.5},
                ]
                r.set_attribute("gen_ai.retrieval.documents", json.dumps(docs))
            with tracer.start_as_current_span("chat gpt-test") as c:
                c.set_attribute("gen_ai.operation.name", "chat")
                c.set_attribute("gen_ai.request.model", "gpt-test")
                c.set_attribute("gen_ai.usage.input_tokens", 120)
                c.set_attribute("gen_ai.usage.output_tokens", 9 + n)
            if n:
                root.set_status(Status(StatusCode.ERROR, "upstream timeout"))
    request = MessageToDict(encode_spans(exporter.get_finished_spans()))
    for rs in request["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if s.get(key):
                        s[key] = base64.b64decode(s[key]).hex()
    path.write_text(json.dumps(request) + "\n")
    return path


def test_genai_attributes_give_question_answer_documents_tokens_model_and_error(tmp_path):
    import_or_skip_unless_ci("opentelemetry.sdk", "pip install 'rageval[otel]'")
    imported = otel.read(genai_trace(tmp_path / "genai.jsonl"))
    assert imported.config["pipeline"]["models"] == ["gpt-test"]
    first, second = imported.records
    assert (first["question"], first["answer"]) == ("What is hybrid search?", "answer 0")
    assert first["retrieved"] == [
        {"id": "a#1", "text": "A", "score": 0.9, "doc_id": "a", "start": 3, "end": 4},
        {"id": "b#2", "text": "", "score": 0.5},
    ]
    assert (first["input_tokens"], first["output_tokens"]) == (120, 9)
    assert first["retrieval_ms"] > 0 and first["generation_ms"] > 0 and first["error"] is None
    assert second["error"] == "upstream timeout" and second["output_tokens"] == 10


# ---------------------------------------------------------------------------- damage


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_damage_to_a_real_trace_file_is_read_or_one_source_error(
    traces, data, tmp_path_factory
):
    """Cut, drop or change bytes anywhere in a real trace file: the reader returns records
    or raises SourceError — never another exception."""
    raw = bytearray(traces["langchain"].read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        how = data.draw(st.sampled_from(["cut", "drop", "byte"]))
        if how == "cut":
            raw = raw[:at]
        elif how == "drop":
            del raw[at : at + data.draw(st.integers(1, 40))]
        else:
            raw[at] = data.draw(st.integers(0, 255))
        if not raw:
            raw = bytearray(b"{}")
    path = tmp_path_factory.mktemp("damage") / "traces.jsonl"
    path.write_bytes(bytes(raw))
    try:
        imported = otel.read(path)
    except SourceError as exc:
        assert str(path) in str(exc)
    else:
        assert all(isinstance(r["question"], str) for r in imported.records)
