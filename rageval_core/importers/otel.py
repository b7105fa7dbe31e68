"""OpenTelemetry traces as a run: OTLP JSON as an OpenTelemetry collector's file exporter
writes it (one `ExportTraceServiceRequest` per line; trace and span ids hex or base64),
with OpenInference or OTel GenAI attributes, read with the standard library; or OTLP
protobuf, read with opentelemetry-proto when it is installed.

Spans of all lines are grouped by trace (a trace may span several lines). In each trace
the question is the topmost span that has an input (`input.value`, else
`gen_ai.input.messages`) and, below it, a retrieval or an LLM span; its output is the
answer. Below it:
- the retrieved documents are those of the last retrieval-like span to end: an
  OpenInference RETRIEVER (`retrieval.documents.N.document.{id,content,score,metadata}`),
  a RERANKER (`reranker.output_documents.N.document.*`), a GenAI `retrieval` span
  (`gen_ai.retrieval.documents`); a document's metadata gives its source document and
  start by the LangChain adapter's rule; retrieval time is the union of those spans;
- LLM spans (OpenInference LLM, GenAI `chat`/`text_completion`/`generate_content`) give
  the generation time, tokens (`llm.token_count.*`, `gen_ai.usage.*`; an LLM span whose
  LLM descendants have tokens is not counted again) and the model (recorded in the run's
  config). A LlamaIndex LLM call that reports no usage is counted from its recorded
  prompt and output with LlamaIndex's own counter, as a direct run counts it
  (`adapters/llamaindex.py`): the one thing read with a framework's package, and only
  when it is installed;
- the question span's duration is the total, its ERROR status the question's error.
A question asked in several traces is kept once, the newest; with a dataset, traced
questions are matched to its questions by text and the others listed (`notes`), not
imported. Everything is read and checked before the run is written: a bad line is one
SourceError naming the file, the line and the span (JSON through `bounded_json`). Spans
that no question can hold (a parent-id cycle, an id repeated in a trace) are counted and
named in the notes. Every rule over a trace's tree is one pass, whatever its shape.
"""

from __future__ import annotations

import math
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval_core.adapters.common import (
    DOC_ID_KEYS,
    SCORE_KEYS,
    START_KEYS,
    Tally,
    chunk,
    first_present,
    placed,
)
from rageval_core.bounded_json import BadJSON, Limits, loads, read_lines
from rageval_core.errors import SourceError, shown
from rageval_core.importers.common import Imported
from rageval_core.models import GoldenDataset

# Bounds for a file from production: one request per line, each a batch of spans.
MAX_LINE_BYTES = 64 << 20
MAX_FILE_BYTES = 4 << 30
MAX_ID_CHARS = 64
MAX_DOCUMENTS = 1000  # documents of one retrieval span (a larger index is hostile)
KEPT = ("input.", "output.", "openinference.", "llm.", "retrieval.", "reranker.", "gen_ai.")
DOCUMENT_KEY = re.compile(
    r"(retrieval\.documents|reranker\.output_documents)\.(\d{1,6})"
    r"\.document\.(id|content|score|metadata)"
)
MESSAGE_KEY = re.compile(r"llm\.input_messages\.(\d{1,6})\.message\.(role|content)")
REDACTED = "__REDACTED__"  # what OpenInference writes for a value OPENINFERENCE_HIDE_* hides
LLAMAINDEX_SCOPE = "openinference.instrumentation.llama_index"
LLM_OPERATIONS = {"chat", "text_completion", "generate_content"}
QUESTION_KEYS = ("input", "question", "query", "query_str")
ANSWER_KEYS = ("answer", "response", "output", "result", "text")


@dataclass(slots=True)
class Span:
    """One span of the file, with the attributes rageval reads (`KEPT`)."""

    trace: str
    id: str
    parent: str | None
    name: str
    start: int
    end: int
    attrs: dict[str, Any]
    source: str  # FILE:LINE, one string shared by the spans of a line
    scope: str = ""  # the instrumentation's name (OTLP `scopeSpans[].scope.name`)
    error: str | None = None
    children: list[Span] = field(default_factory=list)

    @property
    def where(self) -> str:
        """`FILE:LINE: span NAME`, the start of every problem about it."""
        return f"{self.source}: span {shown(self.name, 80)}"

    @property
    def kind(self) -> str | None:
        """retrieval, llm, or None."""
        oi = self.attrs.get("openinference.span.kind")
        op = self.attrs.get("gen_ai.operation.name")
        if oi in ("RETRIEVER", "RERANKER") or op == "retrieval":
            return "retrieval"
        if oi == "LLM" or op in LLM_OPERATIONS:
            return "llm"
        return None


