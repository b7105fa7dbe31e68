"""The one error tree of rageval.

    RagevalError                 anything rageval reports to a user
    ├── DatasetError             golden dataset or corpus unreadable or invalid
    ├── ConfigError              run config, thresholds or CLI arguments wrong
    ├── PipelineError            the pipeline under test returned something unusable
    ├── JudgeError               a judge could not produce verdicts (HTTP, parse, missing verdict)
    ├── ResultsError             results directory: bad run id, unreadable or corrupt run
    │   ├── ConflictError        another writer holds the run (exit 1, not 2)
    │   └── NotFoundError        a readable run has no such question
    └── SourceError              another tool's results file (or a writer's record) that
                                 does not fit: names the file and the first field

Exit codes: a user's mistake or input that cannot be read (ConfigError, DatasetError,
ResultsError, SourceError) is 2, everywhere; 1 is a `check` breach, another writer
holding the run, or a failure of the pipeline, the judge or a remote API.

Validation raises these, never `assert`. The CLI and the dashboard show them as one
bounded line (`RagevalError.one_line()`); `problems` carries every individual finding so
a user fixes them all in one pass. Every message, log line and page quotes a value, an
exception or another message's text through the one `shown()` (bounded, one line,
control characters escaped), never with a bare `repr` or `str`.
"""

from __future__ import annotations

import reprlib
import unicodedata
from typing import Any

SHOWN_CHARS = 80


class RagevalError(Exception):
    """Base of every error rageval raises on purpose.

    `problems` lists each finding (already formatted with file, line, question id) when
    one failure has several causes; `str()` shows them all.
    """

    exit_code = 1

    def __init__(self, message: str, problems: list[str] | None = None):
        self.message = message
        self.problems = list(problems or [])
        super().__init__(self._render())

    def one_line(self, limit: int = 600) -> str:
        """The message and its problems on one line, cut to `limit` characters: what a
        terminal or a page shows, however long a value the error quotes."""
        return shown("; ".join([self.message, *self.problems]), limit, bare=True)

    def _render(self) -> str:
        if not self.problems:
            return self.message
        lines = [f"{self.message} ({len(self.problems)} problem(s)):"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)


class _BoundedRepr(reprlib.Repr):
    """reprlib, but for subclasses too (reprlib falls back to a full `repr` for them)."""

    _KINDS = (str, dict, list, tuple, set, frozenset)

    def repr1(self, x: Any, level: int) -> str:
        for kind in self._KINDS:
            if isinstance(x, kind):
                return getattr(self, f"repr_{kind.__name__}")(x, level)
        return super().repr1(x, level)


_REPR = _BoundedRepr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 3, SHOWN_CHARS, SHOWN_CHARS, 40
_REPR.maxtuple = _REPR.maxlist = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 4


def shown(value: Any, limit: int | None = None, *, bare: bool = False) -> str:
    """`value` as a message, a log line or a page quotes it: one line of at most `limit`
    characters (a cut ends in "…"), no raw line break or control character (escaped as a
    repr escapes them), whatever the value and however large.

    - By default a bounded repr, with backticks as `\\x60`: quotes show where a value
      starts and ends (an id with a trailing space, an empty string), and a page can put
      the repr in a Markdown code span that it cannot end.
    - `bare=True` shows a string as text: a short printable id or key as written, a
      message with its line breaks flattened to spaces. Bare text is not Markdown-safe
      (a message's `code` is kept); a page escapes it (`links.md_escape`) like any text.
      Any other value is still its bounded repr.
    - An exception is `Type: message`, as text: the type says what failed, the message
      why. `limit` defaults to `SHOWN_CHARS`, twice that for an exception.
    """
    if isinstance(value, BaseException):
        message = str(value)
        text = _flat(f"{type(value).__name__}: {message}" if message else type(value).__name__)
        limit = 2 * SHOWN_CHARS if limit is None else limit
    elif bare and isinstance(value, str):
        text = _flat(value)
    else:
        text = _flat(_REPR.repr(value)).replace("`", "\\x60")
    limit = SHOWN_CHARS if limit is None else limit
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def code_points(text: str) -> str:
    """`text` as its code points (`U+0065 U+0301`), for a difference no eye can see."""
    return " ".join(f"U+{ord(c):04X}" for c in text)


def normalisation_note(found: str, wanted: str) -> str:
    """`; …` saying where two texts that read the same differ in code points (NFC
    against NFD: `é` as U+00E9 or as U+0065 U+0301), or "" when they differ otherwise."""
    if found == wanted or unicodedata.normalize("NFC", found) != unicodedata.normalize(
        "NFC", wanted
    ):
        return ""
    n = min(len(found), len(wanted))
    p = 0
    while p < n and found[p] == wanted[p]:
        p += 1
    while 0 < p and any(p < len(t) and unicodedata.combining(t[p]) for t in (found, wanted)):
        p -= 1  # from the base character the marks combine with
    a, b = _cluster(found, p), _cluster(wanted, p)
    return (
        f"; they differ only in Unicode normalisation, first at character {p}: "
        f"{code_points(a)} against {code_points(b)} (normalise both to NFC)"
    )


def _cluster(text: str, at: int) -> str:
    """The character at `at` with the combining marks after it."""
    end = at + 1
    while end < len(text) and unicodedata.combining(text[end]):
        end += 1
    return text[at:end]


def _flat(text: str) -> str:
    """`text` on one line: as written when printable, else whitespace runs as one space
    and any other unprintable character as its repr escape (a terminal never gets a raw
    escape sequence, a log line never splits)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(text.split()))


class DatasetError(RagevalError):
    """A golden dataset or its corpus cannot be read or is invalid."""

    exit_code = 2


class ConfigError(RagevalError):
    """A run config, thresholds file or command-line argument is wrong."""

    exit_code = 2


class PipelineError(RagevalError):
    """The pipeline under test could not be loaded or returned an unusable value."""


class JudgeError(RagevalError):
    """A judge failed to give a verdict for every claim (transport, parse or schema)."""


class ResultsError(RagevalError):
    """A run id is invalid, or a run in the results directory is missing or corrupt:
    unreadable input, exit 2 (a `check` breach is 1; docs/ci.md)."""

    exit_code = 2


class ConflictError(ResultsError):
    """Another writer holds the run, or took it over: nobody's mistake, exit 1."""

    exit_code = 1


class NotFoundError(ResultsError):
    """An id that names nothing in a readable run (a typo in a link), as opposed to a file
    that could not be read: a page says "not found" only for this one."""


class SourceError(RagevalError):
    """Results from outside rageval (another tool's file, a harness's record given to the
    writer) that do not fit: the message names the file or question and the first field
    that did not, and nothing of the run is written. The user's input: exit 2."""

    exit_code = 2
