"""The judge's reference-free verdicts on one question (chunk relevance, answer relevancy,
the reference statements of context recall) as the Question page reads them: parsed from
the question's one row (`views.question_detail`), never from a whole run."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rageval_core.models import ChunkVerdict, Statement


@dataclass(frozen=True)
class QuestionVerdicts:
    """The verdicts in one row (`runs/rows.py` `JUDGE_FIELDS`); None where the judge gave none."""

    chunk_verdicts: tuple[ChunkVerdict, ...] | None = None
    answer_relevancy: float | None = None
    answer_relevancy_reason: str | None = None
    statements: tuple[Statement, ...] | None = None

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


def verdicts_from_row(row: Mapping[str, Any]) -> QuestionVerdicts:
    """The verdicts of one question row (a dict of its columns)."""
    chunks = row.get("chunk_verdicts")
    statements = row.get("recall_statements")
    relevancy = row.get("answer_relevancy")
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
        # NaN is a missing figure too
        answer_relevancy=None if relevancy is None or math.isnan(relevancy) else float(relevancy),
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
    )
