"""Writing a dataset folder (`dataset.yaml` beside its corpus and documents), each file
atomically, in the form `load_dataset` reads back unchanged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from rageval_core.errors import ConfigError
from rageval_core.models import Chunk, Document, GoldenQuestion
from rageval_core.runs.atomic import atomic_write_bytes

DATASET_FILE = "dataset.yaml"
CORPUS_FILE = "corpus.jsonl"
DOCUMENTS_FILE = "documents.jsonl"


def _chunk_dict(c: Chunk) -> dict[str, Any]:
    d = {"id": c.id, "doc_id": c.doc_id, "text": c.text}
    return d if c.version is None else {**d, "version": c.version}


def question_dict(q: GoldenQuestion) -> dict[str, Any]:
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


YAML_WIDTH = 1 << 16
"""Dataset YAML is written with each scalar on one line, never folded at 80 columns:
a new version (`dataset/revising.py`) round-trips the file at this width, so a long
question it did not change stays exactly as written (folded lines came back joined)."""


def dump_yaml(value: Any, *, flow: bool | None = False) -> str:
    """`value` as dataset YAML: keys in their order, text as text, no folding."""
    return yaml.safe_dump(
        value, sort_keys=False, allow_unicode=True, width=YAML_WIDTH, default_flow_style=flow
    )


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
    doc["questions"] = [question_dict(q) for q in questions]
    try:
        for file, data in files:
            atomic_write_bytes(out / file, data)
        atomic_write_bytes(
            target,
            dump_yaml(doc, flow=None).encode("utf-8"),
        )
    except OSError as exc:
        raise ConfigError(f"cannot write the dataset to {out}: {exc.strerror or exc}") from exc
    return target
