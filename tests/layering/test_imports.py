"""The layers, read from the source (ast, so an import inside a function counts too):

- nothing in `rageval_core` imports `dashboard` (the library knows everything, the app
  only draws; the CLI prints dashboard links through `rageval_core.links`);
- `rageval_core/metrics/` is pure maths: of rageval it imports only the catalogue, the
  models, the thresholds and the errors (and its own modules);
- the two packages of reading runs: `rageval_core/store/` (how runs become queryable) is
  imported only by `rageval_core/query/` (what pages and commands ask), and imports none of
  it; everything else imports the questions through `rageval_core.query`'s face, never a
  module behind it (those are private by name: `query/_compare.py`); `rageval_core/runs/`
  imports neither (a run's files are read from the bottom up).

docs/architecture.md, "Layers", says why.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "rageval_core"
METRICS_MAY_IMPORT = (
    "rageval_core.catalogue",
    "rageval_core.models",
    "rageval_core.errors",
    "rageval_core.thresholds",
)


def _module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imported(source: str, module: str, is_package: bool = False) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of everything `source` (the module `module`) imports: `import`
    and `from … import` at any depth, relative ones resolved, `from pkg import name` as
    `pkg.name` too (it may be a module), and `importlib.import_module("…")` /
    `__import__("…")` with a literal name."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                up = parts[: len(parts) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"
        elif (
            isinstance(node, ast.Call)
            and _called(node.func) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value


def _called(func: ast.expr) -> str | None:
    """The name a call calls: `f` of `f(…)` and of `mod.f(…)`."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _is(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def dashboard_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    return [
        f"line {line}: {name}"
        for line, name in imported(source, module, is_package)
        if _is(name, "dashboard")
    ]


def metrics_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """Imports of rageval modules other than the catalogue, models, thresholds, errors and
    metrics."""
    out = []
    for line, name in imported(source, module, is_package):
        if not _is(name, "rageval_core") or _is(name, "rageval_core.metrics"):
            continue
        if name == "rageval_core" or any(_is(name, ok) for ok in METRICS_MAY_IMPORT):
            continue
        # `from rageval_core.catalogue import X` also yields `rageval_core.catalogue.X`
        out.append(f"line {line}: {name}")
    return out


def _library_files(under: Path = LIBRARY) -> list[Path]:
    return sorted(under.rglob("*.py"))


def _check(path: Path, rule) -> list[str]:
    found = rule(path.read_text(encoding="utf-8"), _module_of(path), path.name == "__init__.py")
    return [f"{path.relative_to(ROOT)} {f}" for f in found]


def test_the_library_never_imports_the_dashboard():
    found = [f for p in _library_files() for f in _check(p, dashboard_imports)]
    assert not found, found


def test_metrics_import_only_the_catalogue_models_and_errors():
    found = [f for p in _library_files(LIBRARY / "metrics") for f in _check(p, metrics_imports)]
    assert not found, found


QUERY = "rageval_core.query"
STORE = "rageval_core.store"
RUNS = "rageval_core.runs"


def reading_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """Imports that break the reading layers (see the module doc) for `module`."""
    out = []
    for line, name in imported(source, module, is_package):
        if _is(module, QUERY):
            bad = False  # the questions may use the store and each other
        elif _is(module, STORE):
            bad = _is(name, QUERY)
        elif _is(module, RUNS):
            bad = _is(name, QUERY) or _is(name, STORE)
        else:
            private = name.startswith(QUERY + "._")
            bad = private or _is(name, STORE)
        if bad:
            out.append(f"line {line}: {name}")
    return out


def _app_files() -> list[Path]:
    return sorted((ROOT / "dashboard").rglob("*.py"))


def test_pages_and_commands_ask_only_the_query_face_and_store_is_below_it():
    found = [f for p in _library_files() + _app_files() for f in _check(p, reading_imports)]
    assert not found, found


def test_the_modules_behind_the_query_face_are_private_by_name():
    public = [
        p.name
        for p in (LIBRARY / "query").glob("*.py")
        if p.name != "__init__.py" and not p.name.startswith("_")
    ]
    assert public == []


