"""Trace files written by the real instrumentation, offline: OpenInference's LlamaIndex or
LangChain instrumentor on the OpenTelemetry SDK, spans kept by its InMemorySpanExporter,
encoded with `encode_spans` and written one `ExportTraceServiceRequest` per line with
`MessageToJson(..., indent=None)`, as a collector's file exporter writes them.

    python tests/core/importers/otel_traces.py llamaindex OUT.jsonl   # by hand
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.core.adapters import apps

# The questions the apps are asked: the dataset's, one it does not hold, one asked twice.
EXTRA = "Where do visitors sign in?"
ASKED = [q for _, q, _ in apps.QUESTIONS] + [EXTRA, apps.QUESTIONS[0][1]]


def write_traces(
    out: Path,
    framework: str,
    questions: Sequence[str] = ASKED,
    app: Any = None,
    config: Any = None,
) -> Path:
    """The traces of `app` (default: the framework's app of `apps`) asked `questions`;
    `config` is the instrumentor's OpenInference TraceConfig (what it hides)."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if framework == "llamaindex":
        from openinference.instrumentation.llama_index import LlamaIndexInstrumentor as Inst

        build = apps.llamaindex_engine
        ask = lambda app, q: app.query(q)  # noqa: E731
    else:
        from openinference.instrumentation.langchain import LangChainInstrumentor as Inst

        build = apps.langchain_chain
        ask = lambda app, q: app.invoke(q)  # noqa: E731
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = Inst()
    if app is None:  # built before instrumenting: index-time spans are not questions' spans
        app = build()
    instrumentor.instrument(tracer_provider=provider, config=config)
    try:
        with open(out, "w") as fh, warnings.catch_warnings():
            # OpenInference calls methods pydantic 2 and langchain-core 1.8 deprecate; as
            # errors (the test suite's setting) they cost the LLM spans, which it drops.
            warnings.simplefilter("ignore", DeprecationWarning)
            for q in questions:  # one request per question, as a batch exporter flushes
                ask(app, q)
                fh.write(MessageToJson(encode_spans(exporter.get_finished_spans()), indent=None))
                fh.write("\n")
                exporter.clear()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    return out


if __name__ == "__main__":
    print(write_traces(Path(sys.argv[2]), sys.argv[1]))
