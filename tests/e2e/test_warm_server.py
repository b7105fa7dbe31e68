"""A fresh `rageval dashboard` server makes the first page's imports before any browser
connects (`dashboard/serve.py`), so the first visitor does not wait for them."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard import serve
from tests.e2e.conftest import Server, _serve

WARM_S = 60  # the imports take about a second on an idle machine


def _mapped(pid: int, needle: str) -> bool:
    """A shared library whose path holds `needle` is loaded in process `pid`."""
    return needle in Path(f"/proc/{pid}/maps").read_text()


@pytest.fixture
def fresh_server(demo_results, tmp_path) -> Iterator[Server]:
    """A server of its own, which no browser has opened (the shared ones have sessions)."""
    yield from _serve(demo_results, tmp_path / "fresh.log")


def test_a_fresh_server_imports_the_first_pages_libraries_before_any_session(fresh_server):
    # DuckDB is imported by no part of Streamlit: only the app (or the warm-up) loads it
    srv = fresh_server
    deadline = time.monotonic() + WARM_S
    while not _mapped(srv.proc.pid, "/_duckdb."):
        assert srv.proc.poll() is None, srv.log.read_text()
        assert time.monotonic() < deadline, "no DuckDB in the server before a session"
        time.sleep(0.2)
    assert _mapped(srv.proc.pid, "/pandas/_libs/")
    log = srv.log.read_text()
    # the app's st.cache_* decorators met the server's runtime, not bare mode's stand-in
    assert "No runtime found" not in log and "Traceback" not in log


def test_warm_waits_for_the_server_and_gives_up_without_one(monkeypatch):
    monkeypatch.setattr(serve, "_server_started", lambda: False)
    t0 = time.monotonic()
    assert serve.warm(("json",), wait_s=0.2) == []
    assert time.monotonic() - t0 < 5


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """`prepare` freezes the collector's objects, as for a server; not for the test run."""
    yield
    gc.unfreeze()


def test_warm_skips_a_module_that_fails_and_imports_the_rest(monkeypatch, unfrozen):
    monkeypatch.setattr(serve, "_server_started", lambda: True)
    assert serve.warm(("json", "no_such_module_for_rageval", "csv")) == ["json", "csv"]


def test_prepare_freezes_what_exists_out_of_full_collections(unfrozen):
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    serve.prepare(("json",))
    assert gc.get_freeze_count() > 1000  # the test process's modules and their objects


@pytest.mark.parametrize("name", serve.WARM_MODULES)
def test_every_warmed_module_exists(name):
    import importlib.util

    assert importlib.util.find_spec(name) is not None, name
