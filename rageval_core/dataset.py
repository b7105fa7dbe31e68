"""Golden datasets (docs/datasets.md): load and validate, content hash, write, import SQuAD v2.

Loading reports every problem at once — file, line, question id and what is wrong — in a
single `DatasetError`, so a user fixes a dataset in one pass instead of one error per run.
YAML is read with strings and null as its only scalars: `id: 001`, `version: 1.10` and
`reference_answer: yes` keep the text the user wrote instead of becoming 1, 1.1 and True.
This module never imports the dashboard and never writes outside the folder it is given.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from rageval_core.errors import ConfigError, DatasetError, code_points, normalisation_note, shown
from rageval_core.models import (
    QUESTION_ID_RE,
    Answerability,
    Chunk,
    Document,
    GoldenDataset,
    GoldenQuestion,
    GoldSpan,
)
from rageval_core.runs.atomic import atomic_write_bytes
from rageval_core.userfiles import SafeLoader, parse_json, parse_yaml, read_text

DATASET_FILE = "dataset.yaml"
CORPUS_FILE = "corpus.jsonl"
DOCUMENTS_FILE = "documents.jsonl"
QUESTION_FIELDS = (
    "id",
    "question",
    "reference_answer",
    "gold_chunk_ids",
    "gold_spans",
    "answerable",
    "tags",
)
SPAN_FIELDS = ("doc_id", "start", "end", "text")
DOCUMENT_FIELDS = ("id", "text", "title", "version")
YAML_SUFFIXES = (".yaml", ".yml")
QUESTION_ID_RULE = "1-128 of A-Z a-z 0-9 _ . : @ # + -, not starting with . : @ # + -"

_KEPT_SCALAR_TAGS = {"tag:yaml.org,2002:null", "tag:yaml.org,2002:merge"}


def example_dataset_path() -> Path:
    """The bundled example dataset (`rageval demo` and the tutorial use it)."""
    return Path(__file__).parent / "example" / DATASET_FILE


# ---------------------------------------------------------------------------- reading


class _Located(dict):
    """A mapping read from a file that remembers where it and each of its keys were written."""

    def __init__(self, line: int):
        super().__init__()
        self.line = line
        self.key_lines: dict[Any, int] = {}
        self.repeated: list[tuple[Any, int]] = []

    def put(self, key: Any, value: Any, line: int) -> None:
        if key in self:
            self.repeated.append((key, line))
        self[key] = value
        self.key_lines[key] = line

    def line_of(self, key: str | None) -> int:
        return self.key_lines.get(key, self.line)


class _Items(list):
    """A list read from a file that remembers the line of each item."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[int] = []

    def add(self, value: Any, line: int) -> None:
        self.append(value)
        self.lines.append(line)

    def line_of(self, value: Any, default: int) -> int:
        return self.lines[self.index(value)] if value in self else default


class _Loader(SafeLoader):  # type: ignore[misc, valid-type]
    """Safe YAML whose mappings know their line numbers; plain scalars stay strings."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag in _KEPT_SCALAR_TAGS]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> _Located:
    loader.flatten_mapping(node)
    mapping = _Located(node.start_mark.line + 1)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value", key_node.start_mark
            ) from None
        value = loader.construct_object(value_node, deep=True)
        mapping.put(key, value, key_node.start_mark.line + 1)
    return mapping


def _construct_sequence(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> _Items:
    items = _Items()
    for item in node.value:
        items.add(loader.construct_object(item, deep=True), item.start_mark.line + 1)
    return items


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)


def _read_text(path: Path, what: str, problems: list[str]) -> str | None:
    """The file's text, or None after recording why it cannot be read."""
    try:
        return read_text(path, what, DatasetError)
    except DatasetError as exc:
        problems.append(exc.message)
        return None


def _parse_yaml(text: str, path: Path, what: str, problems: list[str]) -> tuple[bool, Any]:
    """(parsed, value); a file that cannot be parsed becomes one problem naming it."""
    try:
        return True, parse_yaml(text, path, what, DatasetError, _Loader)
    except DatasetError as exc:
        problems.append(exc.message)
        return False, None


def _json_object(pairs: list[tuple[str, Any]], line: int) -> _Located:
    obj = _Located(line)
    for key, value in pairs:
        obj.put(key, value, line)
    return obj


def _parse_jsonl(text: str, path: Path, problems: list[str]) -> _Items:
    """One value per non-blank line; objects and items know their line numbers."""
    records = _Items()
    # split on "\n" only: str.splitlines would also split on U+2028 etc., which JSON
    # leaves unescaped inside strings.
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line, object_pairs_hook=functools.partial(_json_object, line=n))
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{n}: invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        except RecursionError:
            problems.append(f"{path}:{n}: JSON nested too deep to read")
            continue
        records.add(value, n)
    return records


