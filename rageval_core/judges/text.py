"""Text handling for the offline judge: sentences, claims, content words, key terms, refusals.

Everything here is a pure function of its input and deliberately simple (regular
expressions, a stopword list, plural stripping). The offline judge must stay deterministic
and fast enough for 10,000 questions in seconds, so no model, no dictionary, no randomness.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# A sentence ends at . ! ? (or a line break) followed by space and an upper-case letter,
# digit or quote. Decimals ("3.5") and most abbreviations ("e.g. the") therefore stay whole.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\s*\n+\s*")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|Dr|Mr|Mrs|Ms|St|No|Fig|approx|cf)\.$")
# Clause boundaries inside a sentence. A bare " and " is not one: "salt and pepper".
_CLAUSE_BREAK = re.compile(
    r"\s*;\s*|,\s+(?:and|but|while|whereas|although|though|so|yet)\s+|\s+but\s+|\s+whereas\s+"
)
# Numbers keep their inner separators ("1,200", "3.5", "10:30", "v2") so they match exactly.
_DIGIT = re.compile(r"\d")
# A quantity is all digits and separators ("1200", "3.5", "10:30", "50%"); tokens that mix
# letters and digits ("PH1", "TT-400", "BM25") are identifiers and count as names.
_QUANTITY = re.compile(r"\d+(?:[.:/-]\d+)*%?")
_TOKEN = re.compile(r"[^\W_]*\d[^\W_]*(?:[.,:/-]\d+)*%?|[^\W\d_]+(?:['’][^\W\d_]+)?")

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

# Wording that declines to answer; checked on the first sentence (see `is_refusal`).
_REFUSAL = re.compile(
    r"\b(?:i\s+(?:do\s+not|don['’]t)\s+know"
    r"|(?:cannot|can['’]t|could\s+not|couldn['’]t|unable\s+to)\s+"
    r"(?:find|answer|determine|locate|say|tell|provide)"
    r"|not\s+(?:in|mentioned\s+in|covered\s+(?:by|in)|found\s+in|stated\s+in|specified\s+in)"
    r"\s+the\s+(?:provided|given|retrieved|available)?\s*(?:context|documents?|sources?|text|"
    r"information|passages?|chunks?)"
    r"|not\s+in\s+the\s+provided"
    r"|no\s+(?:relevant\s+)?information"
    r"|(?:not|insufficient)\s+enough\s+information|insufficient\s+information"
    r"|(?:does|do)\s+not\s+(?:contain|mention|say|provide)|(?:doesn['’]t|don['’]t)\s+"
    r"(?:contain|mention|say|provide)"
    r"|there\s+is\s+no\s+mention)\b",
    re.IGNORECASE,
)


def split_sentences(text: str) -> list[str]:
    """Sentences of `text`, stripped, empty ones dropped; abbreviations do not end one."""
    parts: list[str] = []
    for piece in _SENTENCE_END.split(text):
        piece = piece.strip()
        if not piece:
            continue
        if parts and _ABBREVIATION.search(parts[-1]):
            parts[-1] = f"{parts[-1]} {piece}"
        else:
            parts.append(piece)
    return parts


def split_clauses(sentence: str) -> list[str]:
    """Clauses of one sentence, split on `;`, `, and`, `, but`, ` but `, ` whereas ` etc.

    A fragment with no content word ("and so on") is glued to the clause before it, so
    every clause returned says something checkable.
    """
    clauses: list[str] = []
    for piece in _CLAUSE_BREAK.split(sentence):
        piece = piece.strip(" ,;")
        if not piece:
            continue
        if clauses and not content_words(piece):
            clauses[-1] = f"{clauses[-1]}, {piece}"
        else:
            clauses.append(piece)
    return clauses


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


def _norm_number(token: str) -> str:
    """ "1,200" and "1200" are the same number; a trailing "." or "," is punctuation."""
    return token.replace(",", "").rstrip(".:/-")


def raw_tokens(text: str) -> list[str]:
    """Word and number tokens in their original case."""
    return _TOKEN.findall(text)


@dataclass(frozen=True)
class Terms:
    """What a piece of text says, reduced for matching.

    `content`: stemmed, lower-cased words and numbers that are not stopwords.
    `numbers`: quantities, normalised ("1,200" → "1200").
    `names`: lower-cased capitalised words not at the start of the sentence, acronyms,
    and identifiers that mix letters and digits ("PH1").
    """

    content: frozenset[str]
    numbers: frozenset[str]
    names: frozenset[str]

    @property
    def key(self) -> frozenset[str]:
        """Terms that must appear verbatim in the evidence: numbers and names."""
        return self.numbers | self.names


def has_digit(token: str) -> bool:
    return _DIGIT.search(token) is not None


def is_quantity(token: str) -> bool:
    return _QUANTITY.fullmatch(token) is not None


def _normal(token: str) -> str:
    if has_digit(token):
        return _norm_number(token.lower())
    return stem(token.lower().replace("’", "'"))


def terms(text: str, sentence_start: bool = True) -> Terms:
    """Reduce `text` to `Terms`. `sentence_start` says whether its first word opens a
    sentence, where a capital letter says nothing about being a name."""
    toks = raw_tokens(text)
    content, numbers, names = set(), set(), set()
    for i, tok in enumerate(toks):
        low = tok.lower()
        if low in STOPWORDS:
            continue
        norm = _normal(tok)
        content.add(norm)
        if is_quantity(norm):
            numbers.add(norm)
        elif has_digit(tok):
            names.add(norm)
        elif tok[0].isupper() and (i > 0 or not sentence_start or (len(tok) > 1 and tok.isupper())):
            names.add(norm)
    return Terms(frozenset(content), frozenset(numbers), frozenset(names))


def content_words(text: str) -> frozenset[str]:
    return terms(text).content


@lru_cache(maxsize=65536)
def sentence_terms(text: str) -> tuple[tuple[str, frozenset[str], frozenset[str]], ...]:
    """(sentence, all its normalised tokens, its quantities) for each sentence of a chunk.

    Cached by chunk text: a run retrieves the same chunks for many questions, and this is
    where the offline judge spends its time. Evidence is matched against every token, not
    only content words, so a claim's name that happens to be a stopword-looking word still
    counts as found.
    """
    out = []
    for sentence in split_sentences(text):
        tokens = frozenset(_normal(t) for t in raw_tokens(sentence))
        out.append((sentence, tokens, frozenset(filter(is_quantity, tokens))))
    return tuple(out)


def is_refusal(sentence: str) -> bool:
    """True when the sentence declines to answer ("I don't know", "not in the provided
    context", "no information about ...")."""
    return bool(_REFUSAL.search(sentence))
