"""The one failure type of a question (docs/metrics.md): a pure function of its scores.

The types are tried in the order of `models.FAILURE_TYPES` and the first that applies
wins, so every question lands in exactly one bucket and the buckets add up to the run:

    error           the pipeline raised
    missed_refusal  unanswerable, and the pipeline answered
    false_refusal   answerable, and the pipeline declined
    retrieval_miss  no gold chunk in the top `miss_k` (20)
    ranking_miss    a gold chunk in the top `miss_k` but none in the top `rank_k` (5)
    unfaithful      faithfulness < `faithfulness_min` (0.8)
    incorrect       answer correctness < `correctness_min` (0.5)
    ok              none of the above; also an unanswerable question correctly declined

A NULL score (no claims, no reference answer, judge error) never makes a question
unfaithful or incorrect: a missing measurement is not a failure. This module does no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from rageval_core.errors import ConfigError, shown
from rageval_core.models import FailureType

_INT_FIELDS = ("rank_k", "miss_k")
_SHARE_FIELDS = ("faithfulness_min", "correctness_min")


def _problems(values: Mapping[str, Any]) -> list[str]:
    """Every reason `values` is not a valid set of thresholds."""
    problems = []
    for name in _INT_FIELDS:
        v = values[name]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            problems.append(f"{name} must be an integer >= 1, got {shown(v)}")
    for name in _SHARE_FIELDS:
        v = values[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            problems.append(f"{name} must be a number between 0 and 1, got {shown(v)}")
    if not problems and values["rank_k"] > values["miss_k"]:
        # Otherwise ranking_miss could never apply and every such question would be ok.
        problems.append(
            f"rank_k ({shown(values['rank_k'])}) must not exceed miss_k ({shown(values['miss_k'])})"
        )
    return problems


@dataclass(frozen=True)
class FailureThresholds:
    """Cut-offs of `classify_failure`; invalid values raise ConfigError listing them all."""

    rank_k: int = 5
    miss_k: int = 20
    faithfulness_min: float = 0.8
    correctness_min: float = 0.5

    def __post_init__(self) -> None:
        problems = _problems(asdict(self))
        if problems:
            raise ConfigError("invalid failure thresholds", problems)

    @classmethod
    def from_mapping(cls, values: Any) -> FailureThresholds:
        """Build from a config mapping; missing keys keep their defaults.

        Unknown keys are an error (a misspelt `rank_K` must not silently fall back to 5).
        """
        if not isinstance(values, Mapping):
            raise ConfigError(f"failure thresholds must be a mapping, got {type(values).__name__}")
        known = {f.name for f in fields(cls)}
        problems = [
            f"unknown key {shown(key)} (expected one of: {', '.join(sorted(known))})"
            for key in values
            if key not in known
        ]
        merged = {**asdict(cls()), **{k: v for k, v in values.items() if k in known}}
        problems += _problems(merged)
        if problems:
            raise ConfigError("invalid failure thresholds", problems)
        for name in _SHARE_FIELDS:
            merged[name] = float(merged[name])
        return cls(**merged)


DEFAULT_THRESHOLDS = FailureThresholds()


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
