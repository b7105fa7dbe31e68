"""The content hash of a dataset version: blind to layout, key order and comments, so a
run names the exact questions and corpus it was scored on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from rageval_core.models import Chunk, Document, GoldenQuestion


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
    if q.stale is not None:
        out["stale"] = q.stale  # left out of runs: another set of questions is scored
    return out


def document_sha256(doc: Document) -> str:
    """The version of a document's text a dataset records (`document_versions:`): the
    sha256 of the text itself, so a change is seen even when nobody bumped `version`."""
    return hashlib.sha256(doc.text.encode("utf-8", "surrogatepass")).hexdigest()


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
