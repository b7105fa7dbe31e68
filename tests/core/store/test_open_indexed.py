"""A restarted dashboard's first state comes from the runs index, without listing the
location; the refresh after it finds what changed while the server was down, and ends in
the state a fresh store finds."""

from __future__ import annotations

import gc
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rageval_core.store.results as store_mod
from rageval_core.query import ResultsStore, runs_overview
from tests.core.query.conftest import row, write_run


def _finished(results, rid: str, n: int = 2) -> None:
    write_run(results, rid, [row(f"q{i}") for i in range(n)], created_at=f"2025-01-0{rid[-1]}")


def _same(a: ResultsStore, b: ResultsStore) -> None:
    assert a.runs() == b.runs()
    assert a.problems == b.problems
    assert a.fingerprint() == b.fingerprint()
    assert runs_overview(a).equals(runs_overview(b))


def test_the_first_state_is_the_index_and_the_refresh_after_it_finds_the_changes(
    results, monkeypatch
):
    for rid in ("r1", "r2", "r3"):
        _finished(results, rid)
    ResultsStore(results)  # the last refresh before the "restart": writes the index
    # while the server was down: a run added, one removed, one running, a stray folder
    _finished(results, "r4")
    shutil.rmtree(results / "r1")
    write_run(results, "r5", [row("q1")], status="running")
    (results / "not a run").mkdir()

    def no_listing(*_a, **_k):
        raise AssertionError("the location was listed")

    monkeypatch.setattr(store_mod, "scan_folders", no_listing)
    monkeypatch.setattr(store_mod, "inspect_run", no_listing)
    restarted = ResultsStore(results, refresh=False)
    assert restarted.open_indexed()
    assert [r.run_id for r in restarted.runs()] == ["r1", "r2", "r3"]
    assert restarted.refreshed_at and not restarted.open_indexed()  # once, before a refresh
    assert not restarted.listed and restarted.find("r1") and restarted.find("r4") is None
    monkeypatch.undo()
    restarted.refresh()
    assert restarted.listed and restarted.find("r4") and restarted.find("r1") is None
    assert [r.run_id for r in restarted.runs()] == ["r2", "r3", "r4", "r5"]
    assert any("not a run" in p.run_id for p in restarted.problems)
    _same(restarted, ResultsStore(results))


def test_without_an_index_nothing_is_opened(results):
    _finished(results, "r1")
    store = ResultsStore(results, refresh=False)
    assert not store.open_indexed()
    assert store.refreshed_at == 0 and store.runs() == []


def test_an_unchanged_location_keeps_the_index_state_and_its_fingerprint(results):
    for rid in ("r1", "r2"):
        _finished(results, rid)
    before = ResultsStore(results)
    restarted = ResultsStore(results, refresh=False)
    assert restarted.open_indexed()
    _same(restarted, before)  # memoised results keyed by the fingerprint stay valid
    assert not restarted.listed
    restarted.refresh()
    assert restarted.listed
    _same(restarted, before)


CHANGES = st.lists(
    st.tuples(st.sampled_from(["add", "remove", "rewrite"]), st.integers(1, 5)), max_size=4
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(CHANGES)
def test_any_changes_while_down_end_in_the_state_of_a_fresh_store(tmp_path_factory, changes):
    results = tmp_path_factory.mktemp("results")
    for rid in ("r1", "r2", "r3"):
        _finished(results, rid)
    ResultsStore(results)
    for op, i in changes:
        rid = f"r{i}"
        if op == "remove":
            shutil.rmtree(results / rid, ignore_errors=True)
        else:
            _finished(results, rid, n=3 if op == "rewrite" else 2)
    restarted = ResultsStore(results, refresh=False)
    restarted.open_indexed()
    restarted.refresh()
    assert restarted.listed  # also when nothing changed: a link need not list it again
    _same(restarted, ResultsStore(results))


def test_gc_paused_restores_what_it_found_even_on_an_error():
    assert gc.isenabled()
    with pytest.raises(RuntimeError), store_mod.gc_paused():
        assert not gc.isenabled()
        with store_mod.gc_paused():  # nested (or another thread): leaves it to the outer
            pass
        assert not gc.isenabled()
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with store_mod.gc_paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()