# ---------------------------------------------------------------------------- reading


def _lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) of each non-blank line, through the bounded reader
    (depth, number size, lone surrogates, line length), the file's size bounded first.
    A binary file is read as OTLP protobuf (`_messages`); JSON indented over many lines
    is named as such, with what to do."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise SourceError(
            f"{path}: {size} bytes, more than the {MAX_FILE_BYTES} a trace file may hold"
        )
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if _binary(head):
        yield from _messages(path, size)
        return
    limits = Limits(total_bytes=MAX_LINE_BYTES, line_bytes=MAX_LINE_BYTES)
    for n, value in read_lines(path, limits=limits):
        if isinstance(value, BadJSON):
            first = head.lstrip(b" \t\r\n").split(b"\n", 1)[0].strip()
            hint = INDENTED if first in (b"{", b"[") else ""
            raise SourceError(value.at(str(path)) + hint)
        yield n, value


INDENTED = (
    ": the file holds JSON indented over many lines; it needs one "
    "ExportTraceServiceRequest per line (`MessageToJson(request, indent=None)`, "
    "or `jq -c . FILE`)"
)
AS_JSON = (
    "export the traces as OTLP JSON (the collector's file exporter with `format: json`), "
    "one ExportTraceServiceRequest per line"
)


def _binary(head: bytes) -> bool:
    """Whether a file's first bytes are not text (a JSON trace file starts with `{`)."""
    if head.lstrip(b" \t\r\n").startswith((b"{", b"[")):
        return False
    if any(b < 9 or 13 < b < 32 for b in head[:64]):
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 3  # not a character cut by the 4096 bytes
    return False


def _messages(path: Path, size: int) -> Iterator[tuple[int, Any]]:
    """(message number, the request as OTLP JSON) of an OTLP protobuf file: requests each
    after its length in 4 big-endian bytes (the collector's file exporter, `format:
    proto`), or one request the whole file. Read with opentelemetry-proto when installed
    (the OpenTelemetry SDK's exporters bring it); each message at most `MAX_LINE_BYTES`."""
    try:
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )
    except ImportError:
        raise SourceError(
            f"{path}: a binary file (OTLP protobuf?), not OTLP JSON: pip install "
            f"opentelemetry-proto to read protobuf, or {AS_JSON}"
        ) from None
    with open(path, "rb") as fh:
        head = fh.read(5)
        framed = len(head) == 5 and head[4] == 0x0A and 4 + int.from_bytes(head[:4], "big") <= size
        fh.seek(0)
        n = 0
        while framed or n == 0:
            length = size
            if framed:
                prefix = fh.read(4)
                if not prefix:
                    return
                length = int.from_bytes(prefix, "big") if len(prefix) == 4 else -1
            n += 1
            if not 0 <= length <= MAX_LINE_BYTES:
                raise SourceError(
                    f"{path}:{n}: a protobuf message cut off or over {MAX_LINE_BYTES} bytes"
                )
            blob = fh.read(length)
            try:
                if len(blob) < length:
                    raise DecodeError("cut off")
                request = ExportTraceServiceRequest.FromString(blob)
            except DecodeError as exc:
                raise SourceError(
                    f"{path}:{n}: a binary file that is not an OTLP protobuf "
                    f"ExportTraceServiceRequest ({shown(exc, bare=True)}); {AS_JSON}"
                ) from None
            yield n, MessageToDict(request)


class _Bad(Exception):
    """A field of a span that does not fit: the caller adds file, line and span."""


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if type(value) is not list:
        raise _Bad(f"{what} must be a list")
    return value