# ---------------------------------------------------------------------------- validation


_TYPE_NAMES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "a boolean"),  # before int: bool is a subclass of int
    ((int, float), "a number"),
    (str, "a string"),
    (list, "a list"),
    (dict, "a mapping"),
)


def _type_name(value: Any) -> str:
    """How a problem names a value's type: the YAML/JSON word, not the Python class."""
    for kind, name in _TYPE_NAMES:
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


class _Record:
    """One mapping under validation; formats each problem with file, line and subject."""

    def __init__(self, data: _Located, file: Path, subject: str, problems: list[str]):
        self.data, self.file, self.subject, self.problems = data, file, subject, problems
        for key, line in data.repeated:
            self.problems.append(f"{file}:{line}: {subject}: field {shown(key)} is given twice")

    def problem(self, what: str, key: str | None = None) -> None:
        self.problems.append(f"{self.file}:{self.data.line_of(key)}: {self.subject}: {what}")

    def text(self, key: str, *, required: bool = True) -> str | None:
        """A string field; missing, empty-when-required or non-string values are problems."""
        if key not in self.data or self.data[key] is None:
            if required:
                self.problem(f"missing field '{key}'", key)
            return None
        value = self.data[key]
        if not isinstance(value, str):
            self.problem(f"'{key}' must be a string, not {_type_name(value)}", key)
            return None
        if required and not value.strip():
            self.problem(f"'{key}' is empty", key)
            return None
        return value

    def strings(self, key: str, *, required: bool = False, hint: str = "") -> tuple[str, ...]:
        """A list-of-strings field; a missing optional list is empty."""
        if key not in self.data:
            if required:
                self.problem(f"missing field '{key}'{hint}", key)
            return ()
        value = self.data[key]
        if not isinstance(value, list):
            self.problem(f"'{key}' must be a list, not {_type_name(value)}{hint}", key)
            return ()
        bad = [item for item in value if not isinstance(item, str) or not item.strip()]
        if bad:
            self.problem(f"'{key}' must hold non-empty strings, found {shown(bad[0])}", key)
        return tuple(item for item in value if isinstance(item, str) and item.strip())


def _subject_id(record: Any, fallback: str, kind: str, pattern: re.Pattern | None = None) -> str:
    """`question q007` when the record has a usable id (one that fits `pattern`, if
    given), else its position. A long or unprintable id is quoted and cut."""
    raw = record.get("id") if isinstance(record, dict) else None
    if not isinstance(raw, str) or not raw.strip():
        return fallback
    if pattern is not None and not pattern.fullmatch(raw):
        return fallback
    return f"{kind} {shown(raw, bare=True)}"


def _unique(
    records: _Items,
    file: Path,
    kind: str,
    problems: list[str],
    build: Callable[[_Record], Any | None],
) -> list[Any]:
    """`build` of each mapping of `records` (None: its problems are recorded); a repeated
    `id` is a problem and the first one is kept. `kind` names the record in messages."""
    out: list[Any] = []
    first_line: dict[str, int] = {}
    for raw, line in zip(records, records.lines, strict=True):
        if not isinstance(raw, _Located):
            problems.append(f"{file}:{line}: {kind}: expected a mapping, not {_type_name(raw)}")
            continue
        rec = _Record(raw, file, _subject_id(raw, kind, kind), problems)
        item = build(rec)
        if item is None:
            continue
        if item.id in first_line:
            rec.problem(f"duplicate {kind} id (first at line {first_line[item.id]})", "id")
            continue
        first_line[item.id] = raw.line
        out.append(item)
    return out


def _chunk(rec: _Record) -> Chunk | None:
    cid, doc_id, text = rec.text("id"), rec.text("doc_id"), rec.text("text")
    version = rec.text("version", required=False)
    if cid is None or doc_id is None or text is None:
        return None
    return Chunk(id=cid, doc_id=doc_id, text=text, version=version)


def _document(rec: _Record) -> Document | None:
    for key in rec.data:
        if key not in DOCUMENT_FIELDS:
            rec.problem(
                f"unknown field {shown(key)} (expected one of {', '.join(DOCUMENT_FIELDS)})", key
            )
    did, text = rec.text("id"), rec.text("text")
    title, version = rec.text("title", required=False), rec.text("version", required=False)
    if did is None or text is None:
        return None
    return Document(id=did, text=text, title=title, version=version)


