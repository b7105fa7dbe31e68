"""bench/synth.py writes what the real readers accept, and the summaries it computes from
the rows in memory (a block of runs per query) are those `summarize_run` reads from each
run's file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rageval_core.cli import main as cli
from rageval_core.query import ResultsStore, summarize_run
from rageval_core.runs.reading import inspect_run

from .conftest import synth_generate


@pytest.fixture(scope="module")
def synth_results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("synth")
    synth_generate(root, 52, 30, seed=3)  # two blocks of runs (50 a block): a query each
    return root


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15) or (math.isnan(a) and math.isnan(b))
    return a == b


def test_each_runs_summary_is_what_summarize_run_reads_from_its_file(synth_results):
    folders = sorted(p for p in synth_results.iterdir() if p.is_dir())
    assert len(folders) == 52
    for folder in folders:
        info = inspect_run(str(synth_results), folder.name)
        assert info.status == "complete" and not info.problems, (folder.name, info.problems)
        want = summarize_run(info)
        assert want.pop("problems") == []
        got = json.loads((folder / "summary.json").read_text())
        assert got.keys() == want.keys(), folder.name
        bad = {k: (got[k], want[k]) for k in want if not _same(got[k], want[k])}
        assert not bad, (folder.name, bad)
        assert got["n_questions"] == 30


def test_the_store_and_rageval_runs_open_the_synthetic_results(synth_results, capsys):
    store = ResultsStore(str(synth_results), read_only=True)
    assert len(store.runs()) == 52
    assert not [r for r in store.runs() if r.problems]
    assert cli(["runs", "--results", str(synth_results)]) == 0
    out = capsys.readouterr().out
    newest = max(p.name for p in synth_results.iterdir() if p.is_dir())
    assert newest in out
