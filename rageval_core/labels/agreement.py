"""How far two raters agree: Cohen's kappa with a bootstrap interval, raw agreement,
the confusion matrix, and precision/recall of "unsupported". Pure maths over pairs; the
query layer (`query/_review.py`) decides which pairs there are.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rageval_core.models import VERDICTS

if TYPE_CHECKING:
    from rageval_core.labels.store import LabelSet

UNSUPPORTED = frozenset({"unsupported", "contradicted"})
"""The verdicts the product is built around: a claim the answer should not have made."""


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of (human, judge) pairs.

    κ = (p_o − p_e) / (1 − p_e), p_o = share of pairs that agree, p_e = Σ_k p_human(k) ·
    p_judge(k). None when undefined: no pairs, or p_e = 1 (both raters used one and the
    same category for everything, so chance explains all agreement).
    """
    n = len(pairs)
    if n == 0:
        return None
    p_o = sum(h == j for h, j in pairs) / n
    human, judge = Counter(h for h, _ in pairs), Counter(j for _, j in pairs)
    p_e = sum(human[k] * judge[k] for k in human) / (n * n)
    if p_e >= 1:
        return None
    return (p_o - p_e) / (1 - p_e)


@dataclass(frozen=True)
class Agreement:
    """Human × judge (or reviewer × reviewer) agreement over one kind of label."""

    n: int  # pairs behind the figures
    raw: float | None  # share of pairs that agree
    kappa: float | None
    kappa_low: float | None  # bootstrap 95% interval (seeded: the same pairs, the same interval)
    kappa_high: float | None
    categories: tuple[str, ...]
    confusion: tuple[tuple[int, ...], ...]  # rows = first rater (human), columns = second
    unsupported_precision: float | None  # of the judge's unsupported|contradicted; claims only
    unsupported_recall: float | None


def kappas(counts: np.ndarray) -> np.ndarray:
    """Kappa of each confusion matrix in `counts` (…, k, k); NaN where undefined."""
    n = counts.sum(axis=(-2, -1)).astype(float)
    diag = np.trace(counts, axis1=-2, axis2=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_e = (counts.sum(axis=-1) * counts.sum(axis=-2)).sum(axis=-1) / (n * n)
        kappa = (diag / n - p_e) / (1 - p_e)
    return np.where((p_e >= 1 - 1e-12) | (n == 0), np.nan, kappa)


def _share(num: int, den: int) -> float | None:
    return num / den if den else None


def agreement(
    pairs: Sequence[tuple[str, str]],
    categories: Sequence[str],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> Agreement:
    """Figures over (first, second) pairs, each value one of `categories`."""
    return agreement_from_counts(Counter(pairs), categories, n_boot=n_boot, seed=seed)


def agreement_from_counts(
    counts: Mapping[tuple[str, str], int],
    categories: Sequence[str],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> Agreement:
    """Figures over pair counts ({(first, second): n}, as SQL returns them).

    The interval is the 2.5–97.5 percentiles of kappa over `n_boot` resamples of the pairs
    (drawn as multinomial counts of the confusion cells: the same distribution as
    resampling pairs, in constant memory at any n). Resamples where kappa is undefined are
    left out; with very few pairs the percentiles can miss the estimate itself, so the
    interval is widened to include it. Unsupported precision/recall only when the
    categories are the claim verdicts.
    """
    cats = tuple(categories)
    index = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    matrix = np.zeros((k, k), dtype=np.int64)
    for (h, j), count in counts.items():
        if h not in index or j not in index:
            raise ValueError(f"pair ({h!r}, {j!r}) outside the categories {cats}")
        matrix[index[h], index[j]] += int(count)
    n = int(matrix.sum())
    point = float(kappas(matrix))
    kappa = None if np.isnan(point) else point
    low = high = None
    if kappa is not None and n_boot > 0:
        rng = np.random.default_rng(seed)
        draws = rng.multinomial(n, matrix.ravel() / n, size=n_boot).reshape(n_boot, k, k)
        ks = kappas(draws)
        ks = ks[~np.isnan(ks)]
        if ks.size:
            low = min(float(np.percentile(ks, 2.5)), kappa)
            high = max(float(np.percentile(ks, 97.5)), kappa)
    precision = recall = None
    if set(cats) == set(VERDICTS):
        pos = [index[c] for c in cats if c in UNSUPPORTED]
        tp = int(matrix[np.ix_(pos, pos)].sum())
        precision = _share(tp, int(matrix[:, pos].sum()))
        recall = _share(tp, int(matrix[pos, :].sum()))
    return Agreement(
        n=n,
        raw=_share(int(np.trace(matrix)), n),
        kappa=kappa,
        kappa_low=low,
        kappa_high=high,
        categories=cats,
        confusion=tuple(tuple(int(x) for x in row) for row in matrix),
        unsupported_precision=precision,
        unsupported_recall=recall,
    )


def reviewer_agreement(labels: LabelSet, *, n_boot: int = 1000) -> Agreement | None:
    """Agreement between reviewers on claims two or more of them labelled (each pair of
    reviewers once, the first the reviewer whose name sorts first): the ceiling a judge
    can be held to. None when no claim has two."""
    by_claim: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    for lab in labels.labels:
        if lab.kind == "claim" and lab.claim_key is not None:
            key = (lab.dataset_sha256, lab.question_id, lab.claim_key)
            by_claim.setdefault(key, []).append((lab.reviewer, lab.value))
    counts: Counter[tuple[str, str]] = Counter()
    for given in by_claim.values():
        for (r1, v1), (r2, v2) in itertools.combinations(sorted(given), 2):
            if r1 != r2:
                counts[(v1, v2)] += 1
    if not counts:
        return None
    return agreement_from_counts(counts, VERDICTS, n_boot=n_boot)