def _load_items(
    path: Path, what: str, kind: str, build: Callable[[_Record], Any | None], problems: list[str]
) -> list[Any] | None:
    """The validated records of a corpus or documents file (JSONL or a YAML list), or None
    when the file itself cannot be read or parsed."""
    records = _records(path, what, problems)
    if records is None:
        return None
    items = _unique(records, path, kind, problems, build)
    if not items and not records:
        problems.append(f"{path}: {what} has no {kind}s")
    return items


def answerability(
    *,
    gold_chunk_ids: Sequence[str] | None,
    gold_spans: Sequence[Any] | None,
    answerable: bool | None,
    reference_answer: str | None,
) -> tuple[Answerability, str | None]:
    """The one answerability rule of a question (docs/metrics.md), and the problem, if any.

    Each argument is None when its key is absent from the question, so "no gold key" and
    "an explicitly empty gold list" stay apart:

    - gold given (chunk ids or spans)  → `answerable` (its retrieval is scored);
    - `answerable: false`, or an explicitly empty `gold_chunk_ids: []` / `gold_spans: []`
      → `unanswerable` (the pipeline should decline) — but an empty gold list beside a
      reference answer is a problem: which was meant is not ours to guess;
    - no gold key at all → no retrieval gold (retrieval figures NULL): `answerable` with a
      reference answer, `reference_free` with neither.

    Returns `(kind, problem)`; `problem` is None when the fields agree.
    """
    given = bool(gold_chunk_ids) or bool(gold_spans)
    empty_list = not given and (gold_chunk_ids is not None or gold_spans is not None)
    has_reference = bool(reference_answer and reference_answer.strip())
    if given:
        if answerable is False:
            return "answerable", "'answerable: false' but gold is given: remove one of them"
        return "answerable", None
    if answerable is False:
        return "unanswerable", None
    if empty_list:
        if has_reference:
            return "unanswerable", (
                "an empty gold list beside a reference answer: for a question the pipeline "
                "should decline, remove the reference answer (or write 'answerable: false'); "
                "for an answerable one, give its gold, or drop the empty list (no retrieval gold)"
            )
        if answerable is True:
            return "unanswerable", "'answerable: true' but the gold list is empty"
        return "unanswerable", None
    return ("answerable" if has_reference else "reference_free"), None


_BOOLEANS = {"true": True, "false": False}


def _flag(rec: _Record, key: str) -> bool | None:
    """A boolean field (`true`/`false`; YAML scalars arrive as text here), None if absent."""
    raw = rec.data.get(key)
    if raw is None or isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in _BOOLEANS:
        return _BOOLEANS[raw.strip().lower()]
    rec.problem(f"'{key}' must be true or false, not {shown(raw)}", key)
    return None


def _question(
    raw: Any, index: int, file: Path, line: int, problems: list[str]
) -> GoldenQuestion | None:
    if not isinstance(raw, _Located):
        problems.append(
            f"{file}:{line}: questions[{index}]: expected a mapping, not {_type_name(raw)}"
        )
        return None
    subject = _subject_id(raw, f"questions[{index}]", "question", QUESTION_ID_RE)
    rec = _Record(raw, file, subject, problems)
    for key in raw:
        if key not in QUESTION_FIELDS:
            rec.problem(
                f"unknown field {shown(key)} (expected one of {', '.join(QUESTION_FIELDS)})", key
            )
    qid, text = rec.text("id"), rec.text("question")
    if qid is not None and not QUESTION_ID_RE.fullmatch(qid):
        rec.problem(f"id {shown(qid)} is not a valid question id ({QUESTION_ID_RULE})", "id")
        qid = None
    reference = rec.text("reference_answer", required=False)
    gold = rec.strings("gold_chunk_ids")
    spans = raw.get("gold_spans")
    if "gold_spans" in raw and not isinstance(spans, list):
        rec.problem(f"'gold_spans' must be a list, not {_type_name(spans)}", "gold_spans")
        spans = None
    tags = rec.strings("tags")
    for gid in dict.fromkeys(g for g in gold if gold.count(g) > 1):
        rec.problem(f"gold chunk {shown(gid)} is listed twice", "gold_chunk_ids")
    kind, problem = answerability(
        gold_chunk_ids=gold if "gold_chunk_ids" in raw else None,
        gold_spans=spans if "gold_spans" in raw else None,
        answerable=_flag(rec, "answerable"),
        reference_answer=reference,
    )
    if problem:
        rec.problem(problem, "gold_chunk_ids" if "gold_chunk_ids" in raw else "gold_spans")
    if qid is None or text is None:
        return None
    return GoldenQuestion(
        id=qid,
        question=text,
        reference_answer=reference,
        gold_chunk_ids=tuple(dict.fromkeys(gold)),
        tags=tuple(dict.fromkeys(tags)),
        answerability=kind,
    )