def _value(v: Any) -> Any:
    """An OTLP AnyValue as a Python value (arrays of scalars kept, nested maps dropped)."""
    if type(v) is not dict:
        raise _Bad("must be an object")
    if "stringValue" in v:
        return _text(v["stringValue"], "stringValue")
    if "boolValue" in v:
        return v["boolValue"] is True
    if "intValue" in v:
        return _int(v["intValue"], "intValue", signed=True)
    if "doubleValue" in v:
        d = v["doubleValue"]
        if d in ("NaN", "Infinity", "-Infinity"):
            return None
        if type(d) not in (int, float) or not math.isfinite(d):
            raise _Bad("doubleValue must be a finite number")
        return float(d)
    if "arrayValue" in v:
        array = v["arrayValue"]
        values = array.get("values") if type(array) is dict else None
        return [
            _value(x)
            for x in _list(values, "arrayValue.values")
            if type(x) is not dict or "kvlistValue" not in x
        ]
    return None  # kvlist, bytes, empty: not read


_DECIMAL = re.compile(r"-?[0-9]{1,20}")


def _int(raw: Any, what: str, signed: bool = False) -> int:
    """An OTLP 64-bit integer (JSON carries them as decimal strings): times are unsigned
    (fixed64), attribute values signed (int64, so `gen_ai.request.seed: -1` is legal)."""
    low = -(1 << 63) if signed else 0
    if type(raw) is str and _DECIMAL.fullmatch(raw):
        raw = int(raw)
    if type(raw) is int and low <= raw < 1 << 64:
        return raw
    kind = "a 64-bit integer" if signed else "an unsigned 64-bit integer"
    raise _Bad(f"{what}: must be {kind}, got {shown(raw, 40)}")


def _text(raw: Any, what: str) -> str:
    if type(raw) is not str:
        raise _Bad(f"{what} must be text")
    if not raw.isascii():
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            raise _Bad(f"{what}: a lone surrogate escape in text") from None
    return raw


def _id(raw: Any, what: str) -> str:
    if type(raw) is not str or not raw or len(raw) > MAX_ID_CHARS:
        raise _Bad(f"{what} must be a non-empty id of at most {MAX_ID_CHARS} characters")
    return raw


def _short(value: Any) -> Any:
    """A short text as one shared string (span kinds, names and model names repeat on
    every span: a million spans would hold a million copies)."""
    return sys.intern(value) if type(value) is str and len(value) <= 64 else value


def _span(raw: Any, at: str, scope: str, traces: dict[str, str]) -> Span:
    """One span; `at` is its `FILE:LINE`, `traces` the trace ids seen (one string each)."""
    name = raw.get("name") if type(raw) is dict else None
    try:
        if type(raw) is not dict:
            raise _Bad("must be an object")
        attrs: dict[str, Any] = {}
        for a in _list(raw.get("attributes"), "attributes"):
            key = a.get("key") if type(a) is dict else None
            if type(key) is not str:
                raise _Bad("an attribute without a key")
            if key.startswith(KEPT):
                try:
                    attrs[sys.intern(key)] = _short(_value(a.get("value")))
                except _Bad as exc:
                    raise _Bad(f"attribute {shown(key, 80)}: {exc}") from None
        start = _int(raw.get("startTimeUnixNano"), "startTimeUnixNano")
        end = _int(raw.get("endTimeUnixNano"), "endTimeUnixNano")
        if end < start:
            raise _Bad("ends before it starts")
        status = raw.get("status")
        status = status if type(status) is dict else {}
        failed = status.get("code") in ("STATUS_CODE_ERROR", 2)
        parent = raw.get("parentSpanId") or None
        trace = _id(raw.get("traceId"), "traceId")
        return Span(
            trace=traces.setdefault(trace, trace),
            id=_id(raw.get("spanId"), "spanId"),
            parent=None if parent is None else _id(parent, "parentSpanId"),
            name=_short(name) if type(name) is str else "",
            start=start,
            end=end,
            attrs=attrs,
            source=at,
            scope=scope,
            error=(str(status.get("message") or "span status ERROR")[:2000] if failed else None),
        )
    except _Bad as exc:
        quoted = f"span {shown(name, 80)}" if type(name) is str else "a span"
        raise SourceError(f"{at}: {quoted}: {exc}") from None


