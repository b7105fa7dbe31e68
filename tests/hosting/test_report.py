"""`rageval report`: one HTML file that renders offline, with model text shown as text."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rageval_core.catalogue import BUILTIN

CANDIDATE = "20261123-150000-verbose"
DRAWN = "'div.chart:has(.main-svg)'"  # a chart plotly has drawn
TYPES = "d => d.data.map(t => t.type || 'scatter')"
BASELINE = "20261119-090000-never-refuse"


def rageval(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=180,
    )


@pytest.fixture(scope="module")
def report(poisoned_results, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    done = rageval(
        "report",
        CANDIDATE,
        "--baseline",
        BASELINE,
        "--results",
        str(poisoned_results),
        "--out",
        str(out),
        cwd=out.parent,
    )
    assert done.returncode == 0, done.stderr
    assert out.name in done.stdout
    return out


def test_report_renders_offline_with_escaped_model_text(report, browser):
    context = browser.new_context()
    context.set_offline(True)
    requests: list[str] = []
    context.route("**/*", lambda route: (requests.append(route.request.url), route.abort()))
    page = context.new_page()
    page.route("file://**", lambda route: route.continue_())
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.as_uri())
    page.wait_for_selector(".main-svg", timeout=30_000)
    page.wait_for_timeout(500)

    # Charts: failures by type, failures per run, mean vs p10, distribution, recall gap,
    # recall@k, deltas.
    page.wait_for_function(f"document.querySelectorAll({DRAWN}).length === 7")
    assert page.locator(".js-plotly-plot").count() == 7
    assert page.locator(".main-svg").count() >= 12
    assert not errors, errors
    types = page.evaluate(f"[...document.querySelectorAll({DRAWN})].flatMap({TYPES})")
    known = page.evaluate("Object.keys(Plotly.PlotSchema.get().traces)")  # the bundle's
    assert set(types) <= set(known), set(types) - set(known)
    # the failure chart and its table in the summary's run order: baseline first
    assert page.locator("section#s0 table.num th").all_inner_texts()[1:3] == [BASELINE, CANDIDATE]
    failures = page.locator("section#s1 table tr td:first-child").all_inner_texts()
    assert failures[0] == BASELINE and failures[-1] == CANDIDATE
    shares = "document.querySelectorAll('section#s1 div.chart')[1].layout.xaxis.categoryarray"
    assert page.evaluate(shares) == [BASELINE, CANDIDATE]
    # Nothing fetched from anywhere but the file itself.
    assert not [u for u in requests if not u.startswith("file://")], requests
    # The payload ran nowhere and added no element, yet it is visible as text.
    assert page.evaluate("window.__xss === undefined")
    assert not dialogs
    assert page.locator("#xss-bold").count() == 0
    assert page.locator("img[src=x], svg[onload], a[href^='javascript']").count() == 0
    assert page.get_by_text('<b id="xss-bold">bold</b>', exact=False).count() > 0
    context.close()


def test_report_has_every_section(report):
    text = report.read_text()
    # about 100 questions and a baseline, attachable: the script is most of it (0.66 MB)
    assert ">99</td><td>99</td>" in text.replace("\n", "")
    assert report.stat().st_size < 1_000_000, report.stat().st_size
    for figure in ("span_recall_at_5", "span_precision_at_5", "span_iou_at_5"):
        assert f">{BUILTIN.label(figure)}</abbr>" in text  # every summary figure the run has
    for heading in (
        "Run",
        "Failures",
        "Tails",
        "Retrieval",
        "Worst questions",
        f"Compared with {BASELINE}",
        "Questions that regressed (Regressed: ",
        "ok → ",
        "95% interval",
        "judge&#x27;s reason",
        "Bottom 10%",
    ):
        assert heading in text, heading
    # plotly.js (gzipped) once, each chart's figure, the loader that draws them
    assert text.count("<script") == 1 + 7 + 1
    assert text.count('<script type="application/json" class="fig">') == 7
    assert "Failures by type" in text  # the Diagnose page's grouped chart, drawn here too
    # a file cannot link to a dashboard: each summary row's definition names where it is
    # written out, and no help link is left in
    titles = re.findall(r'<abbr title="([^"]*)"', text)
    assert len(titles) >= 10
    assert all(re.search(r"\(docs/metrics\.md, &quot;[A-Z][^&]+&quot;\)$", t) for t in titles)
    assert any(t.endswith("(docs/metrics.md, &quot;Per run&quot;)") for t in titles)
    assert "[Definition](" not in text and "rageval/blob" not in text
    # Nothing loaded from elsewhere (plotly.js mentions its CDN in its source; never fetched).
    assert "<script src" not in text and "<link" not in text and "<img" not in text


def test_report_without_baseline_and_latest(demo_results, tmp_path):
    single = tmp_path / "single.html"
    done = rageval(
        "report", CANDIDATE, "--results", str(demo_results), "--out", str(single), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "Compared with" not in single.read_text()
    latest = tmp_path / "latest.html"
    done = rageval(
        "report",
        CANDIDATE,
        "--baseline",
        "latest-any",  # the demo runs are each of its own config: `latest` finds none
        "--results",
        str(demo_results),
        "--out",
        str(latest),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "Compared with" in latest.read_text()


@pytest.mark.parametrize(
    "args",
    [
        ["no-such-run"],
        ["../etc"],
        [CANDIDATE, "--baseline", "../../x"],
        [CANDIDATE, "--worst", "-1"],
    ],
)
def test_report_user_mistakes_are_one_line(demo_results, tmp_path, args, capsys):
    from rageval_core.cli import main

    out = tmp_path / "r.html"
    code = main(["report", *args, "--results", str(demo_results), "--out", str(out)])
    err = capsys.readouterr().err
    assert code in (1, 2)
    assert len(err.strip().splitlines()) == 1, err
    assert not out.exists()
