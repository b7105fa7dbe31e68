"""Fixtures for `rageval rescore`: demo runs, a cache home per test, a scripted judge."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rageval_core.demo import write_demo
from tests.core.judges.chat_server import ChatServer
from tests.core.rescore.helpers import SOURCE, reply


# Not tmp_path: pytest keeps only the newest three session folders of a user, so parallel
# sessions on a shared machine delete each other's folders mid-run.
@pytest.fixture(scope="session")
def demo_runs() -> Iterator[Path]:
    """The demo runs (`rageval demo`), written once per session; copy before changing."""
    with tempfile.TemporaryDirectory(prefix="rageval-rescore-demo-") as d:
        write_demo(d, progress=False)
        yield Path(d)


@pytest.fixture
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="rageval-rescore-") as d:
        yield Path(d)


@pytest.fixture
def results(demo_runs, scratch) -> Path:
    """A results folder of this test's own holding the source run (the first demo run)."""
    out = scratch / "results"
    out.mkdir()
    shutil.copytree(demo_runs / SOURCE, out / SOURCE)
    return out


@pytest.fixture(autouse=True)
def own_cache_home(scratch, monkeypatch) -> Path:
    """A cache home per test (subprocesses inherit it): the judge's replies of one test
    never answer for another's server, and nothing lands in the real ~/.cache."""
    home = scratch / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


@pytest.fixture
def judge_server() -> Iterator[ChatServer]:
    """The loopback chat-completions judge of tests/core/judges, scripted by `reply`."""
    with ChatServer(reply) as srv:
        yield srv
