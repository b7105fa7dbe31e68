"""Accepted candidates written into the dataset's next version (docs/generate.md,
"Accepting"): `rageval dataset accept` and the dashboard's Candidates page call `accept`.

The accepted and edited candidates become questions after the dataset's own, gold as
quotes; the documents they quote join the dataset's documents when it lacks them, and
`document_versions:` records the version of every document they quote (kept where the
dataset records one already). The dataset file is edited, never re-dumped
(`dataset.revising.write_revision`): comments, quotes, key order and scalar types stay as
the team wrote them. Without a dataset, a new one is written. Either way the folder is
written beside `out`, validated, and only then moved in.

Every quote is found again in the document the dataset will hold, exactly once, or the
whole accept is refused naming the candidate: an edited quote is the reviewer's text,
and a candidate may have been written from another version of a document.

A candidate with `replaces` (a stale question `rageval dataset refresh` queued for
review, candidates/stale.py) is never a new question: its quotes become that question's
gold spans, edited in place, and its stale mark is removed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from rageval_core.candidates.decisions import ACCEPT, Decision
from rageval_core.candidates.documents import read_documents
from rageval_core.candidates.files import (
    CANDIDATES_FILE,
    DOCUMENTS_FILE,
    question_entry,
    read_candidates,
)
from rageval_core.candidates.model import ACCEPTED, Candidate
from rageval_core.candidates.quotes import find_quote
from rageval_core.dataset import DATASET_FILE, load_dataset, write_revision
from rageval_core.dataset.documents import YAML_SUFFIXES
from rageval_core.dataset.hashing import document_sha256
from rageval_core.dataset.revising import staged_folder
from rageval_core.dataset.versions import VERSIONS_KEY
from rageval_core.dataset.writing import dump_yaml
from rageval_core.errors import DatasetError, shown
from rageval_core.labels.gold import next_version
from rageval_core.models import Document, GoldenDataset, GoldenQuestion, GoldSpan

ALL_PASSING = "all-passing"
"""The reviewer `passing_decisions` signs with: the checks, not a person."""


@dataclass(frozen=True)
class Accepted:
    """What an accept did: the dataset file written (None when nothing was new), its
    version, the questions added as (candidate id, question id), the candidates already
    in the dataset, the documents added, decisions naming no candidate of the folder, and
    the stale questions mended as (candidate id, question id)."""

    path: Path | None
    version: str
    added: tuple[tuple[str, str], ...]
    already: tuple[str, ...]
    documents: tuple[str, ...]
    unknown: tuple[str, ...]
    mended: tuple[tuple[str, str], ...] = ()


def passing_decisions(candidates: Sequence[Candidate]) -> dict[str, Decision]:
    """An accept of every candidate whose checks all passed (`--all-passing`); never one
    mending a stale question, which a person must look at."""
    return {
        c.id: Decision(c.id, ACCEPT, ALL_PASSING)
        for c in candidates
        if c.status == ACCEPTED and c.replaces is None
    }


def accept(
    candidates_dir: str | os.PathLike[str],
    decisions: Mapping[str, Decision],
    dataset_path: str | os.PathLike[str] | None,
    out_dir: str | os.PathLike[str],
    *,
    name: str | None = None,
    version: str | None = None,
) -> Accepted:
    """Write the next version of `dataset_path` (a new dataset `name`, version 1, when
    None) into `out_dir` with the candidates `decisions` accept (module docstring)."""
    folder = Path(candidates_dir)
    candidates = read_candidates(folder / CANDIDATES_FILE)
    by_id = {c.id: c for c in candidates}
    unknown = tuple(cid for cid in decisions if cid not in by_id)
    chosen = [decisions[c.id].applied(c) for c in candidates if _accepts(decisions.get(c.id))]
    own = read_documents(folder / DOCUMENTS_FILE)
    if dataset_path is None:
        for c in chosen:
            if c.replaces is not None:
                raise DatasetError(
                    f"candidate {c.id}: mends question {shown(c.replaces)} of a dataset: "
                    "give the dataset (--dataset) to mend it in"
                )
        return _new_dataset(folder, chosen, own, Path(out_dir), name, version or "1", unknown)
    source = load_dataset(dataset_path)
    version = version or next_version(source.version)
    if version == source.version:
        raise DatasetError(f"the new version must differ from the dataset's ({source.version})")
    docs = source.document_map()
    missing = {d.id: d for d in own if d.id not in docs}
    added: list[tuple[str, str]] = []
    already: list[str] = []
    new_questions: list[GoldenQuestion] = []
    new_docs: dict[str, Document] = {}
    taken = {q.id: q.question for q in source.questions}
    mended = _mended([c for c in chosen if c.replaces is not None], source)
    for c in chosen:
        if c.replaces is not None:
            if c.replaces not in mended:
                already.append(c.id)
            continue
        qid = _question_id(c, taken)
        if qid is None:
            already.append(c.id)
            continue
        for q in c.quotes:
            if q.doc_id not in docs and q.doc_id in missing:
                new_docs[q.doc_id] = missing[q.doc_id]
        texts = {**docs, **new_docs}
        new_questions.append(_question(c, qid, texts))
        taken[qid] = c.question
        added.append((c.id, qid))
    if not new_questions and not mended:
        return Accepted(None, version, (), tuple(already), (), unknown)
    every = {**docs, **new_docs}
    changed = [*new_questions, *mended.values()]
    quoted = {s.doc_id for q in changed for s in q.gold_spans} | set(new_docs)
    versions = {**{d: document_sha256(every[d]) for d in sorted(quoted)}, **_recorded(source)}
    with tempfile.TemporaryDirectory(prefix=".accept-") as tmp:
        documents = _documents_file(source, list(new_docs.values()), Path(tmp))
        path = write_revision(
            replace(source, documents=tuple(every.values())),
            version,
            (*(mended.get(q.id, q) for q in source.questions), *new_questions),
            out_dir,
            documents=documents,
            document_versions=versions or None,
        )
    return Accepted(
        path,
        version,
        tuple(added),
        tuple(already),
        tuple(new_docs),
        unknown,
        tuple((c.id, c.replaces) for c in chosen if c.replaces in mended),
    )


def _accepts(decision: Decision | None) -> bool:
    return decision is not None and decision.accepts


def _question_id(c: Candidate, taken: Mapping[str, str]) -> str | None:
    """The candidate's id, or `ID-2`, `ID-3`… when a question of another text holds it;
    None when a question of the same id (or one of those) asks the same: accepted before."""
    qid, n = c.id, 1
    while qid in taken:
        if taken[qid] == c.question:
            return None
        n += 1
        qid = f"{c.id}-{n}"
    return qid


def _mended(chosen: Sequence[Candidate], source: GoldenDataset) -> dict[str, GoldenQuestion]:
    """Question id -> the question as each chosen candidate with `replaces` mends it: its
    gold spans the candidate's quotes (each found once in the dataset's text), its stale
    mark removed. A question already so is left out (accepted before); a `replaces`
    naming no question of the dataset, a question mended twice, or a candidate whose
    question or reference was edited (they are the dataset's: edit its file) is a
    DatasetError naming the candidate."""
    questions = {q.id: q for q in source.questions}
    docs = source.document_map()
    out: dict[str, GoldenQuestion] = {}
    seen: set[str] = set()
    for c in chosen:
        qid = str(c.replaces)
        q = questions.get(qid)
        if q is None:
            raise DatasetError(
                f"candidate {c.id}: mends question {shown(qid)}, which {source.path} does not hold"
            )
        if qid in seen:
            raise DatasetError(f"candidate {c.id}: question {shown(qid)} is mended twice")
        seen.add(qid)
        if (c.question, c.reference_answer) != (q.question, q.reference_answer or ""):
            raise DatasetError(
                f"candidate {c.id}: mends the gold of question {shown(qid)} only; edit its "
                f"question or reference answer in {source.path} itself"
            )
        if not c.quotes:
            raise DatasetError(f"candidate {c.id}: mends question {shown(qid)} with no quote")
        spans = tuple(_span(c, quote.doc_id, quote.text, docs) for quote in c.quotes)
        if q.stale is not None or spans != q.gold_spans:
            out[qid] = replace(q, gold_spans=spans, stale=None)
    return out


def _question(c: Candidate, qid: str, docs: Mapping[str, Document]) -> GoldenQuestion:
    """The candidate as a dataset question, each quote found exactly once in the
    dataset's text of its document (a DatasetError naming the candidate otherwise)."""
    spans = tuple(_span(c, q.doc_id, q.text, docs) for q in c.quotes) if c.answerable else ()
    return GoldenQuestion(
        id=qid,
        question=c.question,
        reference_answer=c.reference_answer,
        tags=("generated", c.kind),
        gold_spans=spans,
        answerability="answerable" if c.answerable else "unanswerable",
    )


def _span(c: Candidate, doc_id: str, quote: str, docs: Mapping[str, Document]) -> GoldSpan:
    doc = docs.get(doc_id)
    if doc is None:
        raise DatasetError(
            f"candidate {c.id}: quotes document {shown(doc_id)}, which neither the dataset "
            "nor the candidates' documents hold"
        )
    found = find_quote(doc.text, quote)
    if not found.once:
        where = "is not in" if found.count == 0 else "stands more than once in"
        raise DatasetError(
            f"candidate {c.id}: the quote {shown(quote)} {where} document {shown(doc_id)}; "
            "a quote must stand exactly once (edit it to a longer or exact passage)"
        )
    start = found.starts[0]
    return GoldSpan(doc_id, start, start + len(quote))


def _recorded(source: GoldenDataset) -> dict[str, str]:
    """The `document_versions:` the dataset file records (validated by the loader)."""
    raw = yaml.safe_load(Path(source.path).read_text(encoding="utf-8"))
    recorded = raw.get(VERSIONS_KEY) if isinstance(raw, dict) else None
    return dict(recorded) if isinstance(recorded, dict) else {}


def _documents_file(source: GoldenDataset, new: list[Document], tmp: Path) -> Path | None:
    """The dataset's documents file with `new` appended as written (JSONL lines, or YAML
    items), its lines before untouched; a new `documents.jsonl` when it has none; None
    when nothing is added."""
    if not new:
        return None
    rows = [{k: v for k, v in asdict(d).items() if v is not None} for d in new]
    raw = yaml.safe_load(Path(source.path).read_text(encoding="utf-8"))
    ref = raw.get("documents") if isinstance(raw, dict) else None
    if not isinstance(ref, str):
        target = tmp / DOCUMENTS_FILE
        target.write_text(_jsonl(rows), encoding="utf-8")
        return target
    current = Path(source.path).parent / ref
    text = current.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        text += "\n"
    if current.suffix.lower() in YAML_SUFFIXES:
        text += dump_yaml(rows)
    else:
        text += _jsonl(rows)
    target = tmp / current.name
    target.write_text(text, encoding="utf-8")
    return target


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _new_dataset(
    folder: Path,
    chosen: list[Candidate],
    documents: Sequence[Document],
    out: Path,
    name: str | None,
    version: str,
    unknown: tuple[str, ...],
) -> Accepted:
    """A new dataset of the chosen candidates over every document they were generated
    from (the corpus a pipeline retrieves from), gold as quotes."""
    if not chosen:
        return Accepted(None, version, (), (), (), unknown)
    docs = {d.id: d for d in documents}
    for c in chosen:
        _question(c, c.id, docs)  # every quote stands once, or the candidate is named
    quoted = sorted({q.doc_id for c in chosen for q in c.quotes if c.answerable})
    mapping = {
        "name": name or folder.resolve().name,
        "version": version,
        "documents": DOCUMENTS_FILE,
        VERSIONS_KEY: {d: document_sha256(docs[d]) for d in quoted},
        "questions": [question_entry(c) for c in chosen],
    }
    with staged_folder(out) as work:
        shutil.copyfile(folder / DOCUMENTS_FILE, work / DOCUMENTS_FILE)
        (work / DATASET_FILE).write_text(
            dump_yaml(mapping),
            encoding="utf-8",
        )
        load_dataset(work / DATASET_FILE)  # what is written must validate
    return Accepted(
        out / DATASET_FILE, version, tuple((c.id, c.id) for c in chosen), (), (), unknown
    )