# ---------------------------------------------------------------------------- documents


def _records(path: Path, what: str, problems: list[str]) -> _Items | None:
    """The items of a JSONL or YAML-list file, or None when it cannot be read or parsed."""
    text = _read_text(path, what, problems)
    if text is None:
        return None
    if path.suffix.lower() not in YAML_SUFFIXES:
        return _parse_jsonl(text, path, problems)
    parsed, value = _parse_yaml(text, path, what, problems)
    if not parsed:
        return None
    if not isinstance(value, _Items):
        problems.append(f"{path}: a YAML {what} must be a list, not {_type_name(value)}")
        return None
    return value


_OFFSET = re.compile(r"[0-9]{1,18}")  # ASCII digits: `str.isdigit` takes `²`, which int() refuses
_MAX_OFFSET = 10**18


def _offset(value: Any) -> int | None:
    """A character offset: an integer >= 0 of at most 18 digits (YAML gives its digits as
    text, a `!!int` tag a number of either sign and any size); None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 0 <= value < _MAX_OFFSET else None
    if isinstance(value, str) and _OFFSET.fullmatch(value.strip()):
        return int(value.strip())
    return None


def _span(raw: Any, docs: Mapping[str, Document], rec: _Record, n: int) -> GoldSpan | None:
    """One gold span, by offsets or by a quote found exactly once; problems named."""
    where = f"gold_spans[{n}]"
    if not isinstance(raw, _Located):
        rec.problem(f"{where}: expected a mapping, not {_type_name(raw)}", "gold_spans")
        return None
    span = _Record(raw, rec.file, rec.subject, rec.problems)
    for key in raw:
        if key not in SPAN_FIELDS:
            span.problem(
                f"{where}: unknown field {shown(key)} (expected doc_id, start, end or text)", key
            )
    doc_id = span.text("doc_id")
    if doc_id is None:
        return None
    doc = docs.get(doc_id)
    if doc is None:
        span.problem(f"{where}: document {shown(doc_id)} is not in the documents", "doc_id")
        return None
    quote = raw.get("text")
    if "start" in raw or "end" in raw:
        start, end = _offset(raw.get("start")), _offset(raw.get("end"))
        if start is None or end is None:
            span.problem(
                f"{where}: 'start' and 'end' must both be integers >= 0 (at most 18 digits)",
                "start",
            )
            return None
        if not 0 <= start < end <= len(doc.text):
            span.problem(
                f"{where}: needs 0 <= start < end <= {len(doc.text)} (the length of "
                f"{shown(doc_id)}), got {start}, {end}",
                "start",
            )
            return None
        if quote is not None and doc.text[start:end] != quote:
            span.problem(
                f"{where}: the text at {start}-{end} is {shown(doc.text[start:end])}, "
                f"not {shown(quote)}{normalisation_note(doc.text[start:end], quote)}",
                "text",
            )
            return None
        return GoldSpan(doc_id, start, end)
    if not isinstance(quote, str) or not quote:
        span.problem(f"{where}: give 'start' and 'end', or the quoted 'text'", "doc_id")
        return None
    first = doc.text.find(quote)
    if first < 0:
        nfc = unicodedata.normalize("NFC", quote)
        other = unicodedata.normalize("NFC", doc.text).find(nfc) >= 0
        note = (
            f"; the document has it in another Unicode normalisation (the quote: "
            f"{code_points(quote[:12])}; normalise both to NFC)"
            if other
            else ""
        )
        span.problem(
            f"{where}: quote {shown(quote)} is not in document {shown(doc_id)}{note}", "text"
        )
        return None
    again = doc.text.find(quote, first + 1)
    if again >= 0:
        span.problem(
            f"{where}: quote {shown(quote)} is found more than once in {shown(doc_id)} "
            f"(at {first} and {again}): give 'start' and 'end', or a longer quote",
            "text",
        )
        return None
    return GoldSpan(doc_id, first, first + len(quote))


def _spans(
    q: GoldenQuestion,
    raw: _Located,
    docs: Mapping[str, Document] | None,
    file: Path,
    problems: list[str],
) -> GoldenQuestion:
    """`q` with its gold spans resolved against the documents."""
    items = raw.get("gold_spans")
    if not isinstance(items, list) or not items:
        return q
    rec = _Record(_Located(raw.line_of("gold_spans")), file, f"question {q.id}", problems)
    if docs is None:
        rec.problem("gold_spans need the dataset's 'documents:'")
        return q
    found: list[GoldSpan] = []
    for n, item in enumerate(items):
        span = _span(item, docs, rec, n)
        if span is not None and span in found:
            rec.problem(f"gold_spans[{n}]: {span.label} is listed twice")
        elif span is not None:
            found.append(span)
    return replace(q, gold_spans=tuple(found))


def _questions(
    raw: Any, top: _Located, file: Path, problems: list[str]
) -> list[tuple[GoldenQuestion, _Located]]:
    line = top.line_of("questions")
    if not isinstance(raw, _Items):
        problems.append(f"{file}:{line}: 'questions' must be a list, not {_type_name(raw)}")
        return []
    if not raw:
        problems.append(f"{file}:{line}: 'questions' is empty")
    found: list[tuple[GoldenQuestion, _Located]] = []
    first_line: dict[str, int] = {}
    for i, (item, item_line) in enumerate(zip(raw, raw.lines, strict=True)):
        q = _question(item, i, file, item_line, problems)
        if q is None:
            continue
        if q.id in first_line:
            problems.append(
                f"{file}:{item.line_of('id')}: question {q.id}: "
                f"duplicate question id (first at line {first_line[q.id]})"
            )
            continue
        first_line[q.id] = item.line_of("id")
        found.append((q, item))
    return found


def _gold_line(raw: _Located, gid: str) -> int:
    """The line of one gold id: its own line in a block list, else the field's line."""
    items = raw.get("gold_chunk_ids")
    default = raw.line_of("gold_chunk_ids")
    return items.line_of(gid, default) if isinstance(items, _Items) else default


