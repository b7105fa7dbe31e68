"""Which documents and sections the accepted candidates ask about (docs/generate.md).

A section (`documents.sections`) is covered when a quote of an accepted candidate
overlaps it; a document when one of its sections is. The uncovered ones are named, so
a team sees which parts of its documents no question tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rageval_core.candidates.documents import sections
from rageval_core.candidates.model import ACCEPTED, Candidate
from rageval_core.models import Document


@dataclass(frozen=True)
class Coverage:
    documents: int
    documents_covered: int
    sections: int
    sections_covered: int
    uncovered_documents: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "documents": self.documents,
            "documents_covered": self.documents_covered,
            "sections": self.sections,
            "sections_covered": self.sections_covered,
            "uncovered_documents": list(self.uncovered_documents),
        }

    def line(self) -> str:
        """`coverage: 9 of 11 documents, 40 of 212 sections (uncovered: a, b)`."""
        text = (
            f"coverage: {self.documents_covered} of {self.documents} documents, "
            f"{self.sections_covered} of {self.sections} sections"
        )
        shown = self.uncovered_documents[:5]
        if shown:
            more = len(self.uncovered_documents) - len(shown)
            text += f" (uncovered: {', '.join(shown)}" + (f" and {more} more)" if more else ")")
        return text


def coverage(candidates: Sequence[Candidate], documents: Sequence[Document]) -> Coverage:
    spans: dict[str, list[tuple[int, int]]] = {}
    for c in candidates:
        if c.status != ACCEPTED:
            continue
        for q in c.quotes:
            if q.start is not None and q.end is not None:
                spans.setdefault(q.doc_id, []).append((q.start, q.end))
    n_sections = covered_sections = 0
    uncovered = []
    for doc in documents:
        mine = spans.get(doc.id, [])
        parts = sections(doc.text)
        n_sections += len(parts)
        hit = sum(any(s < b and a < e for s, e in mine) for a, b in parts)
        covered_sections += hit
        if not hit:
            uncovered.append(doc.id)
    return Coverage(
        documents=len(documents),
        documents_covered=len(documents) - len(uncovered),
        sections=n_sections,
        sections_covered=covered_sections,
        uncovered_documents=tuple(uncovered),
    )
