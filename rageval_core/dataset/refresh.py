"""`rageval dataset refresh`: a dataset's gold spans found again in a new version of its
documents (docs/datasets.md#refreshing-gold).

Each span is re-located by `anchoring.relocate`; one re-anchored keeps its quote and gets
its new offsets. A question with a span that vanished, changed or became ambiguous is
marked stale (with the reason) and left out of runs until a reviewer mends its gold. The
new version is written by `write_revision` (the file as the team wrote it, only the
changed lines), with the new documents and the sha256 of each (`document_versions:`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rageval_core.dataset.anchoring import Found, Lost, relocate
from rageval_core.dataset.documents import load_documents
from rageval_core.dataset.files import Located, text_of, yaml_of
from rageval_core.dataset.hashing import document_sha256
from rageval_core.dataset.revising import write_revision
from rageval_core.errors import DatasetError, shown
from rageval_core.models import Document, GoldenDataset, GoldenQuestion, GoldSpan

QUOTED = 80
"""How many characters of a span's text a reason or a report line quotes."""


@dataclass(frozen=True)
class LostSpan:
    """A gold span not found again: its question, where it was written, its text before,
    and what happened (`lost` None: its document is not in the new documents)."""

    question_id: str
    index: int
    line: int
    doc_id: str
    before: str
    lost: Lost | None

    @property
    def reason(self) -> str:
        """Why its question is stale, as `stale_reason:` says it."""
        where = f"gold_spans[{self.index}]"
        quote = shown(self.before, QUOTED)
        if self.lost is None:
            return f"{where}: document {shown(self.doc_id)} is not in the new documents"
        if self.lost.why == "changed":
            return f"{where}: {quote} now reads {shown(self.lost.after, QUOTED)}"
        if self.lost.why == "ambiguous":
            at = ", ".join(map(str, self.lost.at[:5])) + (", …" if len(self.lost.at) > 5 else "")
            return (
                f"{where}: {quote} now stands {len(self.lost.at)} times in "
                f"{shown(self.doc_id)} (at {at})"
            )
        return f"{where}: {quote} is no longer in {shown(self.doc_id)}"

    @property
    def after(self) -> str | None:
        """The text now where the span stood (`changed`), else None."""
        return None if self.lost is None else self.lost.after


@dataclass(frozen=True)
class RefreshPlan:
    """The new version of a dataset's gold against new documents."""

    source: GoldenDataset
    documents: tuple[Document, ...]
    questions: tuple[GoldenQuestion, ...]
    moved: Mapping[GoldSpan, GoldSpan]
    lost: tuple[LostSpan, ...]
    n_spans: int

    @property
    def stale_ids(self) -> tuple[str, ...]:
        """The questions this refresh marks stale, in dataset order."""
        return tuple(dict.fromkeys(s.question_id for s in self.lost))

    @property
    def versions(self) -> dict[str, str]:
        """Document id -> the sha256 of its new text, as the new version records it."""
        return {d.id: document_sha256(d) for d in sorted(self.documents, key=lambda d: d.id)}


def read_new_documents(path: str | os.PathLike[str]) -> tuple[Document, ...]:
    """The documents file given to refresh (JSONL or a YAML list, as `documents:`)."""
    problems: list[str] = []
    docs = load_documents(Path(path), problems)
    if problems or docs is None:
        raise DatasetError(f"{path}: cannot read the new documents", problems)
    return tuple(docs)


def plan_refresh(ds: GoldenDataset, documents: Sequence[Document]) -> RefreshPlan:
    """Every gold span of `ds` found again in `documents` (questions already stale are
    left as they are: their spans were written against older texts)."""
    if not ds.documents:
        raise DatasetError(
            f"{ds.path}: has no 'documents:' and so no gold spans to refresh "
            "(gold chunk ids belong to the corpus)"
        )
    old, new = ds.document_map(), {d.id: d for d in documents}
    written = _written_spans(Path(ds.path))
    moved: dict[GoldSpan, GoldSpan] = {}
    lost: list[LostSpan] = []
    questions = []
    n_spans = 0
    for q in ds.questions:
        if q.stale is not None or not q.gold_spans:
            questions.append(q)
            continue
        spans, gone = [], []
        for i, (span, (line, by_offsets)) in enumerate(
            zip(q.gold_spans, written[q.id], strict=True)
        ):
            n_spans += 1
            before = old[span.doc_id].text[span.start : span.end]
            doc = new.get(span.doc_id)
            where = (
                None
                if doc is None
                else relocate(
                    old[span.doc_id].text, span.start, span.end, doc.text, by_offsets=by_offsets
                )
            )
            if isinstance(where, Found):
                spans.append(GoldSpan(span.doc_id, where.start, where.end))
                if spans[-1] != span:
                    moved[span] = spans[-1]
            else:
                gone.append(LostSpan(q.id, i, line, span.doc_id, before, where))
        lost.extend(gone)
        if gone:
            questions.append(replace(q, stale="; ".join(s.reason for s in gone)))
        else:
            questions.append(replace(q, gold_spans=tuple(spans)))
    return RefreshPlan(ds, tuple(documents), tuple(questions), moved, tuple(lost), n_spans)


def _written_spans(path: Path) -> dict[str, list[tuple[int, bool]]]:
    """Question id -> each gold span item's (line, given by offsets?), in file order: a
    span given by its quote alone must stand exactly once, one given by offsets may be
    one copy among several. The file was just loaded: it parses and validates."""
    problems: list[str] = []
    _, top = yaml_of(text_of(path, "dataset", problems) or "", path, "dataset", problems)
    found: dict[str, list[tuple[int, bool]]] = {}
    for entry in top["questions"]:
        items = entry.get("gold_spans") or []
        found[entry["id"]] = [
            (item.line, "start" in item) for item in items if isinstance(item, Located)
        ]
    return found


def write_refresh(
    plan: RefreshPlan, documents: str | os.PathLike[str], version: str, out: str | os.PathLike[str]
) -> Path:
    """Write the planned version into `out`: the new documents file, moved offsets, stale
    marks and `document_versions:`, nothing else of the file changed."""
    return write_revision(
        plan.source,
        version,
        plan.questions,
        out,
        documents=Path(documents),
        moved=plan.moved,
        document_versions=plan.versions,
    )
