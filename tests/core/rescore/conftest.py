"""Fixtures for `rageval rescore`: demo runs, a folder and cache home per test, a judge."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rageval_core.cli import main
from tests.core.judges.chat_server import ChatServer
from tests.core.rescore.helpers import SOURCE, reply


@pytest.fixture(scope="session")
def demo_runs() -> Iterator[Path]:
    """`rageval demo --results DIR`, once per session; copy a run before changing it.
    (Not tmp_path: pytest keeps only a user's newest three session folders, so parallel
    sessions on a shared machine delete each other's folders mid-run.)"""
    with tempfile.TemporaryDirectory(prefix="rageval-rescore-demo-") as d:
        assert main(["demo", "--results", d]) == 0
        yield Path(d)


@pytest.fixture(autouse=True)
def scratch(monkeypatch) -> Iterator[Path]:
    """A folder of this test's own, holding its cache home: `XDG_CACHE_HOME` points inside
    it (subprocesses inherit it), so the judge's replies of one test never answer for
    another's server, and nothing lands in the real ~/.cache."""
    with tempfile.TemporaryDirectory(prefix="rageval-rescore-") as d:
        monkeypatch.setenv("XDG_CACHE_HOME", str(Path(d) / "xdg-cache"))
        yield Path(d)


@pytest.fixture
def results(demo_runs, scratch) -> Path:
    """A results folder of this test's own holding the source run (the first demo run)."""
    shutil.copytree(demo_runs / SOURCE, scratch / "results" / SOURCE)
    return scratch / "results"


@pytest.fixture
def judge_server() -> Iterator[ChatServer]:
    """The loopback chat-completions judge of tests/core/judges, scripted by `reply`."""
    with ChatServer(reply) as srv:
        yield srv
