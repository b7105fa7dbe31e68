"""`rageval report` opened as a reader opens an attachment: a file in chromium with no
network. Every chart is drawn by the gzipped plotly.js the page carries, with no error,
for a run of about 100 questions and its baseline in under 1 MB; the failure chart and its
table follow the summary's run order (baseline first)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from playwright.sync_api import Page

from rageval_core.catalogue import BUILTIN
from tests.e2e.browser import LATEST, RUN_IDS

pytestmark = pytest.mark.e2e

BASELINE = RUN_IDS[-2]
CHARTS = "'div.chart:has(.main-svg)'"  # a chart plotly has drawn
TYPES = "d => d.data.map(t => t.type || 'scatter')"


@pytest.fixture(scope="module")
def report(demo_results, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", "report", LATEST, "--baseline", BASELINE]
        + ["--results", str(demo_results), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    return out


def test_the_report_of_a_hundred_questions_is_under_a_megabyte(report):
    text = report.read_text()
    questions = BUILTIN.label("n_questions")
    assert f">{questions}</abbr></td><td>99</td><td>99</td>" in text.replace("\n", "")
    assert report.stat().st_size < 1_000_000, report.stat().st_size
    for figure in ("span_recall_at_5", "span_precision_at_5", "span_iou_at_5"):
        assert f">{BUILTIN.label(figure)}</abbr>" in text  # every summary figure the run has


def test_every_chart_draws_offline_with_no_error(page: Page, report):
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else 0)
    page.route(
        "**/*", lambda r: r.abort() if not r.request.url.startswith("file:") else r.continue_()
    )
    page.goto(report.as_uri())
    n = page.locator("script.fig").count()
    assert n >= 6
    page.wait_for_function(f"[...document.querySelectorAll({CHARTS})].length === {n}")
    types = page.evaluate(f"[...document.querySelectorAll({CHARTS})].flatMap({TYPES})")
    known = page.evaluate("Object.keys(Plotly.PlotSchema.get().traces)")
    assert set(types) <= set(known), set(types) - set(known)
    assert errors == []


def test_the_failure_chart_and_table_follow_the_summary_order(page: Page, report):
    page.goto(report.as_uri())
    header = page.locator("section#s0 table.num th").all_inner_texts()
    assert header[1:3] == [BASELINE, LATEST]
    failures = page.locator("section#s1 table tr td:first-child").all_inner_texts()
    assert failures[0] == BASELINE and failures[-1] == LATEST
    page.wait_for_function("document.querySelectorAll('section#s1 div.chart')[1].data")
    order = page.evaluate(
        "document.querySelectorAll('section#s1 div.chart')[1].layout.xaxis.categoryarray"
    )
    assert list(order) == [BASELINE, LATEST]
