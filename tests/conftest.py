"""Suite-wide settings and the one browser every browser test shares."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Set at import, before any test or server subprocess starts, so nothing a test runs
# writes into the user's real ~/.cache.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="rageval-test-cache-")

CHROMIUM = Path("/usr/bin/chromium")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def skip_unless_ci(reason: str) -> None:
    """Skip a test whose tool is missing here — but fail under CI=true.

    A green CI has to mean every test ran: a missing browser, trec_eval binding, Ray or
    moto in CI is an install defect to fix, not a reason to pass.
    """
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: a missing tool fails instead of skipping)")
    pytest.skip(reason, allow_module_level=True)


def import_or_skip_unless_ci(module: str, install: str):
    """`pytest.importorskip` that fails under CI=true (see `skip_unless_ci`)."""
    try:
        return __import__(module)
    except ImportError:
        skip_unless_ci(f"{module} is not installed ({install})")


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator:
    """Debian's chromium through Playwright (never `playwright install`: downloads fail here).

    One per session for the whole suite: Playwright's sync API refuses a second instance
    while another is running in the same thread.
    """
    if not CHROMIUM.exists():
        skip_unless_ci(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def inspected_runs(monkeypatch) -> list[str]:
    """The run ids whose manifest the store reads from here on (a local folder or a
    bucket: the runs index stands in for unchanged ones)."""
    import rageval_core.store.results as store

    inspected: list[str] = []
    real = store.inspect_run
    monkeypatch.setattr(
        store, "inspect_run", lambda loc, rid: inspected.append(rid) or real(loc, rid)
    )
    return inspected
