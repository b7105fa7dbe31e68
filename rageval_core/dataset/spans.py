"""Id gold to span gold (`rageval dataset to-spans`): each gold chunk given as a span of
its document — the dataset's own documents where it has them, else documents rebuilt from
a corpus whose chunks are in-order pieces of them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from rageval_core.dataset.load import load_dataset
from rageval_core.dataset.writing import write_dataset
from rageval_core.errors import DatasetError, shown
from rageval_core.models import Chunk, Document, GoldenDataset, GoldenQuestion, GoldSpan

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
    """The dataset's documents and its questions with each gold chunk also given as a span
    (ids kept: spans are then scored). Documents the dataset has are kept as they are, so
    every span it already holds stays on the text it quoted; the others are rebuilt from
    the corpus."""
    have = dataset.document_map()
    rebuilt, spans = documents_from_chunks(
        c for c in dataset.corpus if _own_document(c, have) is None
    )
    spans.update(_placed(dataset, have))
    questions = [
        replace(q, gold_spans=tuple(spans[g] for g in q.gold_chunk_ids))
        if q.gold_chunk_ids and not q.gold_spans
        else q
        for q in dataset.questions
    ]
    return [*dataset.documents, *rebuilt], questions


def _own_document(chunk: Chunk, documents: dict[str, Document]) -> Document | None:
    return documents.get(document_id(chunk)) or documents.get(chunk.doc_id)


def _placed(dataset: GoldenDataset, documents: dict[str, Document]) -> dict[str, GoldSpan]:
    """Each chunk of a document the dataset has, found in its text: after the previous
    chunk of that document (they are in-order pieces), else anywhere."""
    ends: dict[str, int] = {}
    spans = {}
    for c in dataset.corpus:
        doc = _own_document(c, documents)
        if doc is None:
            continue
        at = doc.text.find(c.text, ends.get(doc.id, 0))
        if at < 0:
            at = doc.text.find(c.text)
        if at < 0:
            raise DatasetError(
                f"{dataset.path}: chunk {shown(c.id)} is not in the text of its document "
                f"{shown(doc.id)}; to-spans keeps the dataset's documents and places each "
                "chunk in them"
            )
        spans[c.id] = GoldSpan(doc.id, at, at + len(c.text))
        ends[doc.id] = at + len(c.text)
    return spans


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
