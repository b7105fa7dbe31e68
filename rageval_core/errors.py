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
bounded line (`one_line()`); `problems` carries every individual finding so a user fixes
them all in one pass. A message quotes a user's value with `shown()` (a bounded repr) or
`plain()` (a short printable name as written), never with a bare `repr`.
"""

from __future__ import annotations

import reprlib
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
        return one_line(
            "; ".join([self.message, *self.problems]) if self.problems else self.message, limit
        )

    def _render(self) -> str:
        if not self.problems:
            return self.message
        lines = [f"{self.message} ({len(self.problems)} problem(s)):"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)


def one_line(text: object, limit: int = 600) -> str:
    """`text` with line breaks as spaces, cut to `limit` characters with a visible mark:
    messages and problems never echo an unbounded value (they are printed, logged and shown
    on every page)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else f"{flat[: limit - 1]}…"


def describe(exc: BaseException) -> str:
    """`Type: message` of an exception, on one bounded line."""
    return one_line(f"{type(exc).__name__}: {exc}", 160)


def display_name(name: str) -> str:
    """A folder or id that failed validation, safe to show anywhere: its repr (newlines and
    control characters escaped), backticks escaped so it cannot end a Markdown code span,
    cut to 80 characters."""
    shown = repr(name).replace("`", "\\x60")
    return shown if len(shown) <= 80 else shown[:79] + "…"


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


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """`value` as a message quotes it: a repr of at most `limit` characters, one line."""
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain(value: Any) -> str:
    """A key or id as written when it is a short printable string, else `shown(value)`."""
    if isinstance(value, str) and len(value) <= SHOWN_CHARS and value.isprintable():
        return value
    return shown(value)


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
