"""Trace files of any shape (issue 35): a chain of nested spans is read in time linear in
its length; spans in a parent-id cycle or with a repeated id are counted and named; a
signed `intValue` is read; a protobuf or an indented JSON file is named as such, with what
to do — exit 2 with one line, never a traceback."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.cli import main
from rageval_core.errors import SourceError
from rageval_core.importers import otel
from tests.conftest import import_or_skip_unless_ci

TRACE = "ab" * 16


def _attr(key: str, value: object) -> dict:
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def _span(i: int, parent: int | None, name: str, *attrs: dict, trace: str = TRACE) -> dict:
    return {
        "traceId": trace,
        "spanId": f"{i:016x}",
        **({} if parent is None else {"parentSpanId": f"{parent:016x}"}),
        "name": name,
        "startTimeUnixNano": str(1_000 + i),
        "endTimeUnixNano": str(10**9 - i),
        "attributes": list(attrs),
    }


def _question(i: int, parent: int | None = None, text: str = "What opens first?") -> dict:
    return _span(
        i, parent, f"query {i}", _attr("input.value", text), _attr("output.value", "The door.")
    )


def _llm(i: int, parent: int, *attrs: dict) -> dict:
    return _span(i, parent, f"llm {i}", _attr("openinference.span.kind", "LLM"), *attrs)


def _write(path: Path, spans: list[dict]) -> Path:
    request = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    path.write_text(json.dumps(request) + "\n")
    return path


@contextmanager
def _within(seconds: float) -> Iterator[None]:
    """Fail (not hang) when the block takes longer than `seconds`."""

    def late(*_: object) -> None:
        raise TimeoutError(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _refused(path: Path, tmp_path: Path, capsys) -> str:
    code = main(["import", "otel", str(path), "--results", str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err and str(path) in err
    return err


def test_a_chain_of_twenty_thousand_nested_llm_spans_is_read_in_seconds(tmp_path):
    # before: every LLM span walked all of its descendants (8,000 spans 88 s)
    n = 20_000
    spans = [_question(0)] + [_llm(i, i - 1) for i in range(1, n)]
    spans[-1]["attributes"].append(_attr("llm.token_count.prompt", 7))
    path = _write(tmp_path / "chain.jsonl", spans)
    with _within(15):
        (record,) = otel.read(path).records
    assert record["question"] == "What opens first?" and record["input_tokens"] == 7


def test_a_chain_of_spans_without_work_is_searched_in_seconds(tmp_path):
    # every span has an input, none does work: each was asked for work below it
    n = 20_000
    spans = [_question(0)] + [_question(i, i - 1) for i in range(1, n)]
    path = _write(tmp_path / "idle.jsonl", spans)
    with _within(15), pytest.raises(SourceError, match="no traced question"):
        otel.read(path)


@st.composite
def _forests(draw) -> list[dict]:
    """Random trees of question, LLM (with or without tokens) and other spans."""
    n = draw(st.integers(2, 30))
    spans = [_question(0), _llm(1, 0)]  # some work below the question
    for i in range(2, n):
        parent = draw(st.integers(0, i - 1))
        kind = draw(st.sampled_from(["llm", "llm-tokens", "chain"]))
        if kind == "chain":
            spans.append(_span(i, parent, f"chain {i}"))
        else:
            tokens = [_attr("llm.token_count.prompt", i)] if kind == "llm-tokens" else []
            spans.append(_llm(i, parent, *tokens))
    return spans


def _naive_tokens(spans: list[dict]) -> int | None:
    """Input tokens by the rule written out: an LLM span counts its own tokens unless an
    LLM span below it reports some."""
    children: dict[str, list[dict]] = {}
    for s in spans:
        children.setdefault(s.get("parentSpanId"), []).append(s)

    def below(s: dict) -> list[dict]:
        out, stack = [], list(children.get(s["spanId"], []))
        while stack:
            c = stack.pop()
            out.append(c)
            stack += children.get(c["spanId"], [])
        return out

    def tokens(s: dict) -> int | None:
        found = [a for a in s["attributes"] if a["key"] == "llm.token_count.prompt"]
        return int(found[0]["value"]["intValue"]) if found else None

    def is_llm(s: dict) -> bool:
        return any(a["key"] == "openinference.span.kind" for a in s["attributes"])

    counted = [
        tokens(s)
        for s in below(spans[0])
        if is_llm(s) and not any(is_llm(d) and tokens(d) is not None for d in below(s))
    ]
    known = [t for t in counted if t is not None]
    return sum(known) if known else None


@settings(max_examples=60, deadline=None)
@given(_forests())
def test_tokens_of_any_tree_follow_the_rule_written_out(tmp_path_factory, spans):
    path = _write(tmp_path_factory.mktemp("forest") / "t.jsonl", spans)
    (record,) = otel.read(path).records
    assert record["input_tokens"] == _naive_tokens(spans)


def test_spans_in_a_parent_cycle_are_counted_and_named(tmp_path):
    spans = [_question(0), _llm(1, 0)]
    # a second question whose spans point at each other: no way up to a root
    spans += [_question(2, 3, "What closes last?"), _llm(3, 2)]
    path = _write(tmp_path / "cycle.jsonl", spans)
    got = otel.read(path)
    assert [r["question"] for r in got.records] == ["What opens first?"]
    (note,) = got.notes
    assert "2 span(s)" in note and "cycle" in note
    assert f"{path}:1: span 'query 2'" in note and "span 'llm 3'" in note


def test_a_file_of_cyclic_spans_only_says_why_it_has_no_question(tmp_path, capsys):
    path = _write(tmp_path / "cycle.jsonl", [_question(0, 1), _llm(1, 0)])
    err = _refused(path, tmp_path, capsys)
    assert "no traced question" in err and "cycle" in err and "span 'query 0'" in err


def test_spans_with_a_repeated_id_are_counted_and_named(tmp_path):
    first = _question(0, text="What closes last?")
    first["name"] = "older"
    spans = [first, _question(0), _llm(1, 0)]
    got = otel.read(_write(tmp_path / "dup.jsonl", spans))
    assert [r["question"] for r in got.records] == ["What opens first?"]
    (note,) = got.notes
    assert "1 span(s)" in note and "same spanId" in note and "span 'older'" in note


@settings(max_examples=50, deadline=None)
@given(st.integers(-(1 << 63), (1 << 63) - 1))
def test_any_signed_64_bit_attribute_is_read(tmp_path_factory, seed):
    # before: `gen_ai.request.seed: -1` (legal int64) refused the whole file
    spans = [_question(0), _llm(1, 0, _attr("gen_ai.request.seed", seed))]
    path = _write(tmp_path_factory.mktemp("seed") / "t.jsonl", spans)
    assert otel.read_spans(path)[1].attrs["gen_ai.request.seed"] == seed


@pytest.mark.parametrize("raw", ["-", "1e3", "²", " 1", str(1 << 64), str(-(1 << 63) - 1)])
def test_an_attribute_integer_that_is_not_int64_is_refused(tmp_path, raw):
    span = _llm(1, 0)
    span["attributes"].append({"key": "gen_ai.request.seed", "value": {"intValue": raw}})
    path = _write(tmp_path / "t.jsonl", [_question(0), span])
    with pytest.raises(SourceError, match="64-bit integer"):
        otel.read_spans(path)


def _sdk_request():
    """One request of real spans, encoded by the OpenTelemetry exporter's own encoder."""
    import_or_skip_unless_ci("opentelemetry.sdk", "pip install 'rageval[otel]'")
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("query") as q:
        q.set_attribute("input.value", "What opens first?")
        with tracer.start_as_current_span("llm") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("gen_ai.request.seed", -1)
    provider.shutdown()
    return encode_spans(exporter.get_finished_spans())


