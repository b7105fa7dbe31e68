"""The words and tile order the pages give the judge's reference-free verdicts, and what a
page leaves out for the metrics a run or question cannot have.

Pure: no Streamlit, no I/O. Which metrics are unavailable and why is decided once, in the
query layer (`rageval_core/query/_coverage.py`); this module only applies that answer to a
page's columns and writes its one note.
"""

from __future__ import annotations

from collections.abc import Sequence

from rageval_core.catalogue import Catalogue
from rageval_core.labels.model import RELEVANCE
from rageval_core.models import ChunkVerdict
from rageval_core.query import Unavailable
from rageval_core.thresholds import answer_relevant

VERDICT_METRICS = ("context_relevance", "context_precision", "answer_relevancy", "context_recall")
"""The reference-free figures of one question, in the order the Question page shows them."""


def left_out(found: Sequence[Unavailable]) -> frozenset[str]:
    """Every metric `found` leaves out."""
    return frozenset().union(*(u.metrics for u in found))


def keep(columns: Sequence[str], found: Sequence[Unavailable]) -> list[str]:
    """`columns` without the ones `found` leaves out, order kept."""
    gone = left_out(found)
    return [c for c in columns if c not in gone]


def keep_figures(names: Sequence[str], found: Sequence[Unavailable], cat: Catalogue) -> list[str]:
    """Run-level figures (`recall_at_5`, `faithfulness_p10`, …) without the ones whose
    measure `found` leaves out, order kept."""
    gone = left_out(found)
    return [n for n in names if n not in gone and (cat.entry(n).of or n) not in gone]


def gaps_note(found: Sequence[Unavailable]) -> str:
    """The one note a page shows for them: `Not shown — no retrieval gold: …; …`."""
    return "Not shown — " + "; ".join(u.reason for u in found) + "." if found else ""


def chunk_heading(verdict: ChunkVerdict | None) -> str:
    """The words a retrieved chunk's heading gets for the judge's verdict on it."""
    if verdict is None:
        return ""
    return " · relevant" if verdict.relevant else " · not relevant"


def chunk_word(verdict: ChunkVerdict | None) -> str | None:
    """The judge's verdict on a chunk as a label's word ("relevant"/"irrelevant")."""
    if verdict is None:
        return None
    return RELEVANCE[verdict.relevant]


def relevancy_word(score: float | None) -> str | None:
    """The judge's answer relevancy as a label's word ("relevant"/"irrelevant")."""
    if score is None:
        return None
    return RELEVANCE[bool(answer_relevant(score))]
