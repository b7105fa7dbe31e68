"""The one JSON reader for text a user or another tool hands us: label files, importers'
files, a judge's reply, the GitHub API's answers, span datasets and trace files.

`json.loads` alone accepts what later breaks a page or a command: nesting deep enough for
a `RecursionError` (in the parser or in any code that walks the value), integers of
thousands of digits (`float()` overflows), lone surrogate escapes (`"\\ud800"`, which
cannot be written as UTF-8 or put in an Arrow table), a UTF-8 byte-order mark. Here each
is a `BadJSON` saying why, with the line, so a caller reports `file:line: why`:

    from rageval_core.bounded_json import BadJSON, load_file, loads, read_lines

    value = load_file(path)                      # a whole .json file
    for n, row in read_lines(path):              # a .jsonl file, streamed line by line
        if isinstance(row, BadJSON): ...         # a bad line, the others still read
    value = loads(text, where="judge reply")     # text or bytes already in hand

`BadJSON` is a `ValueError`: callers turn it into their own family's error
(`SourceError`, `ConfigError`, `ReplyError`) with `str(exc)` or `exc.at(file)`.
The limits (`Limits`) are generous for real files and fixed for hostile ones.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from rageval_core.errors import shown


@dataclass(frozen=True)
class Limits:
    """What a JSON text may hold: nesting depth, digits of an integer (or characters of
    a number), total bytes of a file or text, bytes of one JSONL line."""

    depth: int = 64
    number_chars: int = 320  # a double needs 24; 1e308 written out needs 309
    total_bytes: int = 1 << 30
    line_bytes: int = 64 << 20


DEFAULT = Limits()
BOM = "\ufeff"
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_PAIR = re.compile(rb"\[\]|\{\}")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")


class BadJSON(ValueError):
    """A JSON text that is not valid or not within `Limits`; `line` is 1-based when
    known (the file's line for JSONL), `why` the reason alone."""

    def __init__(self, why: str, line: int | None = None):
        self.why, self.line = shown(why, 200, bare=True), line
        super().__init__(self.why if line is None else f"line {line}: {self.why}")

    def at(self, source: str) -> str:
        """`source:line: why` (or `source: why`), the shape every problem line has."""
        return f"{source}:{self.line}: {self.why}" if self.line else f"{source}: {self.why}"


def _too_deep(text: str, depth: int) -> bool:
    """True when brackets nest deeper than `depth` outside strings. Every step runs in C:
    a text with few brackets is done at the count; else escapes and strings are cut out,
    the brackets kept, and innermost pairs removed one level per pass (at most `depth` + 1
    passes). A malformed text is left to the parser to name."""
    if text.count("[") + text.count("{") <= depth:
        return False
    bare = text.replace("\\\\", "").replace('\\"', "")
    outside = "".join(bare.split('"')[::2])
    shape = outside.encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKET)
    for _ in range(depth):
        if not shape:
            return False
        reduced = _PAIR.sub(b"", shape)
        if reduced == shape:
            return False  # unbalanced: the parser reports where
        shape = reduced
    return _PAIR.search(shape) is not None


def _check_strings(value: Any) -> None:
    """Raise when a string inside `value` holds a lone surrogate (not UTF-8 writable)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise BadJSON("a lone surrogate escape (\\ud800-\\udfff) in a string") from None
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def _number(limit: int, kind: type) -> Any:
    def parse(text: str) -> Any:
        if len(text) > limit:
            raise BadJSON(f"a number of {len(text)} characters (more than {limit})")
        return kind(text)

    return parse


def _decode(data: str | bytes) -> str:
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            return bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadJSON(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    return data


def loads(
    data: str | bytes,
    *,
    limits: Limits = DEFAULT,
    line: int | None = None,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
) -> Any:
    """The value of one JSON text within `limits`, else `BadJSON` (with `line`, or the
    parser's line within the text). A leading byte-order mark is ignored;
    `object_pairs_hook` builds objects, as for `json.loads` (a dict subclass)."""
    try:
        text = _decode(data)
        if len(text) > limits.total_bytes:
            raise BadJSON(f"{len(text)} characters, more than {limits.total_bytes}")
        if text.startswith(BOM):
            text = text[1:]
        if _too_deep(text, limits.depth):
            raise BadJSON(f"nested deeper than {limits.depth} levels")
        try:
            value = json.loads(
                text,
                parse_int=_number(limits.number_chars, int),
                parse_float=_number(limits.number_chars, float),
                object_pairs_hook=object_pairs_hook,
            )
        except json.JSONDecodeError as exc:
            at = exc.lineno if line is None else line
            raise BadJSON(f"not valid JSON ({exc.msg}, column {exc.colno})", at) from None
        except RecursionError:
            raise BadJSON(f"nested deeper than {limits.depth} levels") from None
        if _SURROGATE_ESCAPE.search(text):
            _check_strings(value)
        return value
    except BadJSON as exc:
        if exc.line is None and line is not None:
            raise BadJSON(exc.why, line) from None
        raise


def load_file(path: str | os.PathLike[str], *, limits: Limits = DEFAULT) -> Any:
    """The value of a whole JSON file; `BadJSON` (OSError when it cannot be opened)."""
    size = os.stat(path).st_size
    if size > limits.total_bytes:
        raise BadJSON(f"{size} bytes, more than {limits.total_bytes} a JSON file may hold")
    with open(path, "rb") as fh:
        return loads(fh.read(limits.total_bytes + 1), limits=limits)


def read_lines(
    source: str | os.PathLike[str] | IO[bytes], *, limits: Limits = DEFAULT
) -> Iterator[tuple[int, Any]]:
    """(line number, value or `BadJSON`) for each non-blank line of a JSONL file, read as
    a stream: memory is one line's, whatever the file's size. Lines split on b"\\n" only
    (JSON escapes it inside strings; U+2028 in a note is not a line break). A line over
    `limits.line_bytes` is skipped to its end and reported, never held."""
    fh = open(source, "rb") if isinstance(source, str | os.PathLike) else source  # noqa: SIM115
    try:
        n = 0
        while True:
            raw = fh.readline(limits.line_bytes + 1)
            if not raw:
                return
            n += 1
            if len(raw) > limits.line_bytes and not raw.endswith(b"\n"):
                while (rest := fh.readline(1 << 20)) and not rest.endswith(b"\n"):
                    pass
                yield n, BadJSON(f"line longer than {limits.line_bytes} bytes", n)
                continue
            if n == 1 and raw.startswith(BOM.encode()):
                raw = raw[3:]
            if not raw.strip():
                continue
            try:
                yield n, loads(raw, limits=limits, line=n)
            except BadJSON as exc:
                yield n, exc
    finally:
        if fh is not source:
            fh.close()