def read_spans(path: Path) -> list[Span]:
    """Every span of the file, checked."""
    source, spans, traces = str(path), [], {}
    for n, request in _lines(path):
        at = f"{source}:{n}"
        if type(request) is not dict or "resourceSpans" not in request:
            raise SourceError(f"{source}:{n}: not an ExportTraceServiceRequest (no resourceSpans)")
        try:
            for rs in _list(request["resourceSpans"], "resourceSpans"):
                scopes = rs.get("scopeSpans") if type(rs) is dict else None
                for ss in _list(scopes, "scopeSpans"):
                    members = ss.get("spans") if type(ss) is dict else None
                    scope = ss.get("scope") if type(ss) is dict else None
                    name = scope.get("name") if type(scope) is dict else None
                    name = name if type(name) is str else ""
                    spans += [_span(s, at, name, traces) for s in _list(members, "spans")]
        except _Bad as exc:
            raise SourceError(f"{source}:{n}: {exc}") from None
    return spans


# ---------------------------------------------------------------------------- meaning


def _parsed(value: Any, keys: tuple[str, ...]) -> str | None:
    """A span's input or output value as text: itself, or the first of `keys` when it is
    a JSON object (`{"input": "..."}`), or the text of a GenAI messages list."""
    if not isinstance(value, str):
        return None
    stripped = value.lstrip()
    if not stripped.startswith(("{", "[", '"')):
        return value
    try:
        parsed = loads(value)
    except ValueError:  # BadJSON: kept as the text it is
        return value
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, Mapping):
        found = next((parsed[k] for k in keys if isinstance(parsed.get(k), str)), None)
        return found if found is not None else value
    if isinstance(parsed, list):  # GenAI messages: [{role, parts: [{type: text, content}]}]
        texts = [
            p.get("content")
            for m in parsed
            if isinstance(m, Mapping)
            for p in (m.get("parts") if isinstance(m.get("parts"), list) else [])
            if isinstance(p, Mapping)
            and p.get("type") == "text"
            and isinstance(p.get("content"), str)
        ]
        return texts[-1] if texts else value
    return value


def _io(span: Span, which: str, keys: tuple[str, ...]) -> str | None:
    oi = _parsed(span.attrs.get(f"{which}.value"), keys)
    return oi if oi is not None else _parsed(span.attrs.get(f"gen_ai.{which}.messages"), keys)


def _documents(span: Span) -> list[dict[str, Any]] | None:
    """The ranked documents a retrieval-like span returned, or None if it lists none."""
    by_rank: dict[tuple[str, int], dict[str, Any]] = defaultdict(dict)
    for key, value in span.attrs.items():
        m = DOCUMENT_KEY.fullmatch(key)
        if m:
            by_rank[(m[1], int(m[2]))][m[3]] = value
    if by_rank:
        kind = (
            "reranker.output_documents"
            if any(k == "reranker.output_documents" for k, _ in by_rank)
            else "retrieval.documents"
        )
        ranks = sorted(i for k, i in by_rank if k == kind)
        if len(ranks) > MAX_DOCUMENTS:
            raise SourceError(f"{span.where}: more than {MAX_DOCUMENTS} documents")
        listed = _output_ids(span)
        return [_document({"id": listed.get(i), **by_rank[(kind, i)]}, span, i) for i in ranks]
    raw = span.attrs.get("gen_ai.retrieval.documents")
    if raw is None:
        return None
    try:
        docs = loads(raw) if isinstance(raw, str) else None
    except ValueError:  # BadJSON: refused below
        docs = None
    if not isinstance(docs, list) or len(docs) > MAX_DOCUMENTS:
        raise SourceError(
            f"{span.where}: gen_ai.retrieval.documents must be a JSON list of documents"
        )
    return [_document(d if isinstance(d, Mapping) else {}, span, i) for i, d in enumerate(docs)]


def _output_ids(span: Span) -> dict[int, Any]:
    """Document ids by rank from a retriever's JSON output (`{"documents": [{"id": ...}]}`):
    OpenInference's LangChain instrumentor lists ids there, not as document attributes."""
    raw = span.attrs.get("output.value")
    if not isinstance(raw, str) or '"documents"' not in raw:
        return {}
    try:
        out = loads(raw)
    except ValueError:  # BadJSON: no ids from it
        return {}
    docs = out.get("documents") if isinstance(out, Mapping) else None
    if not isinstance(docs, list):
        return {}
    return {i: d.get("id") for i, d in enumerate(docs) if isinstance(d, Mapping)}


