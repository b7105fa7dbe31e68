"""Stopping `rageval dashboard` (Ctrl-C, or SIGTERM from a service manager) while its first
build summarises the runs on a thread beside the pages (`dashboard.serve.main`): Python's
own exit stopped that thread inside DuckDB and aborted ("terminate called after throwing
an instance of ''", exit -6, seconds later). It now exits at once with 0, says the next
start completes the cache, and the next start does."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from rageval_core.query import ResultsStore, runs_overview
from tests.core.query.conftest import synth_generate
from tests.e2e.conftest import _serve

pytestmark = pytest.mark.e2e

RUNS, QUESTIONS = 1_000, 50  # over BACKGROUND_BUILD_RUNS: built on a thread, ~5 s


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("many") / "results"
    synth_generate(results, RUNS, QUESTIONS, seed=5)
    return results


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Iterator[Path]:
    """A cache folder of this test's own: the server starts with no cache (a first build)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    yield tmp_path / "xdg"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_stopping_during_the_first_build_exits_at_once_and_the_next_start_completes_it(
    page: Page, many_runs: Path, cache: Path, tmp_path: Path, sig: signal.Signals
):
    serving = _serve(many_runs, tmp_path / "first.log", {"XDG_CACHE_HOME": str(cache)})
    server = next(serving)
    page.goto(server.url)
    expect(page.get_by_text(f"Summarising {RUNS:,} runs into the cache").first).to_be_visible()
    server.proc.send_signal(sig)
    assert server.proc.wait(timeout=30) == 0, server.log.read_text()[-2000:]
    log = server.log.read_text()
    assert "stopped while the run folders were listed or summarised" in log
    assert "terminate called" not in log
    serving.close()

    store = ResultsStore(str(many_runs), read_only=True)  # the next start's refresh
    assert len(store.runs()) == RUNS and not store.problems
    assert (runs_overview(store)["n_questions"] == QUESTIONS).all()
