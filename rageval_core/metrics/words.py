"""Word-level normalisation shared by the generation metrics and the offline judge.

Typographic punctuation is folded to ASCII before any token comparison: documentation
(the Python docs among them) writes “curly quotes”, ‘apostrophes’ and en/em dashes, and a
token `“termination”` must be the word `termination`. Stopwords and plural stripping live
here, not in `judges/text.py`, so answer correctness (`metrics/generation.py`) and the
judge's claims count the same words as content.
"""

from __future__ import annotations

_TYPOGRAPHY = str.maketrans(
    {
        "“": '"', "”": '"', "„": '"', "‟": '"', "″": '"', "«": '"', "»": '"',
        "‘": "'", "’": "'", "‚": "'", "‛": "'", "′": "'",
        "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-",
        "…": "...", "\u00a0": " ", "\u202f": " ",
    }
)  # fmt: skip

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just let me more most my myself no nor not of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    upon very was we were what when where which while who whom why will with would you your
    yours yourself yourselves may might must shall us via per within without across among
    however therefore thus also etc e.g i.e according every""".split()
)


def fold_typography(text: str) -> str:
    """Curly quotes and apostrophes to straight ones, dashes to `-`, `…` to `...`,
    non-breaking spaces to spaces. Every replaced character is punctuation or space, so
    no word changes."""
    return text.translate(_TYPOGRAPHY)


def stem(word: str) -> str:
    """Strip a plural ending so "chunks" matches "chunk" and "queries" matches "query"."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word
