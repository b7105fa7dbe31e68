"""The daily loop in a real browser (issue 14): `rageval run` ends with a link; opening it
lands on that run's Diagnose view; a flaky question is marked; Compare shows what changed
in its answer.

The results are the demo runs plus more runs of `bm25-top5` in which q001 flips
(tests/daily_loop.py); the run under test is a real `rageval run` of the example config,
made after the dashboard server started, with RAGEVAL_DASHBOARD_URL naming that server.
`RAGEVAL_SCREENSHOTS=1` also writes docs/screenshots/run-terminal.png: the end of the
run's terminal output, rendered as HTML and shot with chromium.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.daily_loop import FlakySeries, add_flaky_series
from tests.e2e.browser import params_of, url, wait_rendered
from tests.e2e.conftest import ROOT, SCREENSHOTS, Server, Watch, _serve

pytestmark = pytest.mark.e2e

CONFIG = ROOT / "rageval_core" / "example" / "configs" / "bm25-top5.yaml"


@pytest.fixture(scope="module")
def loop(demo_results, tmp_path_factory) -> Iterator[tuple[Server, FlakySeries]]:
    out = tmp_path_factory.mktemp("e2e-loop") / "results"
    shutil.copytree(demo_results, out, ignore=shutil.ignore_patterns(".rageval"))
    series = add_flaky_series(out)
    yield from ((s, series) for s in _serve(out, out.parent / "dashboard.log"))


@pytest.fixture(scope="module")
def ran(loop) -> tuple[str, str]:
    """(stdout of `rageval run`, the run id it wrote)."""
    server, _ = loop
    done = subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", "run", str(CONFIG)]
        + ["--results", server.results.name, "--no-progress"],
        capture_output=True,
        text=True,
        cwd=server.results.parent,  # prints `results/<run id>`, as a user sees it
        env={**os.environ, "RAGEVAL_DASHBOARD_URL": server.url},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    run_id = re.search(r"^complete: (\S+) — ", done.stdout, re.M)[1]
    return done.stdout, run_id


def test_the_link_rageval_run_prints_opens_that_runs_diagnose(loop, ran, page, watch: Watch):
    server, series = loop
    out, run_id = ran
    assert f"{run_id}: 99 questions (vs {series.broken_run})" in out
    # each figure says how many questions it covers (recall: the answerable ones)
    assert re.search(r"recall@5\s+0\.814 \(86 of 99 questions\)\s+= same", out), out
    assert "failures: missed refusal 4, false refusal 31, incorrect 13, ok 51" in out
    link = re.search(r"^  open: (\S+)$", out, re.M)[1]
    assert link == f"{server.url}/diagnose?run={run_id}"
    page.goto(link)
    wait_rendered(page, "Diagnose", charts=1, grids=1)
    assert params_of(page)["run"] == [run_id]
    expect(page.get_by_role("combobox", name="Run")).to_have_value(run_id)
    heading = "48 of 99 questions failed: 31 false refusal, 13 incorrect, 4 missed refusal."
    expect(page.get_by_role("heading", name=heading)).to_be_visible()
    assert not watch.page_errors
    _terminal_screenshot(page, out.replace(server.url, "http://127.0.0.1:8501"))


def test_the_flaky_question_is_marked_and_compare_shows_the_answer_diff(
    loop, ran, page, watch: Watch
):
    server, s = loop
    _, run_id = ran
    page.goto(url(server, "question", run=run_id, question=s.question))
    wait_rendered(page, "Question")
    # q001 in the series: ok, wrong, ok, wrong, and ok again in the new run
    expect(page.get_by_text("Flaky question: flipped 4× in 5 runs of bm25-top5")).to_be_visible()

    page.goto(
        url(server, "compare", runs=[s.ok_run, s.broken_run], baseline=s.ok_run, question="q001")
    )
    wait_rendered(page, "Compare", grids=1)
    expect(
        page.get_by_text("Known flaky question: flipped 2× in 3 runs of bm25-top5")
    ).to_be_visible()
    diff = page.locator(".st-key-compare_answer_diff")
    expect(diff).to_contain_text("dry-goods courier founded in")
    # the right answer's words struck through, the wrong one's shown as added
    removed = diff.get_by_role("deletion")
    expect(removed).to_have_text(
        ["refrigerated logistics company", "2009", "Ingrid Salvesen and", "Rotterdam."]
    )
    assert ":green-background[" not in diff.inner_text()  # drawn as colour, not as text
    assert not watch.page_errors and not watch.dialogs


def _terminal_screenshot(page, out: str) -> None:
    """The run's terminal end as an image for the README (RAGEVAL_SCREENSHOTS=1 only),
    with the test server's address shown as the default one."""
    if os.environ.get("RAGEVAL_SCREENSHOTS") != "1":
        return
    text = "$ rageval run bm25-top5.yaml\n" + out
    page.set_viewport_size({"width": 1600, "height": 600})
    page.set_content(
        "<body style='margin:0;background:#1e1e1e'><pre style='display:inline-block;"
        "margin:0;padding:18px 22px;"
        "font:15px/1.45 DejaVu Sans Mono,monospace;color:#d4d4d4;white-space:pre'>"
        f"{html.escape(text)}</pre></body>"
    )
    path: Path = SCREENSHOTS / "run-terminal.png"
    page.locator("pre").screenshot(path=str(path))
