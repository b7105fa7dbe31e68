"""Reading the files people write: datasets, corpora, run configs, thresholds, labels.

Such a file is untrusted input. It may not be UTF-8, may nest thousands of levels deep
(the YAML and JSON parsers recurse), or may be a YAML "billion laughs": ten lines whose
aliases expand to 10^9 nodes, harmless until something walks, prints or writes the value.
Every reader of a user's file goes through here, so each of these becomes one line naming
the file (and the line, column or byte offset), raised as the caller's error class of the
one tree — before any value is built, walked or echoed.

A message quotes a user's value with `errors.shown()`: a repr cut to `SHOWN_CHARS`,
computed in bounded work whatever the value holds. Nothing here reads a file the caller did
not name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from rageval_core import bounded_json
from rageval_core.errors import RagevalError, shown

# Deeper than any dataset, config or label file needs, shallow enough for the recursive
# YAML constructors and for every later walk of the value.
MAX_DEPTH = 64
# Nodes that aliases may add beyond those the file spells out: a file may at most double
# by expansion (this many nodes for a small file). A few shared tag lists or parameter
# blocks add tens of nodes; a billion laughs adds 10^9.
MAX_ALIAS_NODES = 100_000

SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_text(path: str | os.PathLike[str], what: str, error: type[RagevalError]) -> str:
    """The UTF-8 text of a user's file (a byte-order mark is dropped).

    Raises `error` naming the file: unreadable, a directory, or not UTF-8 (with the line
    and byte offset of the first bad byte).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: cannot read {what}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: cannot read {what}: is a directory") from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    except ValueError:  # a NUL byte in the path (a dataset may name its corpus file)
        raise error(f"{shown(str(path))}: cannot read {what}: invalid file name") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(
            f"{path}:{line}: {what} is not UTF-8 "
            f"(byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def _line(node: yaml.Node) -> str:
    return f"line {node.start_mark.line + 1}"


def _check_graph(root: yaml.Node, path: Path, what: str, error: type[RagevalError]) -> None:
    """Refuse a composed YAML document that nests too deep or whose aliases expand too far.

    Aliases make the node graph a DAG: one anchored node reachable along many paths. Its
    expanded size (what walking or printing the value visits) and its depth are computed
    bottom-up, each node once, without recursion.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in size:
            continue
        kids = _children(node)
        if not children_done:
            if key in depth:  # on the stack already: an alias to one of its own ancestors
                raise error(f"{path}: {what}: {_line(node)}: an alias refers to itself")
            depth[key] = -1
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in size)
            continue
        size[key] = 1 + sum(size[id(k)] for k in kids)
        depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
        if depth[key] > MAX_DEPTH:
            raise error(f"{path}: {what}: {_line(node)}: nested more than {MAX_DEPTH} levels deep")
    spelled = len(size)
    if size[id(root)] - spelled > max(MAX_ALIAS_NODES, spelled):
        raise error(
            f"{path}: {what}: YAML aliases expand {spelled:,} nodes to {size[id(root)]:,}; "
            f"at most {max(MAX_ALIAS_NODES, spelled):,} may be added by aliases"
        )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def parse_yaml(
    text: str,
    path: str | os.PathLike[str],
    what: str,
    error: type[RagevalError],
    loader: type[yaml.SafeLoader] = SafeLoader,
) -> Any:
    """The value of a one-document YAML text, built by `loader` (a safe loader).

    The document is composed first and checked (depth, alias expansion) before any
    Python value is built. Syntax errors name the line and column.
    """
    path = Path(path)
    parser = loader(text)
    try:
        node = parser.get_single_node()
        if node is None:
            return None
        _check_graph(node, path, what, error)
        return parser.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        detail = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise error(f"{where}: {what} is not valid YAML: {shown(detail, 160, bare=True)}") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: {what} is not valid YAML: {shown(exc, 160, bare=True)}") from None
    except RecursionError:
        raise error(f"{path}: {what}: nested too deep to read") from None
    except ValueError as exc:  # a scalar no constructor can build, e.g. a 5,000-digit int
        raise error(f"{path}: {what}: unreadable value: {shown(exc, 160, bare=True)}") from None
    finally:
        parser.dispose()


def load_yaml(
    path: str | os.PathLike[str],
    what: str,
    error: type[RagevalError],
    loader: type[yaml.SafeLoader] = SafeLoader,
) -> Any:
    """`parse_yaml` of the file at `path` (see `read_text` for the errors)."""
    return parse_yaml(read_text(path, what, error), path, what, error, loader)


def parse_json(text: str, path: str | os.PathLike[str], error: type[RagevalError]) -> Any:
    """A JSON value read by the bounded reader (`bounded_json.loads`): a syntax error, deep
    nesting, a number of hundreds of digits or a lone surrogate is `path:line: why`."""
    try:
        return bounded_json.loads(text)
    except bounded_json.BadJSON as exc:
        raise error(exc.at(str(path))) from None


ASCII_INT = re.compile(r"[0-9]{1,18}")
"""The one rule for an integer a user writes as text (an offset, a version's number):
ASCII digits only — `str.isdigit` also takes `²` and `٣`, which `int()` refuses or
reads as another number — and at most 18 of them."""


def ascii_int(text: str) -> int | None:
    """`text` (white space around it ignored) as an integer by `ASCII_INT`, else None."""
    stripped = text.strip()
    return int(stripped) if ASCII_INT.fullmatch(stripped) else None
