"""The reference-free verdicts of a question (chunk relevance, answer relevancy, context
recall) and the figures a run or a question cannot have, shaped for the pages.

Pure: no Streamlit, no I/O. The figures themselves come from the run's rows (the judge
wrote them, docs/metrics.md); this module only groups them and decides, from which
columns are NULL throughout, what a page leaves out and the one sentence saying why.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rageval_core.catalogue import BUILTIN, Catalogue
from rageval_core.models import ChunkVerdict, Statement

RELEVANCE_COLUMNS = ("context_relevance", "context_precision")
VERDICT_METRICS = ("context_relevance", "context_precision", "answer_relevancy", "context_recall")
"""The reference-free figures of one question, in the order the Question page shows them."""
RELEVANT_AT = 0.5
"""An answer relevancy at or above this reads as "relevant" (the label contract)."""


@dataclass(frozen=True)
class QuestionVerdicts:
    """The judge's reference-free verdicts on one question; None where it gave none."""

    chunk_verdicts: tuple[ChunkVerdict, ...] | None
    answer_relevancy: float | None
    answer_relevancy_reason: str | None
    statements: tuple[Statement, ...] | None
    figures: Mapping[str, float | None] = field(default_factory=dict)
    """The question's `VERDICT_METRICS` as the row holds them."""

    def chunk(self, rank: int) -> ChunkVerdict | None:
        """The verdict on the chunk at `rank` (1-based): ids may repeat, ranks do not."""
        return next((v for v in self.chunk_verdicts or () if v.rank == rank), None)

    @property
    def missed(self) -> tuple[Statement, ...]:
        """Reference statements no retrieved chunk holds: what the retriever missed."""
        return tuple(s for s in self.statements or () if not s.attributed)

    @property
    def attributed(self) -> tuple[Statement, ...]:
        return tuple(s for s in self.statements or () if s.attributed)


NO_VERDICTS = QuestionVerdicts(None, None, None, None)


def _number(v: Any) -> float | None:
    return None if v is None or v != v else float(v)  # NaN is a missing figure too


def verdicts_from_row(row: Mapping[str, Any]) -> QuestionVerdicts:
    """The verdicts in one question row (rageval_core/runs/rows.py `JUDGE_FIELDS`)."""
    chunks = row.get("chunk_verdicts")
    statements = row.get("recall_statements")
    return QuestionVerdicts(
        chunk_verdicts=None
        if chunks is None
        else tuple(
            ChunkVerdict(
                str(c.get("chunk_id") or ""),
                int(c.get("rank") or 0),
                bool(c.get("relevant")),
                c.get("reason") or "",
            )
            for c in chunks
        ),
        answer_relevancy=_number(row.get("answer_relevancy")),
        answer_relevancy_reason=row.get("answer_relevancy_reason"),
        statements=None
        if statements is None
        else tuple(
            Statement(
                str(s.get("text") or ""),
                bool(s.get("attributed")),
                s.get("evidence_chunk_id"),
                s.get("evidence"),
                s.get("reason") or "",
            )
            for s in statements
        ),
        figures={m: _number(row.get(m)) for m in VERDICT_METRICS},
    )


@dataclass(frozen=True)
class Gap:
    """Figures that cannot be computed in a scope (a run, a question), and why: a page
    leaves `metrics` out and shows `why` once instead of empty columns."""

    metrics: frozenset[str]
    why: str


NO_GOLD = "no retrieval gold: retrieval figures need gold ids or spans"
NO_REFERENCE = "no reference answers: correctness and context recall need a reference answer"
NOT_JUDGED = "no {what}: the judge was not asked for it, or the run was written before it existed"
_JUDGED = {  # the judge's figures a page may miss, with the words for them
    "context_relevance": ("context relevance verdicts", RELEVANCE_COLUMNS),
    "answer_relevancy": ("answer relevancy", ("answer_relevancy",)),
    "context_recall": ("context recall", ("context_recall",)),
    "faithfulness": ("faithfulness", ("faithfulness",)),
}


def gaps(
    null: Collection[str],
    cat: Catalogue = BUILTIN,
    *,
    refused: bool = False,
    unanswerable: bool = False,
) -> tuple[Gap, ...]:
    """What cannot be shown, given the columns that are NULL throughout the scope (`null`:
    every row of a run, or the one row of a question).

    No retrieval gold when no recall was computed; no reference when neither the
    reference answer nor correctness is there; else a judge figure missing everywhere was
    not asked for (or predates the verdict). A refusal has no faithfulness or answer
    relevancy to miss (`refused`: the scope is one declined answer), and an unanswerable
    question no gold to find (`unanswerable`: its figures say so already). A question with an
    error has every figure NULL: its page shows the error instead, so callers pass no
    columns for it.
    """
    if refused:
        null = set(null) - {"faithfulness", "answer_relevancy"}
    out = []
    if "recall_at_5" in null and not unanswerable:
        out.append(Gap(frozenset(cat.measure_names("retrieval")), NO_GOLD))
    no_reference = {"reference_answer", "answer_correctness"} <= set(null)
    if no_reference:
        out.append(Gap(frozenset({"answer_correctness", "context_recall"}), NO_REFERENCE))
    for name, (what, columns) in _JUDGED.items():
        if name in null and not (no_reference and name == "context_recall"):
            out.append(Gap(frozenset(columns), NOT_JUDGED.format(what=what)))
    return tuple(out)


def left_out(found: Sequence[Gap]) -> frozenset[str]:
    """Every metric the gaps leave out."""
    return frozenset().union(*(g.metrics for g in found))


def keep(columns: Sequence[str], found: Sequence[Gap]) -> list[str]:
    """`columns` without the ones the gaps leave out, order kept."""
    gone = left_out(found)
    return [c for c in columns if c not in gone]


def keep_figures(names: Sequence[str], found: Sequence[Gap], cat: Catalogue) -> list[str]:
    """Run-level figures (`recall_at_5`, `faithfulness_p10`, …) without the ones whose
    measure the gaps leave out, order kept."""
    gone = left_out(found)
    return [n for n in names if n not in gone and (cat.entry(n).of or n) not in gone]


def gaps_note(found: Sequence[Gap]) -> str:
    """The one note a page shows for its gaps: `Not shown — no retrieval gold: …; …`."""
    return "Not shown — " + "; ".join(g.why for g in found) + "." if found else ""


def chunk_heading(verdict: ChunkVerdict | None) -> str:
    """The words a retrieved chunk's heading gets for the judge's verdict on it."""
    if verdict is None:
        return ""
    return " · relevant" if verdict.relevant else " · not relevant"


def chunk_word(verdict: ChunkVerdict | None) -> str | None:
    """The judge's verdict on a chunk as a label's word ("relevant"/"irrelevant")."""
    if verdict is None:
        return None
    return "relevant" if verdict.relevant else "irrelevant"


def relevancy_word(score: float | None) -> str | None:
    """The judge's answer relevancy as a label's word ("relevant"/"irrelevant")."""
    if score is None:
        return None
    return "relevant" if score >= RELEVANT_AT else "irrelevant"
