"""Answer-level generation metrics: pure functions over strings.

Normalisation follows the SQuAD evaluation convention (lower case, drop punctuation and
the articles a/an/the, fold white space) so figures are comparable with published ones;
typographic quotes and dashes are folded to ASCII first (`metrics/words.py`), so a
curly-quoted word is the same word.
"""

from __future__ import annotations

import re
import string
from collections import Counter

from rageval_core.metrics.words import STOPWORDS, fold_typography, stem

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)

PRECISION_FLOOR = 0.1
"""Content recall earns full credit while at least this share of the answer's content
words are the reference's; below it the credit shrinks in proportion (`content_recall`)."""


def normalize_answer(text: str) -> str:
    """Lower-case, strip punctuation and articles, collapse white space."""
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _tokens(text: str) -> list[str]:
    return normalize_answer(fold_typography(text)).split()


def token_f1(prediction: str, reference: str) -> float:
    """Harmonic mean of token precision and recall after `normalize_answer`.

    F1 = 2·P·R / (P + R), P = |common| / |pred tokens|, R = |common| / |ref tokens|, where
    common counts shared tokens with multiplicity. Two empty strings score 1, one empty 0.
    """
    pred, ref = _tokens(prediction), _tokens(reference)
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    p, r = common / len(pred), common / len(ref)
    return 2 * p * r / (p + r)


def contains_answer(prediction: str, reference: str) -> bool:
    """True when the normalised reference appears as a token run inside the prediction."""
    ref = " ".join(_tokens(reference))
    if not ref:
        return False
    return f" {ref} " in f" {' '.join(_tokens(prediction))} "


def _content(text: str) -> frozenset[str]:
    return frozenset(stem(t) for t in _tokens(text) if t not in STOPWORDS)


SENTENCE_WORDS = 20
"""Content words an answer that contains the reference may hold at full credit however
short the reference: "1998" deserves a whole sentence around it (`answer_correctness`)."""


def _contained_credit(prediction: str, reference: str) -> float:
    """Containment's credit: 1.0 while the answer holds at most max(`SENTENCE_WORDS`,
    |reference| / `PRECISION_FLOOR`) content words (of tokens when either has no content
    word), else that allowance / the answer's words — the precision floor, with room
    for a sentence around a one-word reference."""
    pred, ref = _content(prediction), _content(reference)
    if not pred or not ref:
        pred, ref = frozenset(_tokens(prediction)), frozenset(_tokens(reference))
    allowed = max(SENTENCE_WORDS, len(ref) / PRECISION_FLOOR)
    return min(1.0, allowed / len(pred)) if pred else 0.0


def content_recall(prediction: str, reference: str) -> float:
    """Share of the reference's content words the answer holds, with a precision floor.

    Content words are `normalize_answer` tokens less stopwords, plurals stripped. A
    reference token with a digit (a number, a code such as "LYO-4") the answer lacks
    makes it 0: "48 hours" does not answer "24 hours" however many other words match.
    With precision P (the share of the answer's content words that are the reference's)
    below `PRECISION_FLOOR`, the recall is scaled by P / PRECISION_FLOOR, so an answer
    that pastes whole pages around the reference words does not earn full credit.
    """
    pred, ref = _content(prediction), _content(reference)
    if not pred or not ref or any(any(c.isdigit() for c in t) for t in ref - pred):
        return 0.0
    common = len(pred & ref)
    return common / len(ref) * min(1.0, common / len(pred) / PRECISION_FLOOR)


def answer_correctness(prediction: str, reference: str | None) -> float | None:
    """The containment credit if the answer contains the reference, else the larger of
    token F1 and `content_recall`; None without a reference.

    Good RAG answers are complete sentences around a short reference ("It opened in
    1998." vs "1998"; "The handbook is reviewed twice a year, in January and July by the
    Operations team." vs "twice a year, in January and July"), which plain F1 punishes
    for the extra words: containment and content recall give them their credit, while an
    answer of unrelated words scores 0 by both, and F1 still credits a short answer that
    gives part of a long reference. Containment honours the precision floor as content
    recall does (`_contained_credit`), with room for one sentence around a short
    reference, so an answer that echoes a whole page (or the whole prompt) around the
    reference earns no more than its share of the page.
    """
    if reference is None or not reference.strip():
        return None
    if contains_answer(prediction, reference):
        return _contained_credit(prediction, reference)
    return max(token_f1(prediction, reference), content_recall(prediction, reference))