def _records(path: Path) -> list[dict]:
    return otel.read(path).records


@pytest.mark.parametrize("framing", ["one request", "length-prefixed"])
def test_an_otlp_protobuf_file_reads_as_its_json_does(tmp_path, framing):
    from google.protobuf.json_format import MessageToJson

    request = _sdk_request()
    as_json = tmp_path / "traces.jsonl"
    as_json.write_text(MessageToJson(request, indent=None) + "\n")
    blob = request.SerializeToString()
    path = tmp_path / "traces.pb"
    if framing == "one request":
        path.write_bytes(blob)
    else:  # the collector's file exporter with `format: proto`
        path.write_bytes(b"".join(len(blob).to_bytes(4, "big") + blob for _ in range(2)))
    assert _records(path) == _records(as_json)


def test_binary_that_is_no_otlp_request_says_what_to_export(tmp_path, capsys):
    path = tmp_path / "traces.pb"
    path.write_bytes(b"\x00\x01\x02\xff\xfe garbage" * 10)
    err = _refused(path, tmp_path, capsys)
    assert f"{path}:1: a binary file that is not an OTLP protobuf" in err
    assert "format: json" in err


def test_protobuf_without_the_proto_package_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(
        sys.modules, "opentelemetry.proto.collector.trace.v1.trace_service_pb2", None
    )
    path = tmp_path / "traces.pb"
    path.write_bytes(_sdk_request().SerializeToString())
    err = _refused(path, tmp_path, capsys)
    assert "OTLP protobuf" in err and "pip install opentelemetry-proto" in err


def test_an_indented_request_says_one_request_per_line(tmp_path, capsys):
    from google.protobuf.json_format import MessageToJson

    path = tmp_path / "traces.json"
    path.write_text(MessageToJson(_sdk_request()))  # indented, as by default
    err = _refused(path, tmp_path, capsys)
    assert "one ExportTraceServiceRequest per line" in err and "indent=None" in err


def test_the_same_request_on_one_line_is_read_with_its_negative_seed(tmp_path):
    from google.protobuf.json_format import MessageToJson

    path = tmp_path / "traces.jsonl"
    path.write_text(MessageToJson(_sdk_request(), indent=None) + "\n")
    (record,) = otel.read(path).records
    assert record["question"] == "What opens first?"
