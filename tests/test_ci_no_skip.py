"""Under CI=true a missing test tool fails the run; locally it skips (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NEEDS_MISSING_TOOL = """
from tests.conftest import import_or_skip_unless_ci

mod = import_or_skip_unless_ci("rageval_no_such_module", "pip install nothing")


def test_uses_it():
    assert mod
"""


@pytest.mark.parametrize(("ci", "outcome"), [("true", "1 error"), ("", "1 skipped")])
def test_missing_tool_skips_only_outside_ci(tmp_path: Path, ci: str, outcome: str) -> None:
    test_file = tmp_path / "test_needs_tool.py"
    test_file.write_text(NEEDS_MISSING_TOOL)
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert outcome in proc.stdout, proc.stdout + proc.stderr
    # pytest exits 5 when nothing ran (the module skipped); a collection error is a failure
    assert proc.returncode == (2 if ci else 5), proc.stdout
