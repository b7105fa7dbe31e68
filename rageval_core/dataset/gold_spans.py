"""A question's gold spans resolved against the dataset's documents: by offsets, or by a
quote found exactly once.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rageval_core.dataset.files import Located
from rageval_core.dataset.records import Record, type_name
from rageval_core.errors import code_points, normalisation_note, shown
from rageval_core.models import Document, GoldenQuestion, GoldSpan
from rageval_core.userfiles import ascii_int

SPAN_FIELDS = ("doc_id", "start", "end", "text")


_MAX_OFFSET = 10**18


def _offset(value: Any) -> int | None:
    """A character offset: an integer >= 0 of at most 18 digits (YAML gives its digits as
    text, a `!!int` tag a number of either sign and any size); None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 0 <= value < _MAX_OFFSET else None
    return ascii_int(value) if isinstance(value, str) else None


def _span(raw: Any, docs: Mapping[str, Document], rec: Record, n: int) -> GoldSpan | None:
    """One gold span, by offsets or by a quote found exactly once; problems named."""
    where = f"gold_spans[{n}]"
    if not isinstance(raw, Located):
        rec.problem(f"{where}: expected a mapping, not {type_name(raw)}", "gold_spans")
        return None
    span = Record(raw, rec.file, rec.subject, rec.problems)
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
    if quote is not None and not isinstance(quote, str):
        span.problem(f"{where}: 'text' must be the quoted text, not {type_name(quote)}", "text")
        return None
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


def resolve_spans(
    q: GoldenQuestion,
    raw: Located,
    docs: Mapping[str, Document] | None,
    file: Path,
    problems: list[str],
) -> GoldenQuestion:
    """`q` with its gold spans resolved against the documents."""
    items = raw.get("gold_spans")
    if not isinstance(items, list) or not items:
        return q
    rec = Record(Located(raw.line_of("gold_spans")), file, f"question {q.id}", problems)
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
