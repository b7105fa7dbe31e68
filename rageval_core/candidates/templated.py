"""The offline generator: questions from templates, no model (docs/generate.md, "Templated").

Deterministic — the same documents give the same candidates, byte for byte — so it runs
in CI and on machines without an endpoint. It reads each document's sentences (by
`judges/text.split_sentences`, paragraph by paragraph, a paragraph's line breaks read as
spaces so hard-wrapped text gives whole sentences) and keeps those of 6–60 words that
open with a capital, a digit or a quote, end with `.`, `!` or `?`, and stand once in
their document. Each kept sentence gives at most one candidate, by the first template
that fits:

- `definition` — "X is/are/was/were a|an|the …", "X refers to/means/denotes …" with X of
  one to six words, not a pronoun: "What is X?" ("What does X mean?"); the reference
  answer is the sentence.
- `number` — a sentence holding a number: "In "TITLE", which number fills the blank:
  "… employs about ___ people and …"?" (eight words either side); the reference is
  the number as written.
- `name` — a sentence naming something (capitalised words of two characters or more,
  not opening the sentence; the longest):
  "In "TITLE", who or what fills the blank: "… founded in 2009 by ___ and …"?"; the
  reference is the name.

`number` and `name` alternate from sentence to sentence, so both appear. The quote is
the whole sentence. Sentences are taken one per section in turn (the first kept
sentence of every section, then the second, …) and documents in turn, so a small `n`
still spreads over the whole set. These questions share many words with their
sentence: they test retrieval and reading, not paraphrase (the LLM generator's
`user-vocabulary` questions do that).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import zip_longest

from rageval_core.candidates.documents import Piece, sections, source
from rageval_core.candidates.model import Candidate, Quote, candidate_id
from rageval_core.candidates.quotes import find_quote
from rageval_core.candidates.similarity import exact_key
from rageval_core.judges.text import split_sentences, terms
from rageval_core.models import Document

GENERATOR = "templated-1"
"""Bumped when a template changes, so candidates of different templates are told apart."""
MIN_WORDS, MAX_WORDS = 6, 60
WINDOW = 8
"""Words kept on either side of a blank."""

_ENDS_LIKE_A_SENTENCE = re.compile(r"[.!?][\"')\]’”]*$")
_OPENS_LIKE_A_SENTENCE = re.compile(r"[\"'“‘(]?[A-Z0-9]")
_PARAGRAPH = re.compile(r"\S(?:.|\n(?![ \t]*\n))*")  # runs of text between blank lines
_DEFINITION = re.compile(
    r"^(?P<article>(?:The|A|An)\s+)?(?P<term>[^\s,;:()\"“”]+(?:\s+[^\s,;:()\"“”]+){0,5}?)\s+"
    r"(?P<verb>is|are|was|were|refers\s+to|means|denotes)\s+(?:a|an|the|one\s+of|any)\s"
)
_NOT_A_TERM = frozenset(
    "it this that these those there here he she they we you i its his her their our "
    "which what who one each such some all".split()
)
_ASK = {
    "is": "What is {}?",
    "are": "What are {}?",
    "was": "What was {}?",
    "were": "What were {}?",
    "refers to": "What does {} refer to?",
    "means": "What does {} mean?",
    "denotes": "What does {} denote?",
}
_NUMBER = re.compile(r"(?<![\w.,/-])\d+(?:[.,:]\d+)*%?(?![\w/-])")
# capitalised words of two characters or more, "of"/"de"/"van"/… between them: a name;
# a lone capital ("P", "X") is a symbol of the text, not something to ask about
_NAME = re.compile(
    r"(?<![\w'’-])[A-Z][\w'’-]+(?:\s+(?:(?:of|de|da|van|von|du|la|le|the)\s+)?[A-Z][\w'’-]+)*"
)


def _sentences(doc: Document) -> Iterator[list[Piece]]:
    """Each section's kept sentences, located in the document. A paragraph's single line
    breaks are read as spaces (hard-wrapped text: manual pages, docstrings), so a
    sentence may span lines; a blank line always ends one."""
    for a, b in sections(doc.text):
        kept = []
        for p in _PARAGRAPH.finditer(doc.text, a, b):
            flat = p.group().replace("\n", " ")  # same length: offsets hold
            at = 0
            for sentence in split_sentences(flat):
                start = flat.find(sentence, at)
                if start < 0:  # an abbreviation glued over a run of spaces: not verbatim
                    continue
                at = start + len(sentence)
                s = Piece(doc, p.start() + start, p.start() + at)
                if _keep(s):
                    kept.append(s)
        yield kept


def _keep(s: Piece) -> bool:
    """Whether a sentence may be asked about (standing once is checked when it is: a
    search of the whole document for every sentence would be quadratic)."""
    n = len(s.flat.split())
    return (
        MIN_WORDS <= n <= MAX_WORDS
        and _OPENS_LIKE_A_SENTENCE.match(s.flat) is not None
        and _ENDS_LIKE_A_SENTENCE.search(s.flat) is not None
    )


def _title(doc: Document) -> str:
    return (doc.title or doc.id).replace('"', "'")


def _window(sentence: str, start: int, end: int) -> str:
    """The sentence with [start, end) blanked, `WINDOW` words kept either side."""
    before = sentence[:start].split()
    after = sentence[end:].split()
    left = ("… " if len(before) > WINDOW else "") + " ".join(before[-WINDOW:])
    right = " ".join(after[:WINDOW]) + (" …" if len(after) > WINDOW else "")
    return f"{left} ___ {right}".strip().replace('"', "'")


def _definition(s: Piece) -> tuple[str, str] | None:
    m = _DEFINITION.match(s.flat)
    if m is None:
        return None
    term = m["term"]
    first = term.split()[0].lower()
    if first in _NOT_A_TERM or not terms(term, sentence_start=False).content:
        return None
    words = term.split()
    if m["article"] is None and len(words) > 1 and all(w.islower() for w in words[1:]):
        term = term[0].lower() + term[1:]  # "Computational complexity theory" opens a sentence
    article = (m["article"] or "").lower()
    verb = " ".join(m["verb"].split())
    return _ASK[verb].format(article + term), s.flat


def _blank(s: Piece, pattern: re.Pattern[str], what: str) -> tuple[str, str] | None:
    """A fill-the-blank question on the longest match of `pattern` after the first word."""
    text = s.flat
    matches = [m for m in pattern.finditer(text) if m.start() > 0]
    if what == "who or what":
        names = terms(text).names
        matches = [m for m in matches if terms(m.group(), sentence_start=False).names & names]
    if not matches:
        return None
    m = max(matches, key=lambda m: (len(m.group()), -m.start()))
    window = _window(text, m.start(), m.end())
    return f'In "{_title(s.doc)}", {what} fills the blank: "{window}"?', m.group()


def _number(s: Piece) -> tuple[str, str] | None:
    return _blank(s, _NUMBER, "which number")


def _name(s: Piece) -> tuple[str, str] | None:
    return _blank(s, _NAME, "who or what")


def _candidate(s: Piece, turn: int) -> Candidate | None:
    """The candidate of one sentence: a definition if it is one, else a number or a name,
    alternating by `turn`; None for a sentence that fits no template or stands twice."""
    second = (("number", _number), ("name", _name))
    order = (("definition", _definition), *(second if turn % 2 == 0 else second[::-1]))
    for kind, template in order:
        made = template(s)
        if made is not None:
            if not find_quote(s.doc.text, s.text).once:
                return None
            question, reference = made
            quotes = (Quote(s.doc.id, s.text, s.start, s.end),)
            return Candidate(
                id=candidate_id(kind, question, quotes),
                kind=kind,
                question=question,
                reference_answer=reference,
                quotes=quotes,
                sources=(source(s.doc),),
                generator=GENERATOR,
            )
    return None


def _spread(doc: Document) -> Iterator[Piece]:
    """The document's kept sentences, one per section in turn."""
    for row in zip_longest(*_sentences(doc)):
        yield from (s for s in row if s is not None)


def generate(documents: Sequence[Document], n: int) -> list[Candidate]:
    """Up to `n` templated candidates over `documents`, documents taken in turn; a
    question already asked (a sentence a document repeats, wrapped differently) is
    not asked again."""
    out: list[Candidate] = []
    asked: set[str] = set()  # a sentence repeated in other words elsewhere: asked once
    streams = [_spread(d) for d in documents]
    turn = 0
    while streams and len(out) < n:
        alive = []
        for stream in streams:
            for s in stream:
                made = _candidate(s, turn)
                turn += 1
                if made is not None and exact_key(made.question) not in asked:
                    asked.add(exact_key(made.question))
                    out.append(made)
                    alive.append(stream)
                    break
            if len(out) >= n:
                break
        streams = alive
    return out
