"""Span metrics: retrieval scored on character ranges of documents (docs/metrics.md). Pure.

A retrieved chunk is a `Range` of one document once placed (`placement.py`), or None when
it could not be placed; gold is a set of `GoldSpan`s. With R_k the union of the ranges of
the top-k chunks and G the union of the gold spans, both per document:

    span_recall_at_K    = |R_k ∩ G| / |G|
    span_precision_at_K = |R_k ∩ G| / |R_k|        (0 when R_k is empty)
    span_iou_at_K       = |R_k ∩ G| / |R_k ∪ G|

|·| counts characters. Overlapping chunks count once (a union), an unplaced chunk adds no
characters, and with no gold span every figure is None (NULL, out of the means).

The ranked-list metrics of `retrieval.py` follow on span datasets from one relevance rule,
"a chunk is relevant when it overlaps a gold span":

    hit_at_K       = 1 if a top-k chunk is relevant, else 0
    recall_at_K    = gold spans overlapped by a top-k chunk / gold spans
    precision_at_K = relevant chunks in the top k / k      (k the divisor, as for ids)
    mrr            = 1 / rank of the first relevant chunk (0 if none)
    ndcg_at_10     = DCG / IDCG with gain 1 at a rank whose chunk overlaps a gold span no
                     earlier chunk overlapped, IDCG = Σ_{i=1}^{min(|spans|, 10)} 1/log2(i+1)

The nDCG gain counts a span once (a second chunk over the same span is like a repeated id),
so nDCG stays in [0, 1] and equals the id formula when each chunk is one gold span; a chunk
covering several gold spans earns one gain, as one chunk id does.
A chunk's rank is its position in the list as returned (1-based); repeats of one chunk
(same id, same place) are the caller's to drop, as for id metrics.

**Twins.** Documentation repeats itself: a gold span's text (white space folded) may stand
elsewhere too, and a chunk holding that copy holds the answer. Each such other place is a
`Twin` of the span (found by `placement.Placer.twins`); a chunk's characters inside a twin
count as the span's corresponding characters (`as_gold`), so with twins every formula
above reads R'_k, the top-k chunks as the gold reads them, in place of R_k. A character
inside a twin that is itself gold stays where it is as well.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from rageval_core.catalogue import DEFAULT_KS, NDCG_K, retrieval_columns, span_columns
from rageval_core.models import GoldSpan


class Range(NamedTuple):
    """A half-open character range `[start, end)` of document `doc_id`."""

    doc_id: str
    start: int
    end: int


Intervals = dict[str, list[tuple[int, int]]]


def union(ranges: Iterable[Range | GoldSpan | None]) -> Intervals:
    """Per document, the sorted disjoint intervals covering `ranges` (None and empty skipped)."""
    by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in ranges:
        if r is not None and r.end > r.start:
            by_doc[r.doc_id].append((r.start, r.end))
    out: Intervals = {}
    for doc, items in by_doc.items():
        items.sort()
        merged = [items[0]]
        for s, e in items[1:]:
            last_s, last_e = merged[-1]
            if s <= last_e:
                merged[-1] = (last_s, max(last_e, e))
            else:
                merged.append((s, e))
        out[doc] = merged
    return out


def size(intervals: Intervals) -> int:
    """Characters covered."""
    return sum(e - s for items in intervals.values() for s, e in items)


def overlap(a: Intervals, b: Intervals) -> int:
    """|a ∩ b| in characters, by one merge walk per document both cover."""
    total = 0
    for doc, xs in a.items():
        ys = b.get(doc)
        if not ys:
            continue
        i = j = 0
        while i < len(xs) and j < len(ys):
            lo, hi = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
            if hi > lo:
                total += hi - lo
            if xs[i][1] < ys[j][1]:
                i += 1
            else:
                j += 1
    return total


class Twin(NamedTuple):
    """Another place `[start, end)` of document `doc_id` that holds gold span `span`'s text
    (white space folded). `blocks` align it with the span, piece by piece: (twin start,
    twin end, span start, span end); a piece of equal lengths maps character for
    character, a run of white space of another length onto the span's whole run."""

    doc_id: str
    start: int
    end: int
    span: GoldSpan
    blocks: tuple[tuple[int, int, int, int], ...]


def _image(lo: int, hi: int, twin: Twin) -> list[Range]:
    """The span's characters that twin characters `[lo, hi)` stand for."""
    out = []
    for ts, te, gs, ge in twin.blocks:
        a, b = max(lo, ts), min(hi, te)
        if b <= a:
            continue
        if te - ts == ge - gs:
            out.append(Range(twin.span.doc_id, gs + a - ts, gs + b - ts))
        else:
            out.append(Range(twin.span.doc_id, gs, ge))
    return out


def as_gold(r: Range | None, gold: Sequence[GoldSpan], twins: Sequence[Twin]) -> tuple[Range, ...]:
    """Chunk `r`'s characters as the gold reads them: its range, with the parts inside a
    twin moved onto that twin's span (a part that is gold itself stays as well)."""
    if r is None:
        return ()
    mine = [t for t in twins if t.doc_id == r.doc_id and max(t.start, r.start) < min(t.end, r.end)]
    if not mine:
        return (r,)
    kept = [(r.start, r.end)]
    for t in mine:
        kept = [
            (a, b) for s, e in kept for a, b in ((s, min(e, t.start)), (max(s, t.end), e)) if b > a
        ]
    out = [Range(r.doc_id, s, e) for s, e in kept]
    for g in gold:
        if g.doc_id == r.doc_id and max(g.start, r.start) < min(g.end, r.end):
            out.append(Range(r.doc_id, max(g.start, r.start), min(g.end, r.end)))
    for t in mine:
        out += _image(max(t.start, r.start), min(t.end, r.end), t)
    return tuple(out)


