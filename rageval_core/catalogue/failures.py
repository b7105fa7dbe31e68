"""Failure types as people read them: the stage each blames, their order and spelling."""

from __future__ import annotations

from collections.abc import Mapping

from rageval_core.models import FAILURE_TYPES

FAILURE_GROUPS: Mapping[str, str] = {
    "retrieval_miss": "retrieval",
    "ranking_miss": "retrieval",
    "irrelevant_context": "retrieval",
    "unfaithful": "generation",
    "off_topic": "generation",
    "incorrect": "generation",
    "missed_refusal": "abstention",
    "false_refusal": "abstention",
    "error": "error",
    "unscored": "judge",
    "ok": "ok",
}
"""The stage each failure type blames: the Diagnose chart and the report group by it. A
question the judge could not score blames the judge: it is neither a failure of the
pipeline nor `ok`."""
GROUP_ORDER: tuple[str, ...] = ("retrieval", "generation", "abstention", "error", "judge", "ok")


def failure_label(failure_type: str) -> str:
    """A failure type as people read it (`retrieval miss`): the one spelling of every
    page, chart and the report."""
    return failure_type.replace("_", " ")


def failure_rank(failure_type: str) -> tuple[int, int]:
    """Where a failure type is listed: by its group (`GROUP_ORDER`), then in the order of
    `FAILURE_TYPES` within it. An unknown type (a damaged file) goes last."""
    group = FAILURE_GROUPS.get(failure_type)
    if group is None:
        return (len(GROUP_ORDER), 0)
    return (GROUP_ORDER.index(group), FAILURE_TYPES.index(failure_type))
