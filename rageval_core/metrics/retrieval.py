"""Retrieval metrics over one ranked list of chunk ids and one gold set: pure functions.

Conventions shared by every function here (docs/metrics.md), each pinned by a test:

- **Duplicates** in the ranked list count once, at their first (best) rank: the list is
  de-duplicated preserving order *before* it is cut at k, so ``[a, a, b]`` ranks ``b``
  second. trec_eval itself refuses a run with a repeated docno ("duplicate docs") and
  pytrec_eval's ``{docid: score}`` input cannot express one, so on duplicate-free input
  these functions equal trec_eval and on other input they equal trec_eval run on the
  de-duplicated list.
- **Empty gold set** (an unanswerable question): every metric is None, so it is NULL in
  results and left out of means. trec_eval scores such a query 0 instead.
- **k beyond the list**: precision@k keeps k as the divisor (as trec_eval's P_k does);
  recall, hit and nDCG simply see fewer documents.
- **k < 1** is a programming error: ValueError.
- Gold ids are a set; a repeated gold id counts once (trec_eval rejects repeated qrels).

Ranks are 1-based. Nothing here does I/O or knows about questions or runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from rageval_core.catalogue import DEFAULT_KS, NDCG_K, retrieval_columns


def _ranked(retrieved_ids: Sequence[str]) -> list[str]:
    """The ranked ids with later repeats dropped (first occurrence keeps its rank)."""
    if isinstance(retrieved_ids, str):
        raise TypeError("retrieved_ids must be a sequence of ids, not a single string")
    return list(dict.fromkeys(retrieved_ids))


def _gold(gold_ids: Iterable[str]) -> frozenset[str]:
    if isinstance(gold_ids, str):
        raise TypeError("gold_ids must be a collection of ids, not a single string")
    return frozenset(gold_ids)


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")


def _hits(ranked: list[str], gold: frozenset[str], k: int) -> int:
    """|top-k ∩ G| on the de-duplicated ranking."""
    return sum(doc in gold for doc in ranked[:k])


def _first_hit_rank(ranked: list[str], gold: frozenset[str]) -> int | None:
    return next((i for i, doc in enumerate(ranked, start=1) if doc in gold), None)


def _ndcg(ranked: list[str], gold: frozenset[str], k: int) -> float:
    dcg = sum(1 / math.log2(i + 1) for i, doc in enumerate(ranked[:k], start=1) if doc in gold)
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def gold_ranks(retrieved_ids: Sequence[str], gold_ids: Sequence[str]) -> list[int | None]:
    """1-based rank of each gold id in the de-duplicated ranking; None where not retrieved.

    One entry per element of `gold_ids`, in its order, so the result lines up with the
    `gold_ids` column of a result row. An empty gold set gives an empty list.
    """
    _gold(gold_ids)
    rank = {doc: i for i, doc in enumerate(_ranked(retrieved_ids), start=1)}
    return [rank.get(g) for g in gold_ids]


def recall_at_k(retrieved_ids: Sequence[str], gold_ids: Iterable[str], k: int) -> float | None:
    """recall@k = |top-k ∩ G| / |G|; None when G is empty."""
    _check_k(k)
    ranked, gold = _ranked(retrieved_ids), _gold(gold_ids)
    if not gold:
        return None
    return _hits(ranked, gold, k) / len(gold)


def precision_at_k(retrieved_ids: Sequence[str], gold_ids: Iterable[str], k: int) -> float | None:
    """precision@k = |top-k ∩ G| / k, k the divisor even when fewer were retrieved.

    Keeping k fixed means a pipeline is not rewarded for returning fewer chunks, and
    matches trec_eval's P_k. None when G is empty.
    """
    _check_k(k)
    ranked, gold = _ranked(retrieved_ids), _gold(gold_ids)
    if not gold:
        return None
    return _hits(ranked, gold, k) / k


def hit_at_k(retrieved_ids: Sequence[str], gold_ids: Iterable[str], k: int) -> float | None:
    """hit@k = 1 if top-k ∩ G ≠ ∅ else 0 (trec_eval's success_k); None when G is empty."""
    _check_k(k)
    ranked, gold = _ranked(retrieved_ids), _gold(gold_ids)
    if not gold:
        return None
    return float(_hits(ranked, gold, k) > 0)


def reciprocal_rank(retrieved_ids: Sequence[str], gold_ids: Iterable[str]) -> float | None:
    """RR = 1 / rank of the first gold id, 0 if none is retrieved; None when G is empty.

    No cut-off: a gold chunk at rank 50 still scores 1/50 (trec_eval's recip_rank).
    The run-level mean of this is MRR.
    """
    ranked, gold = _ranked(retrieved_ids), _gold(gold_ids)
    if not gold:
        return None
    first = _first_hit_rank(ranked, gold)
    return 0.0 if first is None else 1 / first


def ndcg_at_k(retrieved_ids: Sequence[str], gold_ids: Iterable[str], k: int) -> float | None:
    """nDCG@k with binary gains; None when G is empty.

    DCG@k = Σ_{i ≤ k, d_i ∈ G} 1 / log2(i + 1);
    IDCG@k = Σ_{i=1}^{min(|G|, k)} 1 / log2(i + 1) (every gold id ranked first);
    nDCG@k = DCG@k / IDCG@k, as trec_eval's ndcg_cut_k with relevance 1.
    """
    _check_k(k)
    ranked, gold = _ranked(retrieved_ids), _gold(gold_ids)
    if not gold:
        return None
    return _ndcg(ranked, gold, k)


def retrieval_metrics(
    retrieved_ids: Sequence[str], gold_ids: Iterable[str], ks: Iterable[int] = DEFAULT_KS
) -> dict[str, float | None]:
    """Every per-question retrieval column for one question, keyed as `retrieval_columns(ks)`.

    recall_at_K, precision_at_K and hit_at_K for each K in `ks`, then `mrr` (the
    question's reciprocal rank) and `ndcg_at_10`. All None for an empty gold set.
    """
    ks = list(ks)
    for k in ks:
        _check_k(k)
    ranked, gold = _ranked(retrieved_ids), _gold(gold_ids)
    if not gold:
        return dict.fromkeys(retrieval_columns(ks))
    out: dict[str, float | None] = {}
    for k in ks:
        hits = _hits(ranked, gold, k)
        out[f"recall_at_{k}"] = hits / len(gold)
        out[f"precision_at_{k}"] = hits / k
        out[f"hit_at_{k}"] = float(hits > 0)
    first = _first_hit_rank(ranked, gold)
    out["mrr"] = 0.0 if first is None else 1 / first
    out[f"ndcg_at_{NDCG_K}"] = _ndcg(ranked, gold, NDCG_K)
    return out
