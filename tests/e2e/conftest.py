"""A real `rageval dashboard` server on 127.0.0.1 and Debian's chromium driving it.

Two results folders, each served by its own `rageval dashboard` subprocess for the whole
session: `demo` holds the example runs (`rageval demo`), `hostile` the same runs plus
one whose model output carries an XSS payload. Screenshots come from the clean one. The
browser recipe is the one in TESTING.md: never `playwright install`, always
/usr/bin/chromium with the launch flags below.

`RAGEVAL_SCREENSHOTS=1` makes the page tests write `docs/screenshots/<page>.png`; without
it nothing in the checkout is written, so CI never rewrites the committed images.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rageval_core.runs.atomic import write_parquet
from rageval_core.runs.layout import MANIFEST
from rageval_core.runs.rows import rows_to_table
from tests.conftest import IN_CI

CHROMIUM = Path("/usr/bin/chromium")  # the shared `browser` fixture is in tests/conftest.py
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"
VIEWPORT = {"width": 1280, "height": 900}  # the screenshots' width (docs/screenshots)
WIDE = 1920  # the other width charts are checked at (legends never over titles)
STARTUP_S = 90  # a cold start imports streamlit, duckdb and plotly on a busy 2-core box
RENDER_MS = 60_000  # first plotly render is ~5 s idle; shared CPUs make it much slower

XSS_PAYLOAD = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
XSS_RUN = "20261101-080000-hostile-output"
XSS_SOURCE_RUN = "20261123-150000-verbose"  # the demo run with flagged claims in its answers


@dataclass(frozen=True)
class Flagged:
    """A question whose answer contains, verbatim, a claim the judge flagged."""

    run_id: str
    question_id: str
    claim: str
    verdict: str
    reason: str


@dataclass
class Server:
    url: str
    results: Path
    log: Path
    proc: subprocess.Popen = field(repr=False)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if CHROMIUM.exists() or IN_CI:
        return  # under CI the browser fixture fails each test instead of skipping it
    skip = pytest.mark.skip(reason=f"{CHROMIUM} is not installed (apt-get install chromium)")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _first_flagged(results: Path, run_id: str) -> Flagged:
    """The first question (by id) with a flagged claim that appears verbatim in its answer."""
    rows = pq.read_table(results / run_id / "questions.parquet").to_pylist()
    for row in sorted(rows, key=lambda r: r["question_id"]):
        for c in row["claims"] or []:
            if c["verdict"] != "supported" and c["text"] in (row["answer"] or ""):
                return Flagged(run_id, row["question_id"], c["text"], c["verdict"], c["reason"])
    raise AssertionError(f"demo run {run_id} has no flagged claim in an answer")


def _write_hostile_run(results: Path, flagged: Flagged) -> None:
    """Copy the source run as XSS_RUN with the payload in one answer, its claim and reason."""
    folder = results / XSS_RUN
    shutil.copytree(results / XSS_SOURCE_RUN, folder)
    rows = pq.read_table(folder / "questions.parquet").to_pylist()
    hostile_claim = f"{flagged.claim} {XSS_PAYLOAD}"
    for row in rows:
        row["run_id"] = XSS_RUN
        if row["question_id"] != flagged.question_id:
            continue
        row["answer"] = row["answer"].replace(flagged.claim, hostile_claim)
        for c in row["claims"]:
            if c["text"] == flagged.claim:
                c["text"] = hostile_claim
                c["reason"] = f"{c['reason']} {XSS_PAYLOAD}"
    write_parquet(folder / "questions.parquet", rows_to_table(rows))
    manifest = json.loads((folder / MANIFEST).read_text())
    # Oldest of all, so "the latest run" stays the demo's latest.
    manifest.update(run_id=XSS_RUN, created_at="2026-11-01T08:00:00Z")
    manifest["finished_at"] = "2026-11-01T08:00:30Z"
    (folder / MANIFEST).write_text(json.dumps(manifest))


@pytest.fixture(scope="session")
def demo_results(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("e2e-demo") / "results"
    subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", "demo", "--results", str(out)],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    return out


@pytest.fixture(scope="session")
def flagged(demo_results) -> Flagged:
    return _first_flagged(demo_results, XSS_SOURCE_RUN)


@pytest.fixture(scope="session")
def hostile_results(demo_results, flagged, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("e2e-hostile") / "results"
    shutil.copytree(demo_results, out, ignore=shutil.ignore_patterns(".rageval"))
    _write_hostile_run(out, flagged)
    return out


def _serve(
    results: Path,
    log: Path,
    env: dict[str, str] | None = None,
    base: str = "",
    args: Sequence[str] = (),
) -> Iterator[Server]:
    """`rageval dashboard` on a free port; `base`: the URL path it is served under;
    `args`: more options of the command (`--read-only`, `--labels DIR`)."""
    port = _free_port()
    if base:
        env = {**(env or {}), "STREAMLIT_SERVER_BASE_URL_PATH": base}
    cmd = [sys.executable, "-m", "rageval_core.cli", "dashboard", "--results", str(results)]
    cmd += ["--port", str(port), "--host", "127.0.0.1", *args]
    with log.open("wb") as out:
        # started from a user's folder, not the repository: the command's own Streamlit
        # settings must hold without the repository's .streamlit/config.toml
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=results.parent,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        )
    url = f"http://127.0.0.1:{port}" + (f"/{base}" if base else "")
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"dashboard exited with {proc.returncode}:\n{log.read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"dashboard not healthy after {STARTUP_S} s:\n{log.read_text()}")
            time.sleep(0.2)
        yield Server(url, results, log, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def server(demo_results) -> Iterator[Server]:
    yield from _serve(demo_results, demo_results.parent / "dashboard.log")


@pytest.fixture(scope="session")
def prefixed_server(demo_results) -> Iterator[Server]:
    """The demo dashboard under a base URL path, as behind a reverse proxy (docs/deploy.md)."""
    yield from _serve(demo_results, demo_results.parent / "prefixed.log", base="team/rageval")


@pytest.fixture(scope="session")
def hostile_server(hostile_results) -> Iterator[Server]:
    yield from _serve(hostile_results, hostile_results.parent / "dashboard.log")


@pytest.fixture(scope="session", autouse=True)
def _render_timeout() -> None:
    """Playwright's `expect` waits as long as a first render can take on a busy machine."""
    from playwright.sync_api import expect

    expect.set_options(timeout=RENDER_MS)