Seen = Sequence[tuple[Range, ...]]
"""Per chunk, its characters as the gold reads them (`as_gold`)."""


def _seen(placed: Sequence[Range | None], gold: Sequence[GoldSpan], twins: Sequence[Twin]) -> Seen:
    return [as_gold(r, gold, twins) for r in placed]


def _scores(seen: Seen, g: Intervals, k: int) -> tuple[float, float, float]:
    g_size = size(g)
    r = union(x for rs in seen[:k] for x in rs)
    inter, r_size = overlap(r, g), size(r)
    return inter / g_size, (inter / r_size if r_size else 0.0), inter / (r_size + g_size - inter)


def span_scores(
    placed: Sequence[Range | None],
    gold: Sequence[GoldSpan],
    k: int,
    twins: Sequence[Twin] = (),
) -> tuple[float, float, float] | None:
    """(span recall@k, span precision@k, span IoU@k); None without gold spans."""
    g = union(gold)
    if not size(g):
        return None
    return _scores(_seen(placed, gold, twins), g, k)


def _touches(r: Range | None, span: GoldSpan) -> bool:
    """Whether chunk `r` shares a character with `span` (an empty chunk shares none)."""
    return (
        r is not None
        and r.doc_id == span.doc_id
        and max(r.start, span.start) < min(r.end, span.end)
    )


def _touched(seen: Seen, gold: Sequence[GoldSpan]) -> list[frozenset[int]]:
    """Per chunk, the indexes of the gold spans it shares a character with."""
    return [
        frozenset(j for j, s in enumerate(gold) if any(_touches(x, s) for x in rs)) for rs in seen
    ]


def span_gold_ranks(
    placed: Sequence[Range | None], gold: Sequence[GoldSpan], twins: Sequence[Twin] = ()
) -> list[int | None]:
    """Per gold span (in its order), the 1-based rank of the first chunk overlapping it."""
    touched = _touched(_seen(placed, gold, twins), gold)
    return [
        next((i for i, t in enumerate(touched, start=1) if j in t), None) for j in range(len(gold))
    ]


def span_metrics(
    placed: Sequence[Range | None],
    gold: Sequence[GoldSpan],
    ks: Iterable[int] = DEFAULT_KS,
    twins: Sequence[Twin] = (),
) -> dict[str, float | None]:
    """Every span column and the ranked-list columns of a span question, by the module's
    formulas: `span_columns(ks)` and `retrieval_columns(ks)` names. All None without gold."""
    ks = sorted(set(ks))
    if not gold:
        return dict.fromkeys([*span_columns(ks), *retrieval_columns(ks)])
    g = union(gold)  # gold spans are non-empty ranges (the loader checks)
    seen = _seen(placed, gold, twins)
    touched = _touched(seen, gold)
    out: dict[str, float | None] = {}
    for k in ks:
        out[f"span_recall_at_{k}"], out[f"span_precision_at_{k}"], out[f"span_iou_at_{k}"] = (
            _scores(seen, g, k)
        )
        top = touched[:k]
        seen_spans = frozenset().union(*top)
        out[f"recall_at_{k}"] = len(seen_spans) / len(gold)
        out[f"precision_at_{k}"] = sum(bool(t) for t in top) / k
        out[f"hit_at_{k}"] = float(bool(seen_spans))
    first = next((i for i, t in enumerate(touched, start=1) if t), None)
    out["mrr"] = 0.0 if first is None else 1 / first
    earlier: set[int] = set()
    dcg = 0.0
    for i, t in enumerate(touched[:NDCG_K], start=1):
        if t - earlier:
            dcg += 1 / math.log2(i + 1)
        earlier |= t
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(len(gold), NDCG_K) + 1))
    out[f"ndcg_at_{NDCG_K}"] = dcg / ideal
    return out


def cut_spans(placed: Sequence[Range | None], gold: Sequence[GoldSpan], k: int) -> int:
    """Gold spans the top-k chunks cover only in part (0 < covered < span): evidence a
    chunk boundary cut off."""
    r = union(placed[:k])
    cut = 0
    for s in gold:
        covered = overlap(r, union([s]))
        cut += 0 < covered < s.end - s.start
    return cut


def places(
    doc_ids: Sequence[str | None] | None,
    starts: Sequence[int | None] | None,
    ends: Sequence[int | None] | None,
) -> list[Range | None]:
    """The chunks' places from a row's `retrieved_doc_ids/starts/ends` (None: not placed)."""
    docs, ss, es = list(doc_ids or ()), list(starts or ()), list(ends or ())
    return [
        Range(d, s, e) if d is not None and s is not None and e is not None else None
        for d, s, e in zip(docs, ss, es, strict=False)
    ]


def relevant(placed: Sequence[Range | None], gold: Sequence[GoldSpan]) -> list[bool]:
    """Per chunk: does it share a character with a gold span?"""
    return [any(_touches(r, s) for s in gold) for r in placed]
