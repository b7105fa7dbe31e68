"""docs/architecture.md names every module of `rageval_core/` and `dashboard/`, and
nothing that is gone.

A line names a module by its path in backticks: `rageval_core/x.py` or `x.py` (relative
to `rageval_core/`), `query/_headline.py`, `dashboard/ui.py`. A package in backticks
(`commands/`, `dashboard/app_pages/`) covers its modules only when none of them is named
on its own: a package the map lists module by module must list every one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "architecture.md"
TREES = ("rageval_core", "dashboard")
ELSEWHERE = ("tests/", "docs/", "bench/", ".github/")  # paths a line may cite, not modules


def modules(root: Path = ROOT) -> set[str]:
    """Every module's path relative to `root`: `rageval_core/query/_question.py`."""
    return {
        p.relative_to(root).as_posix()
        for tree in TREES
        for p in (root / tree).rglob("*.py")
        if "__pycache__" not in p.parts
    }


def named(text: str) -> set[str]:
    """The module and package paths the map's backticked names stand for."""
    out = set()
    for token in re.findall(r"`([^`\s]+)`", text):
        if token.startswith(ELSEWHERE) or not token.endswith((".py", "/")):
            continue
        out.add(token if token.startswith(TREES) else f"rageval_core/{token}")
    return out


def missing(text: str, found: set[str]) -> list[str]:
    """Modules the map gives no line: neither named nor under a package named whose
    modules are not named one by one."""
    names = named(text)
    packages = [n for n in names if n.endswith("/")]
    listed = {n for n in names if n.endswith(".py")}

    def covered(module: str) -> bool:
        if module in listed:
            return True
        return any(
            module.startswith(pkg) and not any(m.startswith(pkg) for m in listed)
            for pkg in packages
        )

    return sorted(m for m in found if not covered(m))


def stale(text: str, root: Path = ROOT) -> list[str]:
    """Names in the map that are no file or folder of the repository."""
    return sorted(n for n in named(text) if not (root / n).exists())


def test_every_module_has_a_line_in_the_map():
    assert not missing(MAP.read_text(encoding="utf-8"), modules()), (
        "add a line to docs/architecture.md for each"
    )


def test_the_map_names_no_module_that_is_gone():
    assert not stale(MAP.read_text(encoding="utf-8"))


# The rule's own tests, on a tree and a map made here.


@pytest.fixture
def tree(tmp_path):
    for rel in (
        "rageval_core/errors.py",
        "rageval_core/query/views.py",
        "rageval_core/query/_headline.py",
        "rageval_core/commands/run.py",
        "dashboard/ui.py",
        "dashboard/app_pages/runs.py",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    return tmp_path


FULL = (
    "| `errors.py` | … |\n| `query/views.py`, `query/_headline.py` | … |\n"
    "| `rageval_core/commands/` | … |\n| `dashboard/ui.py` | … |\n| `dashboard/app_pages/` | … |\n"
)


def test_a_full_map_passes(tree):
    assert missing(FULL, modules(tree)) == []
    assert stale(FULL, tree) == []


def test_a_new_module_without_a_line_fails(tree):
    (tree / "rageval_core" / "query" / "flaky.py").write_text("")
    (tree / "rageval_core" / "origin.py").write_text("")
    assert missing(FULL, modules(tree)) == [
        "rageval_core/origin.py",
        "rageval_core/query/flaky.py",  # query/ is listed module by module
    ]


def test_a_package_line_covers_a_new_module_of_a_package_not_listed_by_module(tree):
    (tree / "rageval_core" / "commands" / "check.py").write_text("")
    assert missing(FULL, modules(tree)) == []


def test_a_line_for_a_file_that_is_gone_fails(tree):
    (tree / "rageval_core" / "errors.py").unlink()
    assert stale(FULL, tree) == ["rageval_core/errors.py"]
    assert named("see `tests/layering/x.py` and `docs/ci.md`, `run_summary.parquet`") == set()