def _reference(top: _Located, rec: _Record, key: str, path: Path) -> Path | None:
    ref = rec.text(key, required=False)
    if ref is not None and not ref.strip():
        rec.problem(f"'{key}' is empty", key)
        return None
    return path.parent / ref if ref else None


def load_dataset(path: str | os.PathLike[str]) -> GoldenDataset:
    """Read, validate and hash a golden dataset; raise one DatasetError listing every problem."""
    path = Path(path)
    problems: list[str] = []
    text = _read_text(path, "dataset", problems)
    parsed, top = (False, None) if text is None else _parse_yaml(text, path, "dataset", problems)
    if not parsed:
        raise DatasetError(f"{path}: cannot load golden dataset", problems)
    if not isinstance(top, _Located):
        what = "the file is empty" if top is None else f"found {_type_name(top)}"
        problems.append(f"{path}: expected a mapping with name, version, corpus, questions; {what}")
        raise DatasetError(f"{path}: invalid golden dataset", problems)

    rec = _Record(top, path, "dataset", problems)
    name, version = rec.text("name"), rec.text("version")
    corpus_path = _reference(top, rec, "corpus", path)
    documents_path = _reference(top, rec, "documents", path)
    if "corpus" not in top and "documents" not in top:
        rec.problem("missing field 'corpus' (or 'documents')")
    corpus = _load_items(corpus_path, "corpus", "chunk", _chunk, problems) if corpus_path else None
    documents = (
        _load_items(documents_path, "documents", "document", _document, problems)
        if documents_path
        else None
    )
    if "questions" in top:
        questions = _questions(top["questions"], top, path, problems)
    else:
        rec.problem("missing field 'questions'")
        questions = []
    doc_map = {d.id: d for d in documents} if documents is not None else None
    questions = [(_spans(q, raw, doc_map, path, problems), raw) for q, raw in questions]

    known = {c.id for c in corpus} if corpus is not None else set()
    for q, raw in questions:
        for gid in q.gold_chunk_ids:
            if corpus_path is None:
                problems.append(
                    f"{path}:{_gold_line(raw, gid)}: question {q.id}: "
                    f"gold chunk {shown(gid)} needs the dataset's 'corpus:'"
                )
                break
            if corpus is not None and gid not in known:
                problems.append(
                    f"{path}:{_gold_line(raw, gid)}: question {q.id}: "
                    f"gold chunk {shown(gid)} is not in the corpus ({corpus_path})"
                )
    loaded = (corpus_path is None or corpus is not None) and (
        documents_path is None or documents is not None
    )
    if problems or name is None or version is None or not loaded:
        raise DatasetError(f"{path}: invalid golden dataset", problems)
    qs = tuple(q for q, _ in questions)
    chunks, docs = tuple(corpus or ()), tuple(documents or ())
    return GoldenDataset(
        name=name,
        version=version,
        path=str(path),
        questions=qs,
        corpus=chunks,
        sha256=dataset_sha256(name, version, qs, chunks, docs),
        documents=docs,
    )


# ---------------------------------------------------------------------------- hashing


