"""The cut-offs figures are read by, each defined once (docs/metrics.md).

- `FailureThresholds`: a question's failure type (`metrics/failure.py`), the run's shares
  below threshold (`runs/summary.py`), the review queue's "correct answer"
  (`query/_review.py`) and the catalogue's help all read a run's recorded
  `failure_thresholds` through `FailureThresholds.recorded`, defaults from this class only.
- `ANSWER_RELEVANT_MIN`: the answer relevancy that reads as "relevant" where a judge's
  score meets a person's relevance label (the Question and Review pages, the label joins),
  and the default `answer_relevancy_min` below which an answer is `off_topic`.

A value: no I/O, nothing of rageval but the errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from rageval_core.errors import ConfigError, shown

_INT_FIELDS = ("rank_k", "miss_k")
_SHARE_FIELDS = (
    "faithfulness_min",
    "correctness_min",
    "context_relevance_min",
    "answer_relevancy_min",
)
ANSWER_RELEVANT_MIN = 0.5
"""An answer relevancy at or above this reads as "relevant" (the label contract)."""


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
    """Cut-offs of the failure types (a run config's `failure_thresholds:`); invalid values
    raise ConfigError listing them all."""

    rank_k: int = 5
    miss_k: int = 20
    faithfulness_min: float = 0.8
    correctness_min: float = 0.5
    context_relevance_min: float = 0.1
    """Below it a question without retrieval gold is `irrelevant_context`: with five
    chunks retrieved, none relevant (by characters, `metrics/context.py`)."""
    answer_relevancy_min: float = ANSWER_RELEVANT_MIN
    """Below it an answer with no reference to be `incorrect` against is `off_topic`."""

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

    @classmethod
    def recorded(cls, config: Mapping[str, Any]) -> FailureThresholds:
        """The thresholds a run's config (as its manifest records it) was scored with: its
        `failure_thresholds`, else the defaults; ConfigError when they are invalid."""
        return cls.from_mapping(config.get("failure_thresholds") or {})


DEFAULT_THRESHOLDS = FailureThresholds()


def answer_relevant(score: float | None) -> bool | None:
    """Whether the judge's answer relevancy reads as relevant; None when it gave none."""
    return None if score is None else score >= ANSWER_RELEVANT_MIN