@dataclass
class Watch:
    """What the page did behind the test's back: dialogs opened, uncaught JS errors."""

    dialogs: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)


@pytest.fixture
def watch() -> Watch:
    return Watch()


@pytest.fixture(scope="session")
def context(browser):
    """One context for the session: its HTTP cache keeps Streamlit's JS bundle loaded."""
    ctx = browser.new_context(viewport=VIEWPORT)
    ctx.set_default_timeout(RENDER_MS)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context, watch):
    pg = context.new_page()

    def on_dialog(dialog) -> None:
        watch.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    pg.on("dialog", on_dialog)
    pg.on("pageerror", lambda exc: watch.page_errors.append(str(exc)))
    yield pg
    pg.close()


CHARTS_DRAWN_JS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
  .every(c => { const svg = c.querySelector('.main-svg');
                return svg && svg.getBoundingClientRect().width > 0
                       && c.querySelector('.draglayer, .pielayer'); })"""


CONTENT_HEIGHT_JS = """() => Math.max(...['[data-testid="stMain"]',
  '[data-testid="stMainBlockContainer"]'].map(s => document.querySelector(s))
  .filter(Boolean).map(e => e.scrollHeight))"""


def screenshot(pg, name: str, folder: Path = SCREENSHOTS, width: int = 0) -> Path | None:
    """Full-page PNG of the current view when RAGEVAL_SCREENSHOTS=1, else nothing;
    `width` other than the viewport's for a look at a wide screen (into `folder`).

    Streamlit scrolls inside its main container, so the viewport is grown to the
    content's height first (a plain full_page shot would stop at the fold).
    """
    if os.environ.get("RAGEVAL_SCREENSHOTS") != "1":
        return None
    width = width or VIEWPORT["width"]
    if width != VIEWPORT["width"]:
        pg.set_viewport_size({"width": width, "height": VIEWPORT["height"]})
        pg.wait_for_timeout(800)
    # Plotly and the grids re-layout to the new size, and the page may grow as they do: a
    # loaded machine needs more than a fixed pause before every chart has drawn again (a
    # blank chart, or a page cut above its last chart, was shot otherwise).
    height = 0
    for _ in range(3):
        grown = pg.evaluate(CONTENT_HEIGHT_JS)
        if grown <= height:
            break
        height = grown
        pg.set_viewport_size({"width": width, "height": int(height) + 40})
        pg.wait_for_timeout(800)
        pg.wait_for_function(CHARTS_DRAWN_JS, timeout=30_000)
        pg.wait_for_timeout(400)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    pg.screenshot(path=str(path), full_page=True)
    pg.set_viewport_size(VIEWPORT)
    return path