def _canonical_question(q: GoldenQuestion) -> dict[str, Any]:
    """A question's content; the keys added for spans appear only when used, so the hash of
    a dataset written before them is unchanged."""
    out: dict[str, Any] = {
        "id": q.id,
        "question": q.question,
        "reference_answer": q.reference_answer,
        "gold_chunk_ids": sorted(q.gold_chunk_ids),
        "tags": sorted(q.tags),
    }
    if q.gold_spans:
        out["gold_spans"] = sorted([s.doc_id, s.start, s.end] for s in q.gold_spans)
    if q.answerability != ("answerable" if q.gold_chunk_ids else "unanswerable"):
        out["answerability"] = q.answerability  # not what the gold ids alone would say
    return out


def canonical_form(
    name: str,
    version: str,
    questions: Iterable[GoldenQuestion],
    corpus: Iterable[Chunk],
    documents: Iterable[Document] = (),
) -> dict[str, Any]:
    """The content a dataset version is made of, in a fixed order.

    Questions, chunks and documents are sorted by id and gold ids, spans and tags are
    sorted, because their order carries no meaning; everything else (every text, every
    id) is kept verbatim. `documents` appear only when the dataset has some.
    """
    form: dict[str, Any] = {
        "name": name,
        "version": version,
        "questions": [_canonical_question(q) for q in sorted(questions, key=lambda q: q.id)],
        "corpus": [
            {"id": c.id, "doc_id": c.doc_id, "text": c.text, "version": c.version}
            for c in sorted(corpus, key=lambda c: c.id)
        ],
    }
    docs = sorted(documents, key=lambda d: d.id)
    if docs:
        form["documents"] = [
            {"id": d.id, "text": d.text, "title": d.title, "version": d.version} for d in docs
        ]
    return form


