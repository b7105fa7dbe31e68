"""Checking an LLM judge's reply against the reply schema (docs/judges.md).

Model output is untrusted. Anything off — not JSON, a missing or unknown verdict, wrong
types, a chunk id that was not retrieved — is a `ReplyError` with a message precise
enough to send back to the model in the repair request. Nothing here guesses a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rageval_core.bounded_json import BadJSON, loads
from rageval_core.models import JUDGE_METRICS, VERDICTS, ChunkVerdict, Claim, Statement

T = TypeVar("T")


class ReplyError(ValueError):
    """The reply does not follow the schema; the message says where."""


@dataclass(frozen=True)
class Asked:
    """What one request asked for, which is what its reply must hold: the selected
    `metrics`, the retrieved chunk ids in rank order, and whether a reference was given."""

    chunk_ids: tuple[str, ...]
    metrics: frozenset[str] = frozenset(JUDGE_METRICS)
    reference: bool = True


@dataclass(frozen=True)
class Reply:
    """A schema-valid reply. A refusal carries no claims and no answer relevancy; a part
    that was not asked for is empty (claims) or None."""

    claims: tuple[Claim, ...]
    refused: bool
    answer_correctness: float | None
    chunk_verdicts: tuple[ChunkVerdict, ...] | None = None
    answer_relevancy: float | None = None
    answer_relevancy_reason: str | None = None
    statements: tuple[Statement, ...] | None = None


def _opt_str(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ReplyError(f"{where} must be a string or null, got {type(value).__name__}")


def _text(raw: dict[str, Any], where: str) -> str:
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ReplyError(f"{where}.text must be a non-empty string")
    return text.strip()


def _reason(raw: dict[str, Any], where: str) -> str:
    reason = raw.get("reason", "")
    if not isinstance(reason, str):
        raise ReplyError(f"{where}.reason must be a string")
    return reason


def _score(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ReplyError(f"{where} must be a number")
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise ReplyError(f"{where} must lie between 0 and 1")
    return float(value)


def _evidence_id(raw: dict[str, Any], where: str, chunk_ids: Collection[str]) -> str | None:
    chunk_id = _opt_str(raw.get("evidence_chunk_id"), f"{where}.evidence_chunk_id")
    if chunk_id is not None and chunk_id not in chunk_ids:
        raise ReplyError(f"{where}.evidence_chunk_id {chunk_id[:60]!r} is not a retrieved chunk")
    return chunk_id


def _object(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ReplyError(f"{where} must be an object")
    return raw


def _list(content: dict[str, Any], key: str) -> list[Any]:
    if key not in content:
        raise ReplyError(f"'{key}' is missing")
    value = content[key]
    if not isinstance(value, list):
        raise ReplyError(f"'{key}' must be a list")
    return value


def _claim(raw: Any, i: int, chunk_ids: Collection[str]) -> Claim:
    where = f"claims[{i}]"
    raw = _object(raw, where)
    text = _text(raw, where)
    if "verdict" not in raw:
        raise ReplyError(f"{where} has no verdict")
    verdict = raw["verdict"]
    if verdict not in VERDICTS:
        raise ReplyError(f"{where}.verdict {str(verdict)[:40]!r} is not one of {VERDICTS}")
    return Claim(
        text=text,
        verdict=verdict,
        evidence_chunk_id=_evidence_id(raw, where, chunk_ids),
        evidence=_opt_str(raw.get("evidence"), f"{where}.evidence"),
        reason=_reason(raw, where),
    )


def _chunk_verdicts(raw: list[Any], chunk_ids: tuple[str, ...]) -> tuple[ChunkVerdict, ...]:
    """One verdict per retrieved chunk, each with its 1-based rank. Any order is taken;
    a repeated retrieved id is matched to its ranks in turn."""
    ranks: dict[str, list[int]] = {}
    for rank, chunk_id in enumerate(chunk_ids, 1):
        ranks.setdefault(chunk_id, []).append(rank)
    verdicts = []
    for i, item in enumerate(raw):
        where = f"chunks[{i}]"
        item = _object(item, where)
        chunk_id = item.get("id")
        if not isinstance(chunk_id, str):
            raise ReplyError(f"{where}.id must be a string")
        if chunk_id not in ranks:
            raise ReplyError(f"{where}.id {chunk_id[:60]!r} is not a retrieved chunk")
        if not ranks[chunk_id]:
            raise ReplyError(f"{where}.id {chunk_id[:60]!r} is judged more than once")
        relevant = item.get("relevant")
        if not isinstance(relevant, bool):
            raise ReplyError(f"{where}.relevant must be true or false")
        rank = ranks[chunk_id].pop(0)
        verdicts.append(ChunkVerdict(chunk_id, rank, relevant, _reason(item, where)))
    missing = [chunk_id for chunk_id, left in ranks.items() for _ in left]
    if missing:
        shown = ", ".join(repr(m[:60]) for m in missing[:3])
        raise ReplyError(f"'chunks' has no verdict for retrieved chunk(s) {shown}")
    return tuple(sorted(verdicts, key=lambda v: v.rank))


def _statement(raw: Any, i: int, chunk_ids: Collection[str]) -> Statement:
    where = f"statements[{i}]"
    raw = _object(raw, where)
    text = _text(raw, where)
    attributed = raw.get("attributed")
    if not isinstance(attributed, bool):
        raise ReplyError(f"{where}.attributed must be true or false")
    chunk_id = _evidence_id(raw, where, chunk_ids)
    if attributed and chunk_id is None:
        raise ReplyError(f"{where} is attributed but names no evidence_chunk_id")
    return Statement(
        text=text,
        attributed=attributed,
        evidence_chunk_id=chunk_id,
        evidence=_opt_str(raw.get("evidence"), f"{where}.evidence"),
        reason=_reason(raw, where),
    )


def _relevancy(content: dict[str, Any], refused: bool) -> tuple[float | None, str | None]:
    """Score and reason of an answer; (None, None) for a refusal, whatever was sent."""
    if "answer_relevancy" not in content:
        raise ReplyError("'answer_relevancy' is missing")
    raw = content["answer_relevancy"]
    if refused:
        return None, None
    if raw is None:
        raise ReplyError("'answer_relevancy' must be an object: the answer is not a refusal")
    raw = _object(raw, "'answer_relevancy'")
    return _score(raw.get("score"), "answer_relevancy.score"), _reason(raw, "answer_relevancy")


def decode(text: str) -> Any:
    """The JSON value of a reply's text (bounded_json: depth, number size, surrogates), or
    ReplyError."""
    try:
        return loads(text)
    except BadJSON as exc:
        raise ReplyError(f"not valid JSON ({exc})") from None


def parse_reply(content: Any, asked: Asked) -> Reply:
    """Validate a decoded reply object against what was asked, or raise ReplyError.

    Every selected part is required. Parts without their material carry nothing: answer
    correctness and statements without a reference, answer relevancy of a refusal.
    """
    if not isinstance(content, dict):
        raise ReplyError("the reply must be a JSON object")
    refused = content.get("refused")
    if not isinstance(refused, bool):
        raise ReplyError("'refused' must be true or false")
    ids, metrics = asked.chunk_ids, asked.metrics
    claims: tuple[Claim, ...] = ()
    if "faithfulness" in metrics:
        claims = tuple(_claim(c, i, ids) for i, c in enumerate(_list(content, "claims")))
    correctness = None
    if "answer_correctness" in metrics:
        if "answer_correctness" not in content:
            raise ReplyError("'answer_correctness' is missing")
        if content["answer_correctness"] is not None:
            correctness = _score(content["answer_correctness"], "'answer_correctness'")
    verdicts = None
    if "context_relevance" in metrics:
        verdicts = _chunk_verdicts(_list(content, "chunks"), ids) or None
    relevancy, why = _relevancy(content, refused) if "answer_relevancy" in metrics else (None, None)
    statements = None
    if "context_recall" in metrics and asked.reference:
        raw = _list(content, "statements")
        if not raw:
            raise ReplyError("'statements' is empty: split the reference answer into statements")
        statements = tuple(_statement(s, i, ids) for i, s in enumerate(raw))
    return Reply(
        claims=() if refused else claims,
        refused=refused,
        answer_correctness=correctness if asked.reference else None,
        chunk_verdicts=verdicts,
        answer_relevancy=relevancy,
        answer_relevancy_reason=why,
        statements=statements,
    )


# Strictness order for `conservative: true`: a doubt from either reading wins.
_STRICTNESS = {"supported": 0, "unsupported": 1, "contradicted": 2}


def _norm(text: str) -> str:
    return " ".join(text.lower().strip(" .!?;,").split())


def _min(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _partners(first: Sequence[T], second: Sequence[T], text: Callable[[T], str]) -> list[T | None]:
    """For each item of `first`, the item of `second` with the same normalised text, else
    the one at the same position, else None."""
    by_text = {_norm(text(x)): x for x in second}
    return [
        by_text.get(_norm(text(x)), second[i] if i < len(second) else None)
        for i, x in enumerate(first)
    ]


def _stricter_claims(first: tuple[Claim, ...], second: tuple[Claim, ...]) -> tuple[Claim, ...]:
    merged = []
    for claim, other in zip(first, _partners(first, second, lambda c: c.text), strict=True):
        if other is not None and _STRICTNESS[other.verdict] > _STRICTNESS[claim.verdict]:
            claim = Claim(
                claim.text, other.verdict, other.evidence_chunk_id, other.evidence, other.reason
            )
        merged.append(claim)
    return tuple(merged)


def _stricter_chunks(
    first: tuple[ChunkVerdict, ...] | None, second: tuple[ChunkVerdict, ...] | None
) -> tuple[ChunkVerdict, ...] | None:
    """Relevant only when both readings say so (both judged every rank)."""
    if first is None or second is None:
        return first or second
    return tuple(a if a.relevant <= b.relevant else b for a, b in zip(first, second, strict=True))


def _stricter_statements(
    first: tuple[Statement, ...] | None, second: tuple[Statement, ...] | None
) -> tuple[Statement, ...] | None:
    """Attributed only when both readings say so; the first reading's statements are
    the list, paired as claims are."""
    if first is None or second is None:
        return first or second
    merged = []
    for st, other in zip(first, _partners(first, second, lambda x: x.text), strict=True):
        if st.attributed and other is not None and not other.attributed:
            st = Statement(st.text, False, other.evidence_chunk_id, other.evidence, other.reason)
        merged.append(st)
    return tuple(merged)


def stricter(first: Reply, second: Reply) -> Reply:
    """Combine two readings of one answer, keeping the stricter verdict of each part.

    Claims: the first reply's claims are the list. Each is paired with the second reply's
    claim of the same normalised text, else the one at the same position; the pair's
    stricter verdict (contradicted > unsupported > supported) wins, with that reading's
    evidence and reason. Extra claims of the second reply have no partner and are not
    added. When only one reading calls the answer a refusal, the other's claims and
    answer relevancy are judged (checking claims is the stricter path). Answer
    correctness and answer relevancy are the lower of the two; a chunk is relevant and a
    reference statement attributed only when both readings say so (statements paired as
    claims are).
    """
    correctness = _min(first.answer_correctness, second.answer_correctness)
    if first.refused != second.refused:
        answered = second if first.refused else first
        claims, refused = answered.claims, False
        relevancy = (answered.answer_relevancy, answered.answer_relevancy_reason)
    else:
        claims, refused = _stricter_claims(first.claims, second.claims), first.refused
        readings = [
            (r.answer_relevancy, r.answer_relevancy_reason)
            for r in (first, second)
            if r.answer_relevancy is not None
        ]
        relevancy = min(readings, key=lambda r: r[0]) if readings else (None, None)
    return Reply(
        claims,
        refused,
        correctness,
        chunk_verdicts=_stricter_chunks(first.chunk_verdicts, second.chunk_verdicts),
        answer_relevancy=relevancy[0],
        answer_relevancy_reason=relevancy[1],
        statements=_stricter_statements(first.statements, second.statements),
    )
