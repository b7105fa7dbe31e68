"""The one failure type of a question (docs/metrics.md): a pure function of its scores.

The types are tried in the order of `models.FAILURE_TYPES` and the first that applies
wins, so every question lands in exactly one bucket and the buckets add up to the run:

    error           the pipeline raised
    missed_refusal  unanswerable, and the pipeline answered
    false_refusal   answerable, and the pipeline declined
    retrieval_miss  no gold chunk in the top `miss_k`
    ranking_miss    a gold chunk in the top `miss_k` but none in the top `rank_k`
    unfaithful      faithfulness < `faithfulness_min`
    incorrect       answer correctness < `correctness_min`
    ok              none of the above; also an unanswerable question correctly declined

The thresholds are the run config's `failure_thresholds` (`thresholds.FailureThresholds`,
which holds their defaults). A NULL score (no claims, no reference answer, judge error)
never makes a question unfaithful or incorrect: a missing measurement is not a failure.
This module does no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rageval_core.models import FailureType
from rageval_core.thresholds import DEFAULT_THRESHOLDS, FailureThresholds


def classify_failure(
    *,
    error: str | None,
    answerable: bool,
    refused: bool,
    gold_ranks: Sequence[int | None] | None,
    faithfulness: float | None,
    answer_correctness: float | None,
    thresholds: FailureThresholds = DEFAULT_THRESHOLDS,
) -> FailureType:
    """The first failure type that applies, in the order of the module docstring.

    `gold_ranks` are the 1-based ranks of the gold chunks or spans (None = not retrieved),
    as from `retrieval.gold_ranks`; an answerable question whose list is empty or all None
    is a retrieval miss. `gold_ranks=None` means the question has no retrieval gold
    (`dataset.answerability`): the retrieval types are passed over, never a miss.
    Retrieval is not judged for an unanswerable question: declining it is `ok` whatever
    was retrieved. NaN scores compare false, so count as NULL.
    """
    if error:
        return "error"
    if not answerable:
        return "ok" if refused else "missed_refusal"
    if refused:
        return "false_refusal"
    if gold_ranks is not None:
        best = min((r for r in gold_ranks if r is not None), default=math.inf)
        if best > thresholds.miss_k:
            return "retrieval_miss"
        if best > thresholds.rank_k:
            return "ranking_miss"
    if faithfulness is not None and faithfulness < thresholds.faithfulness_min:
        return "unfaithful"
    if answer_correctness is not None and answer_correctness < thresholds.correctness_min:
        return "incorrect"
    return "ok"
