"""SQuAD v2 (or v1.1) JSON as a golden dataset (`rageval import squad`, docs/datasets.md).

Unlike the other importers, which turn a tool's results into a run, this one writes a
dataset folder: paragraphs become chunks, articles documents, answers gold spans. Every
problem of the file is reported at once in one `DatasetError` naming it.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rageval_core.dataset import documents_from_chunks, write_dataset
from rageval_core.errors import DatasetError
from rageval_core.models import QUESTION_ID_RE, Chunk, Document, GoldenQuestion, GoldSpan
from rageval_core.userfiles import parse_json, read_text


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


@dataclass(frozen=True)
class SquadImport:
    """What `import_squad` wrote, and how each answer was placed: at its `answer_start`,
    `moved` to the nearest occurrence on word boundaries, or `unplaced` (its paragraph
    kept as gold, no span). The last two are reported, never silent."""

    path: Path
    at_start: int
    moved: tuple[str, ...]
    unplaced: tuple[str, ...]


def locate_answer(paragraph: str, answer: str, start: int | None) -> tuple[int | None, bool]:
    """Where `answer` is in `paragraph`, and whether that is at `start`: there when the text
    matches, else the occurrence on word boundaries nearest to `start` (the first without
    one); an occurrence inside a word ("in" in "Northwind") is never taken."""
    if not answer:
        return None, False
    if start is not None and start >= 0 and paragraph[start : start + len(answer)] == answer:
        return start, True
    best: int | None = None
    at = paragraph.find(answer)
    while at >= 0:
        if _on_boundaries(paragraph, at, at + len(answer)) and (
            best is None or abs(at - (start or 0)) < abs(best - (start or 0))
        ):
            best = at
        at = paragraph.find(answer, at + 1)
    return best, False


def _on_boundaries(text: str, start: int, end: int) -> bool:
    """No word character on both sides of either edge of `text[start:end]`."""

    def word(i: int) -> bool:
        return 0 <= i < len(text) and (text[i].isalnum() or text[i] == "_")

    return not (word(start - 1) and word(start)) and not (word(end - 1) and word(end))


def _answer_spans(
    questions: list[GoldenQuestion], corpus: list[Chunk]
) -> tuple[list[Document], list[GoldenQuestion], tuple[str, ...], tuple[str, ...]]:
    """Documents (each article's paragraphs in order), each answer as a span of its
    document (`locate_answer`), and the ids of the questions whose answer was moved from
    its `answer_start` or placed nowhere (these keep their paragraph as gold only)."""
    docs, chunk_spans = documents_from_chunks(corpus)
    texts = {c.id: c.text for c in corpus}
    out, moved, unplaced = [], [], []
    for q in questions:
        if not q.answerable:
            out.append(q)
            continue
        (para_id,) = q.gold_chunk_ids
        start = q.gold_spans[0].start if q.gold_spans else None
        answer = q.reference_answer or ""
        at, exact = locate_answer(texts[para_id], answer, start)
        if at is None:
            unplaced.append(q.id)
            out.append(replace(q, gold_spans=()))
            continue
        if not exact:
            moved.append(q.id)
        base = chunk_spans[para_id]
        span = GoldSpan(base.doc_id, base.start + at, base.start + at + len(answer))
        out.append(replace(q, gold_spans=(span,)))
    return docs, out, tuple(moved), tuple(unplaced)


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
) -> SquadImport:
    """Turn a SQuAD v2 (or v1.1) JSON file into `dataset.yaml`, `corpus.jsonl` and
    `documents.jsonl` in out_dir.

    Impossible questions become unanswerable (no gold, no reference answer, tag
    `unanswerable`); the others take their first answer as reference, their paragraph as
    the gold chunk and the answer's `answer_start` as a gold span of the article (the
    paragraphs in order, joined by a blank line) where `locate_answer` finds it.
    """
    path = Path(json_path)
    problems: list[str] = []
    try:
        data = parse_json(read_text(path, "SQuAD file", DatasetError), path, DatasetError)
    except DatasetError as exc:
        problems.append(exc.message)
    else:
        questions, corpus = _from_squad(data, path, problems)
        if not questions and not problems:  # `questions: []` would not load either
            problems.append(f"{path}: no questions to import")
    if problems:
        raise DatasetError(f"{path}: cannot import SQuAD", problems)
    documents, questions, moved, unplaced = _answer_spans(questions, corpus)
    written = write_dataset(
        out_dir,
        name or slugify(path.stem),
        "1",
        questions,
        corpus,
        documents=documents,
        overwrite=overwrite,
    )
    placed = sum(q.answerable for q in questions) - len(moved) - len(unplaced)
    return SquadImport(written, placed, moved, unplaced)
