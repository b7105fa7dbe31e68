"""Dataset files read with their line numbers, so every problem names file and line.

YAML is read with strings and null as its only scalars: `id: 001`, `version: 1.10` and
`reference_answer: yes` keep the text the user wrote instead of becoming 1, 1.1 and True.
A file that cannot be read or parsed becomes one problem in the caller's list, never a raise.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

from rageval_core.bounded_json import BadJSON, loads
from rageval_core.errors import DatasetError
from rageval_core.userfiles import SafeLoader, parse_yaml, read_text

_KEPT_SCALAR_TAGS = {"tag:yaml.org,2002:null", "tag:yaml.org,2002:merge"}


class Located(dict):
    """A mapping read from a file that remembers where it and each of its keys were written."""

    def __init__(self, line: int):
        super().__init__()
        self.line = line
        self.key_lines: dict[Any, int] = {}
        self.repeated: list[tuple[Any, int]] = []

    def put(self, key: Any, value: Any, line: int) -> None:
        if key in self:
            self.repeated.append((key, line))
        self[key] = value
        self.key_lines[key] = line

    def line_of(self, key: str | None) -> int:
        return self.key_lines.get(key, self.line)


class Items(list):
    """A list read from a file that remembers the line of each item."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[int] = []

    def add(self, value: Any, line: int) -> None:
        self.append(value)
        self.lines.append(line)

    def line_of(self, value: Any, default: int) -> int:
        return self.lines[self.index(value)] if value in self else default


class _Loader(SafeLoader):  # type: ignore[misc, valid-type]
    """Safe YAML whose mappings know their line numbers; plain scalars stay strings."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag in _KEPT_SCALAR_TAGS]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Located:
    loader.flatten_mapping(node)
    mapping = Located(node.start_mark.line + 1)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value", key_node.start_mark
            ) from None
        value = loader.construct_object(value_node, deep=True)
        mapping.put(key, value, key_node.start_mark.line + 1)
    return mapping


def _construct_sequence(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> Items:
    items = Items()
    for item in node.value:
        items.add(loader.construct_object(item, deep=True), item.start_mark.line + 1)
    return items


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)


def text_of(path: Path, what: str, problems: list[str]) -> str | None:
    """The file's text, or None after recording why it cannot be read."""
    try:
        return read_text(path, what, DatasetError)
    except DatasetError as exc:
        problems.append(exc.message)
        return None


def yaml_of(text: str, path: Path, what: str, problems: list[str]) -> tuple[bool, Any]:
    """(parsed, value); a file that cannot be parsed becomes one problem naming it."""
    try:
        return True, parse_yaml(text, path, what, DatasetError, _Loader)
    except DatasetError as exc:
        problems.append(exc.message)
        return False, None


def _json_object(pairs: list[tuple[str, Any]], line: int) -> Located:
    obj = Located(line)
    for key, value in pairs:
        obj.put(key, value, line)
    return obj


def parse_jsonl(text: str, path: Path, problems: list[str]) -> Items:
    """One value per non-blank line; objects and items know their line numbers."""
    records = Items()
    # split on "\n" only: str.splitlines would also split on U+2028 etc., which JSON
    # leaves unescaped inside strings.
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = loads(line, line=n, object_pairs_hook=functools.partial(_json_object, line=n))
        except BadJSON as exc:  # the bounded reader: also huge numbers and lone surrogates
            problems.append(exc.at(str(path)))
            continue
        records.add(value, n)
    return records
