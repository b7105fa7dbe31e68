"""The corpus and documents files of a dataset (JSONL or a YAML list): chunks and documents,
validated, ids unique.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rageval_core.dataset.files import Items, parse_jsonl, text_of, yaml_of
from rageval_core.dataset.records import Record, type_name, unique_records
from rageval_core.errors import shown
from rageval_core.models import Chunk, Document

DOCUMENT_FIELDS = ("id", "text", "title", "version")
YAML_SUFFIXES = (".yaml", ".yml")


def _chunk(rec: Record) -> Chunk | None:
    cid, doc_id, text = rec.text("id"), rec.text("doc_id"), rec.text("text")
    version = rec.text("version", required=False)
    if cid is None or doc_id is None or text is None:
        return None
    return Chunk(id=cid, doc_id=doc_id, text=text, version=version)


def _document(rec: Record) -> Document | None:
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


def load_corpus(path: Path, problems: list[str]) -> list[Chunk] | None:
    """The chunks of a corpus file, or None when it cannot be read or parsed."""
    return _load_items(path, "corpus", "chunk", _chunk, problems)


def load_documents(path: Path, problems: list[str]) -> list[Document] | None:
    """The documents of a documents file, or None when it cannot be read or parsed."""
    return _load_items(path, "documents", "document", _document, problems)


def _load_items(
    path: Path, what: str, kind: str, build: Callable[[Record], Any | None], problems: list[str]
) -> list[Any] | None:
    """The validated records of a corpus or documents file (JSONL or a YAML list), or None
    when the file itself cannot be read or parsed."""
    records = _read_items(path, what, problems)
    if records is None:
        return None
    items = unique_records(records, path, kind, problems, build)
    if not items and not records:
        problems.append(f"{path}: {what} has no {kind}s")
    return items


def _read_items(path: Path, what: str, problems: list[str]) -> Items | None:
    """The items of a JSONL or YAML-list file, or None when it cannot be read or parsed."""
    text = text_of(path, what, problems)
    if text is None:
        return None
    if path.suffix.lower() not in YAML_SUFFIXES:
        return parse_jsonl(text, path, problems)
    parsed, value = yaml_of(text, path, what, problems)
    if not parsed:
        return None
    if not isinstance(value, Items):
        problems.append(f"{path}: a YAML {what} must be a list, not {type_name(value)}")
        return None
    return value