def _document(d: Mapping[str, Any], span: Span, i: int) -> dict[str, Any]:
    """One retrieved document; one without an id is matched to the dataset's corpus by
    its text (the writer's rule). Its `doc_id`, `start` and `end` come from its metadata
    as the LangChain adapter takes them (`placed`, then `chunk`: offsets only with a
    document, whole numbers, start <= end), and its score, when the trace records none,
    from the same metadata keys; OpenInference's LlamaIndex instrumentor
    records a node's metadata but not its `ref_doc_id` or offsets, so its chunks have
    none and are placed by their text."""
    cid = d.get("id")
    if cid is not None and (not isinstance(cid, str | int) or isinstance(cid, bool)):
        raise SourceError(f"{span.where}: document {i} id must be text")
    meta = _metadata(d.get("metadata"))
    score = d.get("score")
    if isinstance(score, str):  # OpenInference writes scores as attribute text at times
        try:
            score = float(score)
        except ValueError:
            raise SourceError(
                f"{span.where}: document {i} score {shown(score, 40)} is not a number"
            ) from None
    out: dict[str, Any] = {
        **({} if cid in (None, "") else {"id": str(cid)}),
        "text": _text(d.get("content") or d.get("text") or "", f"{span.where}: document {i}"),
    }
    if score is None:  # LangChain's instrumentor records no score; a reranker's is in metadata
        score = next((meta[k] for k in SCORE_KEYS if meta.get(k) is not None), None)
    if isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score):
        out["score"] = float(score)
    where = placed(meta, out["text"], DOC_ID_KEYS, START_KEYS)
    doc = where["doc_id"]
    if (isinstance(doc, str) and doc) or (isinstance(doc, int) and not isinstance(doc, bool)):
        located = chunk("", out["text"], None, **where)
        out.update((k, located[k]) for k in ("doc_id", "start", "end") if k in located)
    return out


def _metadata(raw: Any) -> Mapping[str, Any]:
    """A document's metadata: OpenInference writes it as JSON text, GenAI as an object."""
    if isinstance(raw, str):
        try:
            raw = loads(raw)
        except ValueError:  # BadJSON: no metadata
            return {}
    return raw if isinstance(raw, Mapping) else {}


