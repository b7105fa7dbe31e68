"""Answer-level generation metrics: pure functions over strings.

Normalisation follows the SQuAD evaluation convention (lower case, drop punctuation and
the articles a/an/the, fold white space) so figures are comparable with published ones.
"""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower-case, strip punctuation and articles, collapse white space."""
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, reference: str) -> float:
    """Harmonic mean of token precision and recall after `normalize_answer`.

    F1 = 2·P·R / (P + R), P = |common| / |pred tokens|, R = |common| / |ref tokens|, where
    common counts shared tokens with multiplicity. Two empty strings score 1, one empty 0.
    """
    pred, ref = normalize_answer(prediction).split(), normalize_answer(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    p, r = common / len(pred), common / len(ref)
    return 2 * p * r / (p + r)


def contains_answer(prediction: str, reference: str) -> bool:
    """True when the normalised reference appears as a token run inside the prediction."""
    ref = normalize_answer(reference)
    if not ref:
        return False
    return f" {ref} " in f" {normalize_answer(prediction)} "


def answer_correctness(prediction: str, reference: str | None) -> float | None:
    """1.0 if the answer contains the reference, else token F1; None without a reference.

    Containment first because good RAG answers are sentences around a short reference
    ("It opened in 1998." vs "1998"), which plain F1 punishes for the extra words.
    """
    if reference is None or not reference.strip():
        return None
    if contains_answer(prediction, reference):
        return 1.0
    return token_f1(prediction, reference)
