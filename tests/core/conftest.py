"""Fixtures every core test folder may use."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    root.mkdir()
    return root
