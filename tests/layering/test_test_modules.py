"""Layering of the tests: no test module imports another test module.

A helper that two test modules share lives in a `conftest.py` or a helper module (a name
that does not start with `test_`), so collecting one folder never needs another folder's
tests (nor their imports, such as boto3), and a test module can be moved or deleted alone.
Read with `ast`: imports inside functions count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def imported_modules(source: str) -> list[str]:
    """Every module an `import` or `from … import` in `source` names, at any depth; a
    relative import as written (`.test_app`)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append("." * node.level + (node.module or ""))
    return out


def is_test_module(name: str) -> bool:
    """A module of this suite (`tests.…` or relative) whose name is a test module's."""
    ours = name.startswith(("tests.", "."))
    return ours and name.rsplit(".", 1)[-1].startswith("test_")


def offenders() -> list[str]:
    return sorted(
        f"{path.relative_to(TESTS.parent)} imports {name}"
        for path in TESTS.rglob("test_*.py")
        for name in imported_modules(path.read_text(encoding="utf-8"))
        if is_test_module(name)
    )


def test_no_test_module_imports_another() -> None:
    assert offenders() == []


def test_the_rule_sees_every_form_of_import() -> None:
    source = (
        "import tests.core.test_x\n"
        "from tests.dashboard.test_app import open_page\n"
        "from .test_app import texts\n"
        "def f():\n    from tests.core.labels.test_hostile_lines import HOSTILE\n"
        "from tests.core.labels.helpers import SAVER\n"
        "from deepeval.test_case import LLMTestCase\n"
    )
    found = sorted(m for m in imported_modules(source) if is_test_module(m))
    assert found == [
        ".test_app",
        "tests.core.labels.test_hostile_lines",
        "tests.core.test_x",
        "tests.dashboard.test_app",
    ]
