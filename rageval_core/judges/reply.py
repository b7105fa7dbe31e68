"""Checking an LLM judge's reply against the reply schema (docs/judges.md).

Model output is untrusted. Anything off — not JSON, a missing or unknown verdict, wrong
types, a chunk id that was not retrieved — is a `ReplyError` with a message precise
enough to send back to the model in the repair request. Nothing here guesses a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from rageval_core.bounded_json import BadJSON, loads
from rageval_core.models import VERDICTS, Claim


class ReplyError(ValueError):
    """The reply does not follow the schema; the message says where."""


@dataclass(frozen=True)
class Reply:
    """A schema-valid reply. A refusal carries no claims."""

    claims: tuple[Claim, ...]
    refused: bool
    answer_correctness: float | None


def _opt_str(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ReplyError(f"{where} must be a string or null, got {type(value).__name__}")


def _claim(raw: Any, i: int, chunk_ids: Collection[str]) -> Claim:
    where = f"claims[{i}]"
    if not isinstance(raw, dict):
        raise ReplyError(f"{where} must be an object")
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ReplyError(f"{where}.text must be a non-empty string")
    if "verdict" not in raw:
        raise ReplyError(f"{where} has no verdict")
    verdict = raw["verdict"]
    if verdict not in VERDICTS:
        raise ReplyError(f"{where}.verdict {str(verdict)[:40]!r} is not one of {VERDICTS}")
    chunk_id = _opt_str(raw.get("evidence_chunk_id"), f"{where}.evidence_chunk_id")
    if chunk_id is not None and chunk_id not in chunk_ids:
        raise ReplyError(f"{where}.evidence_chunk_id {chunk_id[:60]!r} is not a retrieved chunk")
    reason = raw.get("reason", "")
    if not isinstance(reason, str):
        raise ReplyError(f"{where}.reason must be a string")
    return Claim(
        text=text.strip(),
        verdict=verdict,
        evidence_chunk_id=chunk_id,
        evidence=_opt_str(raw.get("evidence"), f"{where}.evidence"),
        reason=reason,
    )


def decode(text: str) -> Any:
    """The JSON value of a reply's text (bounded_json: depth, number size, surrogates), or
    ReplyError."""
    try:
        return loads(text)
    except BadJSON as exc:
        raise ReplyError(f"not valid JSON ({exc})") from None


def parse_reply(content: Any, chunk_ids: Collection[str]) -> Reply:
    """Validate a decoded reply object or raise ReplyError."""
    if not isinstance(content, dict):
        raise ReplyError("the reply must be a JSON object")
    claims = content.get("claims")
    if not isinstance(claims, list):
        raise ReplyError("'claims' must be a list")
    refused = content.get("refused")
    if not isinstance(refused, bool):
        raise ReplyError("'refused' must be true or false")
    correctness = content.get("answer_correctness")
    if correctness is not None:
        if isinstance(correctness, bool) or not isinstance(correctness, int | float):
            raise ReplyError("'answer_correctness' must be a number or null")
        if not (math.isfinite(correctness) and 0 <= correctness <= 1):
            raise ReplyError("'answer_correctness' must lie between 0 and 1")
        correctness = float(correctness)
    parsed = tuple(_claim(c, i, chunk_ids) for i, c in enumerate(claims))
    return Reply(claims=() if refused else parsed, refused=refused, answer_correctness=correctness)


# Strictness order for `conservative: true`: a doubt from either reading wins.
_STRICTNESS = {"supported": 0, "unsupported": 1, "contradicted": 2}


def _norm(text: str) -> str:
    return " ".join(text.lower().strip(" .!?;,").split())


def _min(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def stricter(first: Reply, second: Reply) -> Reply:
    """Combine two readings of one answer, keeping the stricter verdict per claim.

    The first reply's claims are the list. Each is paired with the second reply's claim of
    the same normalised text, else the one at the same position; the pair's stricter
    verdict (contradicted > unsupported > supported) wins, with that reading's evidence
    and reason. Extra claims of the second reply have no partner and are not added.
    When only one reading calls the answer a refusal, the other's claims are judged
    (checking claims is the stricter path). Answer correctness is the lower of the two.
    """
    correctness = _min(first.answer_correctness, second.answer_correctness)
    if first.refused != second.refused:
        answered = second if first.refused else first
        return Reply(answered.claims, False, correctness)
    by_text = {_norm(c.text): c for c in second.claims}
    merged = []
    for i, claim in enumerate(first.claims):
        other = by_text.get(_norm(claim.text))
        if other is None and i < len(second.claims):
            other = second.claims[i]
        if other is not None and _STRICTNESS[other.verdict] > _STRICTNESS[claim.verdict]:
            claim = Claim(
                claim.text, other.verdict, other.evidence_chunk_id, other.evidence, other.reason
            )
        merged.append(claim)
    return Reply(tuple(merged), first.refused, correctness)