@pytest.mark.parametrize(
    ("source", "module"),
    [
        ("from rageval_core.query._compare import compare_runs", "dashboard.data"),
        ("from rageval_core.query import _flaky", "rageval_core.commands.check"),
        ("import rageval_core.store.results", "rageval_core.report"),
        ("from rageval_core.store import claims", "dashboard.data"),
        ("def f():\n    from rageval_core.query import runs_overview", "rageval_core.store.update"),
        ("from rageval_core.store.schemas import SUMMARY_SCHEMA", "rageval_core.runs.folder"),
        ("from rageval_core.query import summarize_run", "rageval_core.runs.folder"),
    ],
)
def test_every_reading_layer_breach_is_seen(source, module):
    assert reading_imports(source, module)


@pytest.mark.parametrize(
    ("source", "module"),
    [
        ("from rageval_core.query import ResultsStore, compare_runs", "dashboard.data"),
        ("from rageval_core import query", "rageval_core.commands.check"),
        ("from rageval_core.store.results import ResultsStore", "rageval_core.query._shared"),
        ("from rageval_core.runs.source import open_run", "rageval_core.store.summarising"),
    ],
)
def test_what_the_reading_layers_allow_passes(source, module):
    assert reading_imports(source, module) == []


# The rules' own tests: each form of import is seen.


@pytest.mark.parametrize(
    "source",
    [
        "import dashboard",
        "import dashboard.links as links",
        "from dashboard import data",
        "from dashboard.pages import PAGES",
        "def f():\n    from dashboard.ui import link\n    return link",
        "class C:\n    def m(self):\n        import dashboard.data",
        "import importlib\nimportlib.import_module('dashboard.shaping')",
        "__import__('dashboard')",
        "try:\n    import dashboard\nexcept ImportError:\n    pass",
    ],
)
def test_every_form_of_importing_the_dashboard_is_seen(source):
    assert dashboard_imports(source, "rageval_core.commands.dashboard")


def test_names_that_only_look_like_the_dashboard_pass():
    source = "import dashboards\nfrom rageval_core.commands import dashboard\nx = 'dashboard'"
    assert dashboard_imports(source, "rageval_core.cli") == []


@pytest.mark.parametrize(
    "source",
    [
        "from rageval_core.userfiles import shown",
        "from rageval_core import userfiles",
        "import rageval_core.store.results",
        "def f():\n    from rageval_core.results import RunInfo",
        "from .. import config",
        "from ..judges import offline",
    ],
)
def test_a_metrics_module_importing_another_layer_is_seen(source):
    assert metrics_imports(source, "rageval_core.metrics.failure")


def test_metrics_may_import_the_catalogue_models_errors_and_each_other():
    source = "\n".join(
        [
            "import math",
            "from rageval_core.catalogue import DEFAULT_KS",
            "from rageval_core import models, errors",
            "from rageval_core.errors import ConfigError",
            "from . import retrieval",
            "from rageval_core.metrics.generation import f1",
        ]
    )
    assert metrics_imports(source, "rageval_core.metrics.failure") == []


def test_building_the_command_line_loads_neither_the_query_layer_nor_the_app():
    # `rageval --help` and every command's parser
    assert _loaded_by("from rageval_core.cli import build_parser; build_parser()") == []


def test_the_url_contract_loads_neither_the_query_layer_nor_dataframes():
    # the CLI prints links with it and the dashboard validates every URL value through it
    assert _loaded_by("import rageval_core.links", (*HEAVY, "pyarrow")) == []
    assert _loaded_by("import rageval_core.page_states", (*HEAVY, "pyarrow")) == []


HEAVY = ("duckdb", "pandas", "streamlit", "dashboard", "rageval_core.query")


def _loaded_by(statement: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of `heavy` a fresh interpreter holds after `statement`."""
    code = f"import sys\n{statement}\nprint(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return ast.literal_eval(done.stdout.strip())
