"""Layering: only `rageval_core/runs/` spells a run's file names, and no module imports
another's private names (`_x`), in `rageval_core/` and `dashboard/`.

Read with `ast`, so a name in a comment does not count but one in a docstring, a string
or an f-string does: a reader who finds `manifest.json` in the runner would think the
runner owns it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("rageval_core", "dashboard")
RUNS = ROOT / "rageval_core" / "runs"

RUN_FILE = re.compile(
    r"\b(?:manifest|summary)\.json\b"
    r"|\bquestions(?:-[\w<>{}]*|\{\})?\.(?:jsonl|parquet)\b"
    r"|\bshard-(?:[\w<>]+|\{[^}]*\})\.json\b"
    r"|\.writer(?:-[\w<>\[\]]*|\{\}|\[-k\])?\.lease\b"
)
"""A run's file names as code or prose may spell them: `questions-3.parquet`,
`questions-<k>.jsonl`, `f"shard-{k}.json"`, `.writer[-k].lease`."""


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _text(node: ast.AST) -> str | None:
    """A string literal's text; an f-string with `{}` where its values go."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def run_file_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of every run file name spelt in `source`'s strings."""
    found = set()  # an f-string's parts are strings of their own: each name once
    for node in ast.walk(ast.parse(source)):
        text = _text(node)
        if text is not None:
            found |= {(node.lineno, m.group(0)) for m in RUN_FILE.finditer(text)}
    return sorted(found)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _ours(module: str | None, level: int) -> bool:
    return level > 0 or (module or "").split(".")[0] in PACKAGES


def private_imports(source: str, package: str = "") -> list[tuple[int, str]]:
    """(line, what) of each private name taken from another module of ours: imported
    (`from m import _x`) or reached through an imported module (`m._x`). A package's
    private modules are its own to import (`from rageval_core.query import _sql` inside
    `rageval_core.query`): private by name means private to the package."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    modules: set[str] = set()  # local names bound to one of our modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _ours(node.module, node.level):
            own = bool(package) and node.module == package
            for alias in node.names:
                if _private(alias.name) and not own:
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
                else:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _ours(alias.name, 0):
                    if any(_private(part) for part in alias.name.split(".")):
                        found.append((node.lineno, f"import {alias.name}"))
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and _private(node.attr)
        ):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return found


def _report(check, paths: list[Path]) -> list[str]:
    return [
        f"{p.relative_to(ROOT)}:{line}: {what}"
        for p in paths
        for line, what in check(p.read_text(encoding="utf-8"), *_package_of(check, p))
    ]


def _package_of(check, path: Path) -> tuple[str, ...]:
    """The package of `path`, for the checks that take one."""
    if check is not private_imports:
        return ()
    return (".".join(path.relative_to(ROOT).parent.parts),)


def test_only_the_runs_package_names_run_files():
    outside = [p for p in _modules() if not p.is_relative_to(RUNS)]
    assert _report(run_file_names, outside) == []


def test_no_module_imports_another_modules_private_names():
    assert _report(private_imports, _modules()) == []


@pytest.mark.parametrize(
    "source",
    [
        'NAME = "manifest.json"',
        'def f():\n    """Writes `summary.json` last."""',
        'p = f"{root}/shard-{k}.json"',
        'p = f"questions{suffix}.parquet"',
        'doc = "questions-<k>.jsonl and .writer[-k].lease"',
    ],
)
def test_the_check_sees_run_file_names_however_spelt(source):
    assert run_file_names(source)


@pytest.mark.parametrize(
    "source",
    ['CORPUS = "corpus.jsonl"', 'CACHE = "run_summary.parquet"', "# manifest.json in a comment"],
)
def test_the_check_leaves_other_file_names_alone(source):
    assert run_file_names(source) == []


@pytest.mark.parametrize(
    "source",
    [
        "from rageval_core.runner import _RunFolder",
        "from .views import _tags",
        "from rageval_core.query import views\nviews._tags(1)",
        "import rageval_core.query.views as v\nv._none()",
    ],
)
def test_the_check_sees_private_names_crossing_modules(source):
    assert private_imports(source)


@pytest.mark.parametrize(
    "source",
    [
        "from rageval_core import __version__",
        "from collections import _chainmap",  # not ours
        "import os\nos._exit",
        "from rageval_core.query import views\nviews.tags(1)\nself._x = 1",
    ],
)
def test_the_check_leaves_public_and_foreign_names_alone(source):
    assert private_imports(source) == []


def test_a_package_imports_its_own_private_modules_and_no_one_else_does():
    source = "from rageval_core.query import _sql\n"
    assert private_imports(source, "rageval_core.query") == []
    assert private_imports(source, "rageval_core.store")
    assert private_imports(source, "dashboard")
