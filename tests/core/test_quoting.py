"""`errors.shown`, the one way a message, a log line or a page quotes a value: whatever the
value (a user's id, another tool's field, an exception, a message), the result is one
bounded printable line, and a quoted value cannot end a Markdown code span."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from rageval_core.errors import SHOWN_CHARS, ConfigError, RagevalError, shown

# Text that reaches a message: any code point, with line breaks, escapes (ANSI), lone
# surrogates, Unicode line separators and backticks all likely.
NASTY = st.lists(
    st.text()
    | st.sampled_from(["\n", "\r\n", "\t", "\x1b[31m", "\u2028", "\x85", "\x00", "`", "\ud800"]),
    max_size=8,
).map("".join)


class Hostile:
    """An object whose repr is what a careless library might return."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"Hostile(\n{self.text}\x1b[0m`)"


VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | NASTY
    | st.binary(max_size=40)
    | NASTY.map(Hostile)
    | NASTY.map(ValueError)
    | NASTY.map(ConfigError),
    lambda inner: st.lists(inner) | st.dictionaries(NASTY, inner) | st.tuples(inner),
    max_leaves=30,
)
LIMITS = st.none() | st.integers(min_value=1, max_value=700)


@settings(max_examples=300, deadline=None)
@given(VALUES, LIMITS, st.booleans())
@example("a\nb", None, True)
@example("\x1b[2J", 5, False)
@example(ValueError("line one\nline two\x1b[0m"), None, False)
def test_every_value_is_one_bounded_printable_line(value, limit, bare):
    text = shown(value, limit, bare=bare)
    default = 2 * SHOWN_CHARS if isinstance(value, BaseException) else SHOWN_CHARS
    assert len(text) <= (default if limit is None else limit)
    # printable: no line break (\n, \r, \u2028, \x85), no raw escape, no lone surrogate
    assert text.isprintable(), text
    text.encode("utf-8")  # what a log file or a page writes


@settings(max_examples=200, deadline=None)
@given(VALUES.filter(lambda v: not isinstance(v, BaseException)), LIMITS)
@example("a`b", None)
@example(Hostile("x"), None)
def test_a_quoted_value_never_holds_a_backtick(value, limit):
    assert "`" not in shown(value, limit)


@given(st.text(st.characters(exclude_characters="`")).filter(lambda t: len(repr(t)) <= SHOWN_CHARS))
def test_a_short_string_is_quoted_as_its_repr(text):
    assert shown(text) == repr(text)


def test_a_backtick_is_escaped_as_a_repr_escape():
    assert shown("run`id") == "'run\\x60id'"
    assert shown(["`"]) == "['\\x60']"


@given(st.text(max_size=SHOWN_CHARS).filter(str.isprintable))
@example("key with `backtick` and  two spaces ")
def test_a_short_printable_key_is_shown_bare_as_written(key):
    assert shown(key, bare=True) == key


@given(st.text(min_size=1).filter(str.isprintable), st.integers(min_value=1, max_value=100))
def test_a_cut_keeps_the_start_and_ends_in_an_ellipsis(text, limit):
    cut = shown(text, limit, bare=True)
    assert cut == (text if len(text) <= limit else text[: limit - 1] + "…")


@given(NASTY)
def test_bare_text_keeps_its_words_with_line_breaks_as_spaces(text):
    flat = shown(text, 10**6, bare=True)
    assert all(not c.isspace() or c == " " for c in flat)
    for word in text.split():
        if word.isprintable():
            assert word in flat


def test_a_message_is_flattened_and_escapes_are_shown_not_sent():
    assert shown("while parsing\n  in line 1\n", 600, bare=True) == "while parsing in line 1"
    assert shown("red \x1b[31m", bare=True) == "red \\x1b[31m"
    assert shown("\ud800", bare=True) == "\\ud800"


def test_a_value_that_is_not_text_is_its_repr_even_bare():
    assert shown(3, bare=True) == "3"
    assert shown(None, bare=True) == "None"
    assert shown(["a"], bare=True) == "['a']"


def test_an_exception_is_its_type_and_message_on_one_line():
    assert shown(ValueError("bad\nthing")) == "ValueError: bad thing"
    assert shown(ConfigError("no such key")) == "ConfigError: no such key"
    assert shown(KeyError()) == "KeyError"
    long = shown(OSError("x" * 500))
    assert len(long) == 2 * SHOWN_CHARS and long.endswith("…")
    assert shown(OSError("x" * 500), 40) == "OSError: " + "x" * 30 + "…"


@given(NASTY, st.lists(NASTY, max_size=5), st.integers(min_value=1, max_value=700))
def test_an_errors_one_line_is_bounded_and_printable(message, problems, limit):
    text = RagevalError(message, problems).one_line(limit)
    assert len(text) <= limit and text.isprintable()


def test_an_errors_one_line_joins_its_problems():
    err = ConfigError("bad config", ["a: wrong\ntype", "b: missing"])
    assert err.one_line() == "bad config; a: wrong type; b: missing"


def test_quoting_is_bounded_work_on_shared_structures():
    # 10^9 leaves through shared references: a plain repr would never finish.
    value: list = ["lol"] * 10
    for _ in range(8):
        value = [value] * 10
    assert len(shown(value)) <= SHOWN_CHARS
    assert len(shown(json.loads(json.dumps({"k": "v" * 10**6})))) <= SHOWN_CHARS
    assert len(shown("v" * 10**7, bare=True)) <= SHOWN_CHARS