def dataset_sha256(
    name: str,
    version: str,
    questions: Iterable[GoldenQuestion],
    corpus: Iterable[Chunk],
    documents: Iterable[Document] = (),
) -> str:
    """sha256 of the canonical JSON form: blind to YAML layout, key order and comments."""
    form = canonical_form(name, version, questions, corpus, documents)
    data = json.dumps(form, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------- writing


def _chunk_dict(c: Chunk) -> dict[str, Any]:
    d = {"id": c.id, "doc_id": c.doc_id, "text": c.text}
    return d if c.version is None else {**d, "version": c.version}


def _question_dict(q: GoldenQuestion) -> dict[str, Any]:
    """The question as `load_dataset` reads it back with the same answerability."""
    d: dict[str, Any] = {"id": q.id, "question": q.question, "reference_answer": q.reference_answer}
    if q.gold_chunk_ids:
        d["gold_chunk_ids"] = list(q.gold_chunk_ids)
    if q.gold_spans:
        d["gold_spans"] = [
            {"doc_id": s.doc_id, "start": s.start, "end": s.end} for s in q.gold_spans
        ]
    if not q.answerable:
        if q.reference_answer:
            d["answerable"] = False
        else:
            d["gold_chunk_ids"] = []
    d["tags"] = list(q.tags)
    return d


def _document_dict(doc: Document) -> dict[str, Any]:
    d: dict[str, Any] = {"id": doc.id, "text": doc.text}
    if doc.title is not None:
        d["title"] = doc.title
    if doc.version is not None:
        d["version"] = doc.version
    return d


def _jsonl(items: Iterable[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in items).encode("utf-8")


def write_dataset(
    out_dir: str | os.PathLike[str],
    name: str,
    version: str,
    questions: Iterable[GoldenQuestion],
    corpus: Iterable[Chunk],
    *,
    documents: Iterable[Document] = (),
    overwrite: bool = False,
) -> Path:
    """Write `corpus.jsonl` and/or `documents.jsonl`, then `dataset.yaml`, each atomically;
    return the dataset path. A corpus is written when there are chunks or no documents.

    The data files go first so a dataset file never names one that is not there yet.
    An existing dataset is kept unless `overwrite`, because golden sets are curated by hand.
    """
    out = Path(out_dir)
    target = out / DATASET_FILE
    if target.exists() and not overwrite:
        raise ConfigError(f"{target} already exists; use --force to replace it")
    chunks, docs = list(corpus), list(documents)
    doc: dict[str, Any] = {"name": name, "version": version}
    files: list[tuple[str, bytes]] = []
    if chunks or not docs:
        doc["corpus"] = CORPUS_FILE
        files.append((CORPUS_FILE, _jsonl(_chunk_dict(c) for c in chunks)))
    if docs:
        doc["documents"] = DOCUMENTS_FILE
        files.append((DOCUMENTS_FILE, _jsonl(_document_dict(d) for d in docs)))
    doc["questions"] = [_question_dict(q) for q in questions]
    try:
        for file, data in files:
            atomic_write_bytes(out / file, data)
        atomic_write_bytes(
            target,
            yaml.safe_dump(
                doc, sort_keys=False, allow_unicode=True, default_flow_style=None
            ).encode("utf-8"),
        )
    except OSError as exc:
        raise ConfigError(f"cannot write the dataset to {out}: {exc.strerror or exc}") from exc
    return target


# ---------------------------------------------------------------------------- id gold to spans

PIECE_SEPARATOR = "\n\n"
"""What joins the in-order chunks of a document when documents are rebuilt from a corpus."""


def document_id(chunk: Chunk) -> str:
    """The document a chunk is a piece of: its `doc_id`, and `@version` when it has one
    (two versions of a document are two texts)."""
    return chunk.doc_id if chunk.version is None else f"{chunk.doc_id}@{chunk.version}"


def documents_from_chunks(corpus: Iterable[Chunk]) -> tuple[list[Document], dict[str, GoldSpan]]:
    """Documents rebuilt from a corpus whose chunks are in-order pieces of their documents
    (corpus order), joined by `PIECE_SEPARATOR`; and each chunk's span in its document."""
    pieces: dict[str, list[Chunk]] = {}
    for c in corpus:
        pieces.setdefault(document_id(c), []).append(c)
    docs, spans = [], {}
    for did, chunks in pieces.items():
        pos = 0
        for c in chunks:
            spans[c.id] = GoldSpan(did, pos, pos + len(c.text))
            pos += len(c.text) + len(PIECE_SEPARATOR)
        text = PIECE_SEPARATOR.join(c.text for c in chunks)
        docs.append(Document(did, text, title=chunks[0].doc_id, version=chunks[0].version))
    return docs, spans


def to_spans(dataset: GoldenDataset) -> tuple[list[Document], list[GoldenQuestion]]:
    """The dataset's documents rebuilt from its corpus, and its questions with each gold
    chunk also given as a span of its document (ids kept: spans are then scored)."""
    docs, spans = documents_from_chunks(dataset.corpus)
    questions = [
        replace(q, gold_spans=tuple(spans[g] for g in q.gold_chunk_ids)) if q.gold_chunk_ids else q
        for q in dataset.questions
    ]
    return docs, questions


def write_spans(
    dataset_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    overwrite: bool = False,
) -> Path:
    """`rageval dataset to-spans`: the dataset written with documents and gold spans."""
    ds = load_dataset(dataset_path)
    if not ds.corpus:
        raise DatasetError(f"{dataset_path}: has no corpus to rebuild documents from")
    docs, questions = to_spans(ds)
    return write_dataset(
        out_dir, ds.name, ds.version, questions, ds.corpus, documents=docs, overwrite=overwrite
    )


# ---------------------------------------------------------------------------- SQuAD v2


def slugify(text: str) -> str:
    """ASCII letters and digits in lower case joined by '-': `Sky_(Genève)` -> `sky-geneve`."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-") or "doc"


def _unique_slug(title: str, taken: set[str]) -> str:
    base = slug = slugify(title)
    n = 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def _field(obj: Any, key: str, kind: type) -> Any:
    """obj[key] when obj is an object and the value has the expected type, else None."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, kind) else None


def squad_question_id(raw: str) -> str:
    """A SQuAD id as a question id: kept when it fits `QUESTION_ID_RE`; otherwise accents
    are dropped, every run of other characters becomes `_`, leading `. : @ # + -` go, at
    most 100 characters are kept, and `-` plus the first 12 hex digits of the id's sha256
    are added. Deterministic, and two ids map to one only if their hashes collide, which
    the import reports as a duplicate id like any other."""
    if QUESTION_ID_RE.fullmatch(raw):
        return raw
    ascii_text = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode()
    safe = re.sub(r"[^A-Za-z0-9_.:@#+-]+", "_", ascii_text).lstrip(".:@#+-")[:100] or "q"
    return f"{safe}-{hashlib.sha256(raw.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


def _squad_question(
    qa: Any, chunk_id: str, where: str, problems: list[str]
) -> GoldenQuestion | None:
    qid, text = _field(qa, "id", str), _field(qa, "question", str)
    if not qid or not text or not text.strip():
        problems.append(f"{where}: a question needs non-empty 'id' and 'question' strings")
        return None
    qid = squad_question_id(qid)
    if qa.get("is_impossible") is True:
        return GoldenQuestion(qid, text, None, (), ("squad", "unanswerable"))
    answers = _field(qa, "answers", list)
    answer = _field(answers[0], "text", str) if answers else None
    if answer is None:
        problems.append(f"{where}: question {qid}: an answerable question needs 'answers'")
        return None
    start = _field(answers[0], "answer_start", int)
    # the answer as a span of its paragraph (made a span of the document by the caller)
    spans = () if start is None else (GoldSpan(chunk_id, start, start + len(answer)),)
    return GoldenQuestion(qid, text, answer, (chunk_id,), ("squad",), gold_spans=spans)


def _answer_spans(
    questions: list[GoldenQuestion], corpus: list[Chunk]
) -> tuple[list[Document], list[GoldenQuestion]]:
    """Documents (each article's paragraphs in order) and each answer's `answer_start` as a
    span of its document. An answer whose text is not at its `answer_start` is looked for
    in its paragraph; found nowhere, the question keeps its paragraph as gold only."""
    docs, chunk_spans = documents_from_chunks(corpus)
    texts = {c.id: c.text for c in corpus}
    out = []
    for q in questions:
        if not q.gold_spans:
            out.append(q)
            continue
        (rel,) = q.gold_spans
        para, answer = texts[rel.doc_id], q.reference_answer or ""
        start = rel.start
        if para[start : start + len(answer)] != answer:
            start = para.find(answer)
        if start < 0 or not answer:
            out.append(replace(q, gold_spans=()))
            continue
        base = chunk_spans[rel.doc_id]
        span = GoldSpan(base.doc_id, base.start + start, base.start + start + len(answer))
        out.append(replace(q, gold_spans=(span,)))
    return docs, out


def _from_squad(
    data: Any, path: Path, problems: list[str]
) -> tuple[list[GoldenQuestion], list[Chunk]]:
    """Paragraphs become chunks `<title slug>#<paragraph index>`; each question keeps its
    id, or gets a safe one (`squad_question_id`) when it does not fit `QUESTION_ID_RE`."""
    articles = _field(data, "data", list)
    if articles is None:
        problems.append(f"{path}: expected a JSON object with a 'data' list of articles")
        return [], []
    questions: list[GoldenQuestion] = []
    corpus: list[Chunk] = []
    slugs: set[str] = set()
    seen: set[str] = set()
    for a, article in enumerate(articles):
        title, paragraphs = _field(article, "title", str), _field(article, "paragraphs", list)
        if title is None or paragraphs is None:
            problems.append(f"{path}: data[{a}]: an article needs 'title' and 'paragraphs'")
            continue
        doc_id = _unique_slug(title, slugs)
        for p, para in enumerate(paragraphs):
            where = f"{path}: data[{a}].paragraphs[{p}]"
            context, qas = _field(para, "context", str), _field(para, "qas", list)
            if context is None or qas is None:
                problems.append(f"{where}: a paragraph needs 'context' and 'qas'")
                continue
            if not context.strip():  # a chunk needs text: the dataset would not load
                problems.append(f"{where}: a paragraph needs a non-empty 'context'")
                continue
            chunk_id = f"{doc_id}#{p}"
            corpus.append(Chunk(id=chunk_id, doc_id=doc_id, text=context))
            for k, qa in enumerate(qas):
                q = _squad_question(qa, chunk_id, f"{where}.qas[{k}]", problems)
                if q is not None and q.id in seen:
                    problems.append(f"{where}.qas[{k}]: duplicate question id {q.id}")
                elif q is not None:
                    seen.add(q.id)
                    questions.append(q)
    return questions, corpus


def import_squad(
    json_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    name: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Turn a SQuAD v2 (or v1.1) JSON file into `dataset.yaml`, `corpus.jsonl` and
    `documents.jsonl` in out_dir.

    Impossible questions become unanswerable (no gold, no reference answer, tag
    `unanswerable`); the others take their first answer as reference, their paragraph as
    the gold chunk and the answer's `answer_start` as a gold span of the article (the
    paragraphs in order, joined by a blank line). Returns the path of `dataset.yaml`.
    """
    path = Path(json_path)
    problems: list[str] = []
    text = _read_text(path, "SQuAD file", problems)
    if text is not None:
        try:
            data = parse_json(text, path, "SQuAD file", DatasetError)
        except DatasetError as exc:
            problems.append(exc.message)
        else:
            questions, corpus = _from_squad(data, path, problems)
            if not questions and not problems:  # `questions: []` would not load either
                problems.append(f"{path}: no questions to import")
    if problems:
        raise DatasetError(f"{path}: cannot import SQuAD", problems)
    documents, questions = _answer_spans(questions, corpus)
    return write_dataset(
        out_dir,
        name or slugify(path.stem),
        "1",
        questions,
        corpus,
        documents=documents,
        overwrite=overwrite,
    )
