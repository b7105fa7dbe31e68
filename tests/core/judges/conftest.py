"""Shared fixtures for the judge tests: the scripted chat server and sample inputs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from rageval_core.models import JudgeInput, RetrievedChunk


def _load_chat_server():
    # Tests run with --import-mode=importlib and no packages, so a sibling helper module is
    # loaded by path instead of by name.
    path = Path(__file__).with_name("chat_server.py")
    spec = importlib.util.spec_from_file_location("judges_chat_server", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


chat_server = _load_chat_server()


@pytest.fixture(autouse=True)
def own_cache_home(tmp_path, monkeypatch):
    """A cache home per test: HTTP judges cache replies in `$XDG_CACHE_HOME/rageval/judge`
    by default, and a reply cached by one test must not answer for another's server."""
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


@pytest.fixture
def chat():
    """The chat_server module: `chat.ChatServer`, `chat.Step`."""
    return chat_server


@pytest.fixture
def sample_input() -> JudgeInput:
    return JudgeInput(
        question="When did the museum open?",
        answer="The museum opened in 1998. It has four floors.",
        retrieved=(
            RetrievedChunk("museum#1", "The museum opened in 1998 in Lyon."),
            RetrievedChunk("museum#2", "The building has three floors and a garden."),
        ),
        reference_answer="1998",
    )
