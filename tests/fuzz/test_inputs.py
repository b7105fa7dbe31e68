"""Hostile input at every door a user or a tool hands us (issue 23): label files, each
importer's formats, span datasets (documents and gold spans), OpenTelemetry trace files,
a judge's replies and the GitHub API's answers, damaged at random at the byte and text
level (truncation, garbage bytes, deep nesting, huge numbers, lone surrogates, a
byte-order mark, wrong types, pieces repeated to hundreds of kilobytes). Each door answers
with its own family's error, bounded and naming the file or line, or with a value — never
another exception.

CI runs a few dozen examples per door; `bench/fuzz_long.py --inputs N` runs thousands.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from rageval_core.errors import RagevalError, SourceError
from rageval_core.importers import import_run
from rageval_core.judges.grounding import ungrounded
from rageval_core.judges.reply import Asked, ReplyError, decode, parse_reply
from rageval_core.labels import LabelStore
from rageval_core.pr_comment import PullRequest, post_or_update
from tests.core.github_api import Api
from tests.core.importers.conftest import FILES
from tests.fuzz.harness import fuzz_settings

SHA = "a" * 64
GOOD_LABEL = {
    "dataset": "qa",
    "dataset_sha256": SHA,
    "question_id": "q1",
    "claim": "A claim.",
    "verdict": "supported",
    "reviewer": "ann",
    "created_at": "2026-02-01T00:00:00Z",
}
# Text-level hostile pieces: each is valid JSON or near it, and breaks a naive reader.
HOSTILE_VALUES = [
    "[" * 3000 + "]" * 3000,
    '{"a":' * 200 + "1" + "}" * 200,
    "9" * 4000,
    "-" + "1" * 400,
    "1e999",
    '"\\ud800"',
    '"\\udfff x"',
    '"\\ud83d\\ude00"',
    "NaN",
    "null",
    "true",
    "[]",
    "{}",
    '"=HYPERLINK(1)"',
    '"<img src=x onerror=alert(1)>"',
    '"' + "x" * 10_000 + '"',
    "5",
]
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def damaged_text(draw, text: str) -> str:
    """`text` with one to three damages: a value swapped for a hostile one, a cut, garbage,
    or a size: a piece of it repeated up to thousands of times (records, lines or one value
    grown to hundreds of kilobytes)."""
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["value", "value", "cut", "insert", "bom", "grow"]))
        if kind == "value":
            starts = [i for i, c in enumerate(text) if c == ":"] or [0]
            at = draw(st.sampled_from(starts))
            end = min(
                (text.find(c, at + 1) for c in ",}" if text.find(c, at + 1) != -1),
                default=len(text),
            )
            text = text[: at + 1] + " " + draw(st.sampled_from(HOSTILE_VALUES)) + text[end:]
        elif kind == "cut":
            text = text[: draw(st.integers(0, len(text)))]
        elif kind == "insert":
            at = draw(st.integers(0, len(text)))
            junk = draw(st.sampled_from(['"', "\\", "\n", "\x00", "\ufeff", "[", "{", "\\u"]))
            text = text[:at] + junk + text[at:]
        elif kind == "grow":
            start = draw(st.integers(0, len(text)))
            piece = text[start : start + draw(st.integers(1, 200))] or "x"
            text = text[:start] + piece * draw(st.sampled_from([2, 50, 2_000])) + text[start:]
        else:
            text = "\ufeff" + text
    return text


# ---------------------------------------------------------------------------- labels


@st.composite
def label_lines(draw) -> list[str]:
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        base = {**GOOD_LABEL, "question_id": draw(st.sampled_from(["q1", "q2", "q3"]))}
        if draw(st.booleans()):
            base[draw(st.sampled_from(sorted(GOOD_LABEL) + ["note", "question_label"]))] = draw(
                JSONISH
            )
        line = json.dumps(base)
        lines.append(draw(damaged_text(line)) if draw(st.booleans()) else line)
    return lines


@fuzz_settings(ci=40)
@given(lines=label_lines(), raw_bytes=st.binary(max_size=20))
def test_any_label_file_loads_with_one_problem_per_bad_line(lines, raw_bytes):
    with tempfile.TemporaryDirectory(prefix="rageval-fuzz-labels-") as d:
        folder = Path(d, "qa", "ann")
        folder.mkdir(parents=True)
        path = folder / "x.jsonl"
        path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + b"\n")
        (folder / "y.jsonl").write_bytes(raw_bytes)
        got = LabelStore(d).load()
        assert got.table.num_rows == len(got.labels)  # Arrow takes every label loaded
        for p in got.problems:
            assert p.startswith(str(folder)) and len(p) <= 300, p
        x_problems = [p for p in got.problems if p.startswith(f"{path}:")]
        real_lines = [line for line in "\n".join(lines).split("\n") if line.strip()]
        assert len(x_problems) <= len(real_lines)


# ---------------------------------------------------------------------------- importers

IMPORT_KINDS = {
    "promptfoo": ("promptfoo", ".json"),
    "deepeval": ("deepeval", ".json"),
    "inspect-json": ("inspect", ".json"),
    "ragas-jsonl": ("ragas", ".jsonl"),
    "ragas": ("ragas", ".csv"),
}
_TEXTS = {kind: FILES[kind].read_text(encoding="utf-8") for kind in IMPORT_KINDS}


@fuzz_settings(ci=30)
@given(kind=st.sampled_from(sorted(IMPORT_KINDS)), data=st.data())
def test_any_damaged_import_file_is_a_run_or_one_source_error(kind, data):
    tool, suffix = IMPORT_KINDS[kind]
    text = data.draw(damaged_text(_TEXTS[kind]))
    with tempfile.TemporaryDirectory(prefix="rageval-fuzz-import-") as d:
        path = Path(d, f"in{suffix}")
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            import_run(tool, path, results_dir=Path(d, "results"), run_id="r")
        except SourceError as exc:
            note(str(exc))
            assert str(path) in str(exc) and len(exc.one_line()) <= 600


@fuzz_settings(ci=20)
@given(members=st.lists(st.sampled_from(HOSTILE_VALUES + ['{"id": "x"}']), max_size=4))
def test_any_inspect_eval_zip_is_a_run_or_one_source_error(members):
    import zipfile

    log = json.loads(FILES["inspect-json"].read_text())
    header = {k: v for k, v in log.items() if k != "samples"}
    with tempfile.TemporaryDirectory(prefix="rageval-fuzz-eval-") as d:
        path = Path(d, "x.eval")
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("header.json", json.dumps(header))
            for i, m in enumerate(members):
                z.writestr(f"samples/s{i}_epoch_1.json", m)
        try:
            import_run("inspect", path, results_dir=Path(d, "results"), run_id="r")
        except SourceError as exc:
            assert str(path) in str(exc)


# ---------------------------------------------------------------------------- span datasets

_DOCS = "".join(
    json.dumps(d) + "\n"
    for d in (
        {"id": "guide", "text": "Use hybrid search for product codes.\nBM25 finds exact terms."},
        {"id": "faq", "text": "Refunds take five days. Refunds are final.", "title": "FAQ"},
    )
)
_SPAN_QUESTIONS = [
    {
        "id": "q1",
        "question": "When hybrid search?",
        "reference_answer": "for product codes",
        "gold_spans": [
            {"doc_id": "guide", "start": 0, "end": 36},
            {"doc_id": "guide", "text": "BM25 finds exact terms."},
        ],
    },
    {
        "id": "q2",
        "question": "How long?",
        "reference_answer": "five days",
        "gold_spans": [{"doc_id": "faq", "text": "five days", "start": 13, "end": 22}],
    },
]
_SPAN_YAML = "name: spans\nversion: 1\ndocuments: documents.jsonl\nquestions:\n" + "".join(
    f"  - {json.dumps(q)}\n" for q in _SPAN_QUESTIONS
)


@fuzz_settings(ci=30)
@given(
    docs_as=st.sampled_from(["jsonl", "yaml"]),
    damage=st.sampled_from(["documents", "dataset"]),
    field_value=st.tuples(st.sampled_from(["doc_id", "start", "end", "text", "id"]), JSONISH),
    data=st.data(),
)
def test_any_damaged_span_dataset_loads_or_is_one_dataset_error(docs_as, damage, field_value, data):
    """Documents (JSONL or a YAML list) plus gold spans, a span's field set to anything
    and either file damaged: the dataset loads with spans inside their documents, or is
    a DatasetError naming its file, bounded."""
    from rageval_core.dataset import load_dataset
    from rageval_core.errors import DatasetError

    key, value = field_value
    questions = json.loads(json.dumps(_SPAN_QUESTIONS))
    questions[0]["gold_spans"][0][key] = value
    docs_name = f"documents.{docs_as}"
    docs = _DOCS if docs_as == "jsonl" else "".join(f"- {line}\n" for line in _DOCS.splitlines())
    dataset = f"name: spans\nversion: 1\ndocuments: {docs_name}\nquestions:\n" + "".join(
        f"  - {json.dumps(q)}\n" for q in questions
    )
    texts = {docs_name: docs, "dataset.yaml": dataset}
    target = docs_name if damage == "documents" else "dataset.yaml"
    texts[target] = data.draw(damaged_text(texts[target]))
    with tempfile.TemporaryDirectory(prefix="rageval-fuzz-spans-") as d:
        for name, text in texts.items():
            Path(d, name).write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            ds = load_dataset(Path(d, "dataset.yaml"))
        except DatasetError as exc:
            note(str(exc))
            assert d in str(exc) and len(exc.one_line()) <= 600, exc.one_line()
        else:
            texts_by_id = {doc.id: doc.text for doc in ds.documents}
            for q in ds.questions:
                for span in q.gold_spans:
                    assert 0 <= span.start < span.end <= len(texts_by_id[span.doc_id])


# ---------------------------------------------------------------------------- trace files


def _span(span_id: str, name: str, parent: str | None = None, **attrs: str) -> dict:
    return {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": span_id,
        **({"parentSpanId": parent} if parent else {}),
        "name": name,
        "startTimeUnixNano": "1000000",
        "endTimeUnixNano": "9000000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }


_TRACE = json.dumps(
    {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            _span(
                                "b7ad6b7169203331",
                                "query",
                                **{
                                    "openinference.span.kind": "CHAIN",
                                    "input.value": "What is hybrid search?",
                                    "output.value": "BM25 plus vectors.",
                                },
                            ),
                            _span(
                                "c7ad6b7169203332",
                                "retrieve",
                                "b7ad6b7169203331",
                                **{
                                    "openinference.span.kind": "RETRIEVER",
                                    "retrieval.documents.0.document.id": "guide#1",
                                    "retrieval.documents.0.document.content": "Use hybrid.",
                                },
                            ),
                        ]
                    }
                ]
            }
        ]
    }
)


@fuzz_settings(ci=30)
@given(lines=st.lists(damaged_text(_TRACE), min_size=1, max_size=3), clean=st.booleans())
def test_any_damaged_trace_file_is_a_run_or_one_source_error(lines, clean):
    """`rageval import otel` of OTLP JSON lines, damaged: a run or one SourceError naming
    the file, bounded."""
    with tempfile.TemporaryDirectory(prefix="rageval-fuzz-otel-") as d:
        path = Path(d, "traces.jsonl")
        body = ([_TRACE] if clean else []) + lines
        path.write_bytes("\n".join(body).encode("utf-8", "surrogatepass") + b"\n")
        try:
            import_run("otel", path, results_dir=Path(d, "results"), run_id="r")
        except SourceError as exc:
            note(str(exc))
            assert str(path) in str(exc) and len(exc.one_line()) <= 600, exc.one_line()


# ---------------------------------------------------------------------------- judge replies

_REPLY = json.dumps(
    {
        "claims": [{"text": "The museum opened in 1998.", "verdict": "supported", "reason": "r"}],
        "refused": False,
        "answer_correctness": 0.5,
    }
)


_ASKED = ("faithfulness", "answer_correctness")


@fuzz_settings(ci=60)
@given(text=st.one_of(damaged_text(_REPLY), st.text(max_size=50)))
def test_any_judge_reply_is_a_reply_or_a_reply_error(text):
    try:
        reply = parse_reply(decode(text), Asked(("c1",), frozenset(_ASKED)))
    except ReplyError as exc:
        assert len(str(exc)) < 1000
    else:
        problem = ungrounded(reply.claims, "The museum opened in 1998.")
        assert problem is None or "is not in the answer" in problem


@fuzz_settings(ci=40)
@given(
    text=st.one_of(
        damaged_text(
            json.dumps(
                {
                    "choices": [{"message": {"content": _REPLY}}],
                    "usage": {"prompt_tokens": 10},
                    "model": "judge-a",
                    "system_fingerprint": "fp_1",
                }
            )
        ),
        st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
    )
)
def test_any_judge_envelope_is_text_usage_and_what_served_it_or_a_judge_error(text):
    from rageval_core.errors import JudgeError
    from rageval_core.judges.openai import OpenAIJudge, Prices, Spend

    tally = Spend(Prices(1.0, 1.0))
    try:
        content, usage, served = OpenAIJudge._content(text.encode("utf-8", "surrogatepass"), tally)
    except JudgeError as exc:
        assert "impossible usage" in str(exc)
    else:
        assert isinstance(content, str) and all(0 <= v for v in usage.values())
        for said in (served.model, served.fingerprint):  # a server's words: one bounded line
            assert said is None or (isinstance(said, str) and "\n" not in said)
    assert tally.usd >= 0


# ---------------------------------------------------------------------------- GitHub API


@pytest.fixture(scope="module")
def api():
    """One server for the module; each example sets what every request gets back."""
    a = Api(lambda method, path: (200, {}, a.body))
    a.body = b"[]"
    yield a
    a.close()


_LISTING = json.dumps([{"id": 5, "body": "<!-- rageval -->\nold"}, {"id": 6, "body": "hi"}])


@fuzz_settings(ci=30)
@given(text=st.one_of(damaged_text(_LISTING), JSONISH.map(json.dumps)))
def test_any_api_answer_is_a_comment_or_one_error(api, text):
    api.body = text.encode("utf-8", "surrogatepass")
    pr = PullRequest(api.url, "o/r", 7)
    try:
        done, cid = post_or_update(pr, "table", "ghs_FUZZtoken0123456789abcdef")
    except RagevalError as exc:
        assert "ghs_FUZZ" not in str(exc) and len(exc.one_line()) <= 600
    else:
        assert done in ("updated", "created") and isinstance(cid, int) and cid > 0
