"""Tables over every run send the newest 200 and say so: at 1,000 runs the Runs table
sent 400 KB and a question's history as much, the largest part of those pages' browser
time (docs/scale.md, "What the browser waits for"). Filters reach older runs."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rageval_core.store.results import ResultsStore
from tests.core.query.conftest import synth_generate
from tests.dashboard.apptest import no_exception, open_page

RUNS = 205


@pytest.fixture(scope="module")
def many_runs() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="rageval-dashboard-caps-") as d:
        root = Path(d) / "results"
        synth_generate(root, RUNS, 3, seed=1)
        ResultsStore(str(root), read_only=True).close()  # summarised, as a started server has
        yield root


def newest(root: Path) -> str:
    return max(p.name for p in root.iterdir() if (p / "manifest.json").exists())


def test_runs_table_holds_the_newest_200_runs_and_says_so(app, many_runs) -> None:
    at = no_exception(app(many_runs).run())
    table = next(d.value for d in at.dataframe if "config_name" in d.value.columns)
    assert len(table) == 200 and newest(many_runs) in set(table["run_id"])
    assert any(c.value.startswith(f"The newest 200 of {RUNS} runs") for c in at.caption)


def test_history_holds_the_newest_200_runs_and_says_so(app, many_runs) -> None:
    at = open_page(app(many_runs, run=newest(many_runs), question="q00000"), "question")
    history = next(d.value for d in at.dataframe if "created_at" in d.value.columns)
    assert len(history) == 200 and newest(many_runs) in set(history["run_id"])
    assert any(c.value == "The newest 200 runs that have this question." for c in at.caption)
