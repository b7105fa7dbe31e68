"""The one failure type of a question (docs/metrics.md): a pure function of its scores.

The types are tried in the order of `models.FAILURE_TYPES` and the first that applies
wins, so every question lands in exactly one bucket and the buckets add up to the run:

    error               the pipeline raised
    missed_refusal      unanswerable, and the pipeline answered
    false_refusal       answerable, and the pipeline declined
    retrieval_miss      no gold chunk in the top `miss_k`
    ranking_miss        a gold chunk in the top `miss_k` but none in the top `rank_k`
    unscored            the judge could not score the answer (a judge error)
    irrelevant_context  no retrieval gold, and context relevance < `context_relevance_min`
    unfaithful          faithfulness < `faithfulness_min`
    off_topic           no correctness (no reference answer), and answer relevancy <
                        `answer_relevancy_min`
    incorrect           answer correctness < `correctness_min`
    ok                  none of the above; also an unanswerable question correctly declined

The thresholds are the run config's `failure_thresholds` (`thresholds.FailureThresholds`,
which holds their defaults). `irrelevant_context` and `off_topic` stand in for the
retrieval and correctness types where a question has no gold or no reference to be held
to (a reference-free question), so every question can fail. A NULL score (no claims, not
asked) never makes a question fail: a missing measurement is not a failure; but a
question the judge failed on is `unscored`, never `ok`. This module does no I/O.
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
    judge_failed: bool = False,
    context_relevance: float | None = None,
    answer_relevancy: float | None = None,
) -> FailureType:
    """The first failure type that applies, in the order of the module docstring.

    `gold_ranks` are the 1-based ranks of the gold chunks or spans (None = not retrieved),
    as from `retrieval.gold_ranks`; an answerable question whose list is empty or all None
    is a retrieval miss. `gold_ranks=None` means the question has no retrieval gold
    (`dataset.answerability`): the retrieval types are passed over, never a miss, and
    `context_relevance` is read instead. Retrieval is not judged for an unanswerable
    question: declining it is `ok` whatever was retrieved. `judge_failed`: the judge
    erred, so its refusal is unknown (`refused` False) and its scores NULL; an
    unanswerable question then cannot be told declined from answered. NaN scores compare
    false, so count as NULL.
    """
    if error:
        return "error"
    if not answerable:
        if judge_failed and not refused:
            return "unscored"
        return "ok" if refused else "missed_refusal"
    if refused:
        return "false_refusal"
    if gold_ranks is not None:
        best = min((r for r in gold_ranks if r is not None), default=math.inf)
        if best > thresholds.miss_k:
            return "retrieval_miss"
        if best > thresholds.rank_k:
            return "ranking_miss"
    if judge_failed:
        return "unscored"
    if _below(context_relevance, thresholds.context_relevance_min) and gold_ranks is None:
        return "irrelevant_context"
    if _below(faithfulness, thresholds.faithfulness_min):
        return "unfaithful"
    if _below(answer_relevancy, thresholds.answer_relevancy_min) and answer_correctness is None:
        return "off_topic"
    if _below(answer_correctness, thresholds.correctness_min):
        return "incorrect"
    return "ok"


def _below(score: float | None, minimum: float) -> bool:
    """Whether a known score is under its threshold (NULL and NaN are not)."""
    return score is not None and score < minimum
