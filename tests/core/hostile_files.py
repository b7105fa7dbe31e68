"""Helpers of the hostile-file tests (tests/core/dataset/test_hostile.py,
tests/core/test_user_files.py): an alias bomb, and the CLI in a memory-limited subprocess."""

from __future__ import annotations

import resource
import subprocess
import sys
import time

MEMORY_LIMIT = 1_000_000_000  # bytes of address space: the CLI needs ~300 MB on a valid file


def billion_laughs(levels: int = 9, width: int = 10) -> str:
    """`lol` repeated width**levels times in `levels + 1` lines of YAML."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def limit_memory() -> None:
    """A subprocess's `preexec_fn`: at most MEMORY_LIMIT bytes of address space."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def cli(*args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    """`rageval ARGS` in a subprocess limited to MEMORY_LIMIT; (result, seconds)."""
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit_memory,
    )
    return done, time.monotonic() - start