def _reported(span: Span) -> tuple[Any, Any]:
    """(input, output) tokens the span reports (OpenInference, else GenAI)."""
    a = span.attrs
    return (
        first_present(
            a, ("llm.token_count.prompt", "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
        ),
        first_present(
            a,
            (
                "llm.token_count.completion",
                "gen_ai.usage.output_tokens",
                "gen_ai.usage.completion_tokens",
            ),
        ),
    )


class _Counter:
    """LlamaIndex's token counter, loaded on the first LlamaIndex LLM call that reports no
    usage; `uncounted` is how many such calls found no llama-index-core to count them."""

    def __init__(self) -> None:
        self._loaded: tuple[Any, Any] | None = None
        self._absent = False
        self.uncounted = 0

    def tools(self) -> tuple[Any, Any] | None:
        """(TokenCounter(), ChatMessage), or None without llama-index-core."""
        if self._loaded is None and not self._absent:
            try:
                from llama_index.core.base.llms.types import ChatMessage
                from llama_index.core.utilities.token_counting import TokenCounter
            except ImportError:
                self._absent = True
            else:
                self._loaded = (TokenCounter(), ChatMessage)
        if self._loaded is None:
            self.uncounted += 1
        return self._loaded


def _shown_text(value: Any) -> str | None:
    """A recorded text, or None where it is absent or hidden (OPENINFERENCE_HIDE_*)."""
    return value if isinstance(value, str) and value != REDACTED else None


@dataclass(frozen=True)
class _Sent:
    """What one LlamaIndex LLM call was sent, where recorded whole (else None): its
    prompts (a completion) or its messages as (role, content) (a chat)."""

    prompts: list[str] | None = None
    messages: list[tuple[str, str]] | None = None


def _sent(span: Span) -> _Sent | None:
    """None when the span records no call of its own (`predict` around `complete`)."""
    prompts = span.attrs.get("llm.prompts")
    if prompts is not None:  # hidden, it is the text REDACTED, not a list
        texts = [_shown_text(p) for p in prompts] if isinstance(prompts, list) else [None]
        return _Sent(prompts=None if None in texts else texts)
    by_index: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in span.attrs.items():
        m = MESSAGE_KEY.fullmatch(key)
        if m:
            by_index[int(m[1])][m[2]] = value
    if not by_index:
        return None
    messages = [(m.get("role"), _shown_text(m.get("content"))) for _, m in sorted(by_index.items())]
    whole = all(isinstance(r, str) and c is not None for r, c in messages)
    return _Sent(messages=messages if whole else None)


def _tokens(span: Span, counter: _Counter) -> tuple[Any, Any]:
    """(input, output) tokens of an LLM span: reported; for a LlamaIndex call a side
    reported as none or 0 is counted from its recorded texts as `adapters/llamaindex.py`
    counts it (reported usage, else TokenCounter; the output as `str(response)`, which
    OpenInference records as `output.value`)."""
    prompt, completion = _reported(span)
    sent = _sent(span) if span.scope == LLAMAINDEX_SCOPE else None
    if (prompt and completion) or sent is None:
        return prompt, completion
    tools = counter.tools()
    if tools is None:
        return prompt, completion
    count, message = tools
    if not prompt and sent.prompts is not None:
        prompt = sum(count.get_string_tokens(p) for p in sent.prompts)
    elif not prompt and sent.messages is not None:
        try:
            prompt = count.estimate_tokens_in_messages(
                [message(role=r, content=c) for r, c in sent.messages]
            )
        except ValueError:  # a role LlamaIndex does not know: not its message
            pass
    output = _shown_text(span.attrs.get("output.value"))
    if not completion and output is not None:
        completion = count.get_string_tokens(output)
    return prompt, completion


def _model(span: Span) -> str | None:
    a = span.attrs
    for k in ("llm.model_name", "gen_ai.response.model", "gen_ai.request.model"):
        if isinstance(a.get(k), str) and a[k] and a[k] != "unknown":
            return a[k]
    return None


def _walk(tops: Iterable[Span]) -> Iterator[Span]:
    """The spans below and including `tops`, each before its children (pre-order)."""
    stack = list(tops)
    while stack:
        s = stack.pop()
        yield s
        stack.extend(s.children)


def _below(order: list[Span], counts: Callable[[Span], bool]) -> dict[int, bool]:
    """For each span of `order` (pre-order), whether some span below it `counts`: one
    pass from the leaves up, so a chain of any depth costs its length, not its square."""
    out: dict[int, bool] = {}
    for s in reversed(order):
        out[id(s)] = any(out[id(c)] or counts(c) for c in s.children)
    return out


def _named(spans: list[Span]) -> str:
    quoted = "; ".join(s.where for s in spans[:5])
    return quoted + (f" and {len(spans) - 5} more" if len(spans) > 5 else "")


def _questions(spans: list[Span]) -> tuple[list[Span], list[str]]:
    """The question spans (per trace, the topmost spans with an input and work below),
    and a note per kind of span that cannot be read: one whose id a later span of its
    trace repeats (the later one is read), one in a parent-id cycle (with those below)."""
    by_trace: dict[str, dict[str, Span]] = defaultdict(dict)
    repeated: list[Span] = []
    for s in spans:
        members = by_trace[s.trace]
        if s.id in members:
            repeated.append(members[s.id])
        members[s.id] = s
    found, cyclic = [], []
    for members in by_trace.values():
        roots = []
        for s in members.values():
            parent = members.get(s.parent) if s.parent else None
            (parent.children if parent is not None and parent is not s else roots).append(s)
        order = list(_walk(roots))
        if len(order) < len(members):  # the rest have no way up to a root
            reached = {id(s) for s in order}
            cyclic += [s for s in members.values() if id(s) not in reached]
        work = _below(order, lambda c: c.kind is not None)
        stack = roots
        while stack:
            s = stack.pop()
            if s.kind is None and work[id(s)] and _io(s, "input", QUESTION_KEYS) is not None:
                found.append(s)
            else:
                stack.extend(s.children)
    notes = []
    if repeated:
        notes.append(
            f"{len(repeated)} span(s) not read: a later span of the same trace has the "
            f"same spanId (the later one is read): {_named(repeated)}"
        )
    if cyclic:
        notes.append(
            f"{len(cyclic)} span(s) not read: their parentSpanIds form a cycle, so no "
            f"question can hold them: {_named(cyclic)}"
        )
    return sorted(found, key=lambda s: s.start), notes


def _record(q: Span, models: set[str], counter: _Counter) -> dict[str, Any]:
    order = list(_walk([q]))
    below = order[1:]
    tally = Tally()
    docs: list[dict[str, Any]] | None = None
    last_end = -1
    tokens = {id(s): _tokens(s, counter) for s in below if s.kind == "llm"}
    # an LLM span whose LLM descendants report tokens is not counted again
    reported = _below(
        order, lambda c: c.kind == "llm" and any(t is not None for t in tokens[id(c)])
    )
    for s in below:
        if s.kind == "retrieval":
            tally.add_interval("retrieval", s.start / 1e9, s.end / 1e9)
            listed = _documents(s)
            if listed is not None and s.end >= last_end:
                docs, last_end = listed, s.end
        elif s.kind == "llm":
            tally.add_interval("generation", s.start / 1e9, s.end / 1e9)
            model = _model(s)
            if model:
                models.add(model)
            if not reported[id(s)]:
                tally.add_tokens(*tokens[id(s)])
    answer = _io(q, "output", ANSWER_KEYS)
    out = tally.output(answer if answer is not None else "", docs or [])
    return {
        "question_id": None,
        "question": _io(q, "input", QUESTION_KEYS),
        "answer": answer,
        "retrieved": docs,
        "retrieval_ms": out["retrieval_ms"],
        "generation_ms": out["generation_ms"],
        "total_ms": (q.end - q.start) / 1e6,
        "input_tokens": out["input_tokens"],
        "output_tokens": out["output_tokens"],
        "error": q.error,
    }


def _key(text: str) -> str:
    return " ".join(text.split())


def read(path: Path, dataset: GoldenDataset | None = None) -> Imported:
    """The file's traced questions as records; with `dataset`, only its questions."""
    spans = read_spans(path)
    questions, notes = _questions(spans)
    if not questions:
        raise SourceError(
            f"{path}: {len(spans)} spans and no traced question (a span with an input above "
            "a retriever or LLM span, OpenInference or GenAI attributes)"
            + "".join(f"; {note}" for note in notes)
        )
    models: set[str] = set()
    counter = _Counter()
    newest: dict[str, dict[str, Any]] = {}
    for q in questions:  # oldest first: a later trace of the same question replaces it
        record = _record(q, models, counter)
        newest[_key(record["question"])] = record
    if counter.uncounted:
        notes.append(
            f"{counter.uncounted} LlamaIndex LLM call(s) report no token counts: counting "
            "them as a direct run does needs llama-index-core (pip install llama-index-core); "
            "their tokens are left unknown"
        )
    if len(newest) < len(questions):
        notes.append(
            f"{len(questions) - len(newest)} repeated question(s): the newest trace of each kept"
        )
    records = list(newest.values())
    if dataset is not None:
        ids = {_key(dq.question): dq.id for dq in dataset.questions}
        unmatched = [r["question"] for r in records if _key(r["question"]) not in ids]
        records = [
            {**r, "question_id": ids[_key(r["question"])]}
            for r in records
            if _key(r["question"]) in ids
        ]
        if unmatched:
            quoted = "; ".join(shown(t, 60) for t in unmatched[:10])
            more = f" and {len(unmatched) - 10} more" if len(unmatched) > 10 else ""
            notes.append(
                f"{len(unmatched)} traced question(s) not in dataset {dataset.name!r} "
                f"(matched by exact text), not imported: {quoted}{more}"
            )
        if not records:
            raise SourceError(
                f"{path}: none of its {len(newest)} traced questions is in dataset {dataset.name!r}"
            )
    return Imported(
        records=records,
        config={"pipeline": {"source": "otel", "models": sorted(models)}},
        name=path.stem,
        notes=tuple(notes),
    )
