"""Loading a golden dataset (docs/datasets.md): read, validate, hash.

Loading reports every problem at once — file, line, question id and what is wrong — in a
single `DatasetError`, so a user fixes a dataset in one pass instead of one error per run.
"""

from __future__ import annotations

import os
from pathlib import Path

from rageval_core.dataset.documents import load_corpus, load_documents
from rageval_core.dataset.files import Located, text_of, yaml_of
from rageval_core.dataset.gold_spans import resolve_spans
from rageval_core.dataset.hashing import dataset_sha256
from rageval_core.dataset.questions import gold_line, read_questions
from rageval_core.dataset.records import Record, type_name
from rageval_core.dataset.versions import VERSIONS_KEY, recorded_versions, version_warnings
from rageval_core.dataset.writing import DATASET_FILE
from rageval_core.errors import DatasetError, shown
from rageval_core.models import GoldenDataset


def example_dataset_path() -> Path:
    """The bundled example dataset (`rageval demo` and the tutorial use it)."""
    return Path(__file__).parent.parent / "example" / DATASET_FILE


def _reference(top: Located, rec: Record, key: str, path: Path) -> Path | None:
    ref = rec.text(key, required=False)
    if ref is not None and not ref.strip():
        rec.problem(f"'{key}' is empty", key)
        return None
    return path.parent / ref if ref else None


def load_dataset(path: str | os.PathLike[str]) -> GoldenDataset:
    """Read, validate and hash a golden dataset; raise one DatasetError listing every problem."""
    path = Path(path)
    problems: list[str] = []
    text = text_of(path, "dataset", problems)
    parsed, top = (False, None) if text is None else yaml_of(text, path, "dataset", problems)
    if not parsed:
        raise DatasetError(f"{path}: cannot load golden dataset", problems)
    if not isinstance(top, Located):
        what = "the file is empty" if top is None else f"found {type_name(top)}"
        problems.append(f"{path}: expected a mapping with name, version, corpus, questions; {what}")
        raise DatasetError(f"{path}: invalid golden dataset", problems)

    rec = Record(top, path, "dataset", problems)
    name, version = rec.text("name"), rec.text("version")
    corpus_path = _reference(top, rec, "corpus", path)
    documents_path = _reference(top, rec, "documents", path)
    if "corpus" not in top and "documents" not in top:
        rec.problem("missing field 'corpus' (or 'documents')")
    corpus = load_corpus(corpus_path, problems) if corpus_path else None
    documents = load_documents(documents_path, problems) if documents_path else None
    if "questions" in top:
        questions = read_questions(top["questions"], top, path, problems)
    else:
        rec.problem("missing field 'questions'")
        questions = []
    recorded = recorded_versions(rec)
    doc_map = {d.id: d for d in documents} if documents is not None else None
    # a stale question's spans were written against other texts: kept where they still
    # resolve, never a problem (refresh marked it for a reviewer to mend)
    questions = [
        (resolve_spans(q, raw, doc_map, path, problems if q.stale is None else []), raw)
        for q, raw in questions
    ]

    known = {c.id for c in corpus} if corpus is not None else set()
    for q, raw in questions:
        for gid in q.gold_chunk_ids:
            if corpus_path is None:
                problems.append(
                    f"{path}:{gold_line(raw, gid)}: question {q.id}: "
                    f"gold chunk {shown(gid)} needs the dataset's 'corpus:'"
                )
                break
            if corpus is not None and gid not in known:
                problems.append(
                    f"{path}:{gold_line(raw, gid)}: question {q.id}: "
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
        warnings=version_warnings(recorded, docs, path, top.line_of(VERSIONS_KEY)),
    )
