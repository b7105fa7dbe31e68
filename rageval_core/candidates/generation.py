"""One generation: candidates made (templated, or by the LLM when the judge is an HTTP
one), every one checked, coverage counted, and the report that goes with them.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rageval_core.candidates import templated
from rageval_core.candidates.checks import JudgeSupport, Vocabulary, verify
from rageval_core.candidates.coverage import Coverage, coverage
from rageval_core.candidates.model import ACCEPTED, Candidate
from rageval_core.judges import make_judge
from rageval_core.judges.offline import DEFAULT_THRESHOLD, OfflineJudge
from rageval_core.models import Document


@dataclass(frozen=True)
class Generation:
    candidates: list[Candidate]
    coverage: Coverage
    report: dict[str, Any]

    @property
    def accepted(self) -> int:
        return sum(c.status == ACCEPTED for c in self.candidates)


def generate(
    documents: Sequence[Document],
    n: int,
    *,
    judge: Mapping[str, Any] | None = None,
    mix: Mapping[str, float] | None = None,
    seeds: Sequence[str] = (),
    existing: Sequence[tuple[str, str]] = (),
) -> Generation:
    """`n` candidates over `documents`, checked. With an `openai` judge config they are
    asked of its endpoint and the reference answers checked by it; otherwise (None, or
    kind offline) they are templated and checked by the offline rules."""
    judge = dict(judge or {"kind": "offline"})
    started = time.perf_counter()
    errors: list[str] = []
    cost, cached = 0.0, 0
    if judge.get("kind") == "openai":
        # here, so an offline generation never loads the HTTP stack
        from rageval_core.candidates import llm
        from rageval_core.judges.openai import OpenAISettings

        made = llm.generate(
            documents, n, OpenAISettings.from_config(judge), mix or llm.DEFAULT_MIX, seeds
        )
        candidates, errors, cost, cached = made.candidates, made.errors, made.cost_usd, made.cached
        generator = f"llm ({llm.PROMPT_VERSION})"
    else:
        candidates = templated.generate(documents, n)
        generator = templated.GENERATOR
    generated = time.perf_counter()
    vocabulary = Vocabulary.of(documents)
    checker = make_judge({**judge, "metrics": ["faithfulness"]})
    try:
        support = JudgeSupport(checker) if judge.get("kind") == "openai" else None
        threshold = checker.threshold if isinstance(checker, OfflineJudge) else DEFAULT_THRESHOLD
        checked, index = verify(
            candidates,
            documents,
            vocabulary,
            existing=existing,
            support=support,
            threshold=threshold,
        )
    finally:
        checker.close()
    verified = time.perf_counter()
    cover = coverage(checked, documents)
    failed = Counter(ch.name for c in checked for ch in c.checks if not ch.passed)
    report = {
        "generator": generator,
        "judge": checker.describe().kind,
        "documents": len(documents),
        "characters": sum(len(d.text) for d in documents),
        "asked": n,
        "candidates": len(checked),
        "accepted_by_checks": sum(c.status == ACCEPTED for c in checked),
        "rejected": sum(c.status != ACCEPTED for c in checked),
        "failed_checks": dict(sorted(failed.items())),
        "kinds": dict(sorted(Counter(c.kind for c in checked).items())),
        "near_duplicate_comparisons": index.compared,
        "coverage": cover.to_json(),
        "errors": errors,
        "cost_usd": cost + (support.cost_usd if support else 0.0),
        "cost_usd_verification": support.cost_usd if support else 0.0,
        "cached_replies": cached,
        "seconds": {
            "generation": round(generated - started, 3),
            "verification": round(verified - generated, 3),
        },
    }
    return Generation(checked, cover, report)
