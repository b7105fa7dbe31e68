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
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()
