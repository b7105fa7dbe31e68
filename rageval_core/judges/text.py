"""Text handling for the offline judge: sentences, claims, content words, key terms, refusals.

Everything here is a pure function of its input and deliberately simple (regular
expressions, the stopword list and plural stripping of `metrics/words.py`). The offline
judge must stay deterministic and fast enough for 10,000 questions in seconds, so no
model, no dictionary, no randomness. Tokens are read from text with typographic quotes
and dashes folded to ASCII, so “curly” and "straight" quotes say the same word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rageval_core.metrics.words import STOPWORDS, fold_typography, stem

# A sentence ends at . ! ? (or a line break) followed by space and an upper-case letter,
# digit or quote. Decimals ("3.5") and most abbreviations ("e.g. the") therefore stay whole.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“‘«(\[]?[A-Z0-9])|\s*\n+\s*")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|Dr|Mr|Mrs|Ms|St|No|Fig|approx|cf)\.$")
# A release note opening a sentence ("New in version 3.3.", "Changed in version 3.8:",
# "Deprecated since version 3.10,"): it is a statement of its own, whatever follows it.
_NOTE = re.compile(
    r"(?:(?:New|Added|Changed|Removed)\s+in|Deprecated\s+(?:since|in))\s+version\s+"
    r"\d+(?:\.\d+)*[.:,;]?(?=\s+\S)",
    re.IGNORECASE,
)
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

MAX_LISTED = 6

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


def split_notes(sentence: str) -> list[str]:
    """A sentence opened by a release note ("New in version 3.3." then text that does not
    start a new sentence, such as "os.scandir() is faster" or a colon's clause) as two
    pieces, the note and the rest; any other sentence as itself."""
    note = _NOTE.match(sentence)
    if note is None:
        return [sentence]
    return [note.group(), sentence[note.end() :].strip()]


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


def _norm_number(token: str) -> str:
    """ "1,200" and "1200" are the same number; a trailing "." or "," is punctuation."""
    return token.replace(",", "").rstrip(".:/-")


def raw_tokens(text: str) -> list[str]:
    """Word and number tokens in their original case, typographic punctuation folded."""
    return _TOKEN.findall(fold_typography(text))


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
    low = token.lower()
    return stem(low[:-2] if low.endswith("'s") else low)  # "Northwind's" is "Northwind"


def terms(text: str, sentence_start: bool = True) -> Terms:
    """Reduce `text` to `Terms`. `sentence_start` says whether its first word opens a
    sentence, where a capital letter says nothing about being a name."""
    toks = raw_tokens(text)
    content, numbers, names = set(), set(), set()
    for i, tok in enumerate(toks):
        norm = _normal(tok)
        if norm in STOPWORDS or tok.lower() in STOPWORDS:
            continue
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


def text_tokens(text: str) -> frozenset[str]:
    """Every normalised token of `text`, stopwords included: what evidence is matched on."""
    return frozenset(_normal(t) for t in raw_tokens(text))


def listed(words: frozenset[str] | set[str]) -> str:
    """Words for a reason text: sorted, at most `MAX_LISTED`, then how many more."""
    shown = sorted(words)[:MAX_LISTED]
    more = len(words) - len(shown)
    return ", ".join(shown) + (f" (+{more} more)" if more > 0 else "")


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
        tokens = text_tokens(sentence)
        out.append((sentence, tokens, frozenset(filter(is_quantity, tokens))))
    return tuple(out)


@lru_cache(maxsize=65536)
def chunk_tokens(text: str) -> frozenset[str]:
    """Every normalised token of a chunk, its sentences' together; cached like
    `sentence_terms`, since relevance asks it of the same chunks for many questions."""
    return frozenset().union(*(tokens for _, tokens, _ in sentence_terms(text)))


def is_refusal(sentence: str) -> bool:
    """True when the sentence declines to answer ("I don't know", "not in the provided
    context", "no information about ...")."""
    return bool(_REFUSAL.search(sentence))
