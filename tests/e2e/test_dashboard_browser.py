"""The dashboard in a real browser: every page draws, deep links open the right view, model
output stays text, and a newcomer reaches the reason behind the worst answer in two clicks.

Run: `.venv/bin/python -m pytest tests/e2e -q` (add RAGEVAL_SCREENSHOTS=1 to refresh
docs/screenshots/). Fixtures are in conftest.py.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from dashboard.pages import PAGES
from tests.e2e.browser import (
    DRAWN_CHART,
    DRAWN_GRID,
    ERROR,
    LATEST,
    OLDEST,
    PAGE_CASES,
    PageCase,
    main_text,
    open_view,
    params_of,
    url,
    wait_rendered,
)
from tests.e2e.conftest import XSS_PAYLOAD, XSS_RUN, Flagged, Server, Watch, screenshot

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("case", PAGE_CASES, ids=[c.key for c in PAGE_CASES])
def test_every_page_draws_without_errors(
    page: Page, server: Server, watch: Watch, flagged: Flagged, case: PageCase
):
    params = case.params
    if case.key == "question":
        params = {"run": flagged.run_id, "question": flagged.question_id}
    title = PAGES[case.key].title
    open_view(page, url(server, case.key, **params), title, charts=case.charts, grids=case.grids)

    expect(page.locator(DRAWN_CHART)).to_have_count(case.charts)
    expect(page.locator(ERROR)).to_have_count(0)
    text = main_text(page)
    for expected in case.texts:
        assert expected in text
    # Every page writes its view into the URL, so the address bar is a shareable link.
    assert params_of(page), f"{case.key} left no view state in the URL: {page.url}"
    assert watch.page_errors == [] and watch.dialogs == []
    screenshot(page, case.key)

    # The copy-link control's address opens this same view in a fresh load.
    page.get_by_role("button", name="Copy link").click()
    link = page.locator('[data-testid="stPopoverBody"] [data-testid="stCode"]').inner_text()
    before = params_of(page)
    open_view(page, f"{server.url}/{link.strip()}", title, charts=case.charts)
    expect(page.get_by_role("dialog")).to_have_count(0)  # no "Page not found"
    assert params_of(page) == before


def test_question_deep_link_marks_the_flagged_claim_with_the_judges_reason(
    page: Page, server: Server, flagged: Flagged
):
    address = url(server, "question", run=flagged.run_id, question=flagged.question_id)
    open_view(page, address, "Question", charts=1)

    mark = page.locator(f"mark.rageval-{flagged.verdict}").filter(has_text=flagged.claim)
    expect(mark).to_have_count(1)
    expect(mark).to_have_attribute("title", f"{flagged.verdict}: {flagged.reason}")
    # The claim list spells the same verdict out, expanded, with the reason in full.
    claim = page.locator('[data-testid="stExpander"]').filter(has_text=flagged.claim).first
    expect(claim.locator("details")).to_have_attribute("open", "")
    expect(claim).to_contain_text(f": {flagged.verdict}")
    expect(claim).to_contain_text("Judge's reason")
    expect(claim).to_contain_text(flagged.reason)
    assert params_of(page) == {"run": [flagged.run_id], "question": [flagged.question_id]}


def test_model_output_is_shown_as_text_never_run(
    page: Page, hostile_server: Server, watch: Watch, flagged: Flagged
):
    address = url(hostile_server, "question", run=XSS_RUN, question=flagged.question_id)
    open_view(page, address, "Question", charts=1)

    # The payload is in the answer (inside the flagged claim's mark), the claim and the
    # reason: each shows as the literal text, and none of it ran.
    mark = page.locator("mark.rageval-unsupported, mark.rageval-contradicted")
    expect(mark.filter(has_text=XSS_PAYLOAD)).to_have_count(1)
    assert main_text(page).count(XSS_PAYLOAD) >= 3
    assert page.evaluate("typeof window.__xss") == "undefined"
    main = page.locator('[data-testid="stMain"]')
    expect(main.locator('img[src="x"]')).to_have_count(0)
    assert main.evaluate("m => [...m.querySelectorAll('script')].length") == 0
    assert watch.dialogs == []
    assert watch.page_errors == []


def test_a_link_to_an_unknown_run_says_so(page: Page, server: Server, watch: Watch):
    missing = "20991231-000000-no-such-run"
    open_view(page, url(server, "question", run=missing, question="q001"), "Question")

    expect(page.locator(ERROR)).to_contain_text(f"Run '{missing}' not found")
    expect(page.get_by_role("link", name="Back to all runs")).to_be_visible()
    assert watch.page_errors == []


def test_a_link_to_an_unknown_question_says_so(page: Page, server: Server):
    open_view(page, url(server, "question", run=LATEST, question="q99999"), "Question")

    expect(page.locator(ERROR)).to_contain_text(f"Question 'q99999' not found in run '{LATEST}'")
    expect(page.get_by_role("link", name="Back to the run's questions")).to_be_visible()


def test_a_malformed_run_id_is_refused_not_followed(page: Page, server: Server):
    open_view(page, url(server, "diagnose", run="../../etc"), "Diagnose", charts=1)

    expect(page.locator(ERROR)).to_contain_text("not a valid run id")
    # The page falls back to the newest run instead of reading outside the results.
    assert params_of(page)["run"] == [LATEST]


def test_newcomer_reaches_the_worst_answers_unsupported_claim_in_two_clicks(
    page: Page, server: Server
):
    open_view(page, server.url, "Runs", charts=2, grids=1)

    # Click 1: from the overview to the latest run's failures.
    page.get_by_role("button", name="Diagnose latest run").click()
    wait_rendered(page, "Diagnose", charts=1, grids=1)
    assert params_of(page)["run"] == [LATEST]
    assert "Questions 1–50 of 99 matching" in main_text(page)
    worst = page.get_by_role("combobox", name="Question on this page").input_value()
    assert worst  # the page's own default pick: the first row, the worst question

    # Click 2: the first row of the worst-first table opens that question.
    select_first_row(page)
    wait_rendered(page, "Question", charts=1)
    assert params_of(page) == {"run": [LATEST], "question": [worst]}

    flagged = page.locator("mark.rageval-unsupported, mark.rageval-contradicted")
    expect(flagged.first).to_be_visible()
    reason = flagged.first.get_attribute("title")
    assert re.match(r"(unsupported|contradicted): \S", reason or ""), reason
    claim = page.locator('[data-testid="stExpander"]').filter(has_text=flagged.first.inner_text())
    expect(claim.first).to_contain_text(reason.split(": ", 1)[1])


def test_sidebar_links_carry_the_run_to_the_next_page(page: Page, server: Server):
    open_view(page, url(server, "diagnose", run=OLDEST), "Diagnose", charts=1)

    page.locator('[data-testid="stSidebar"]').get_by_role("link", name="Tails").click()
    wait_rendered(page, "Tails", charts=2)
    assert params_of(page)["run"] == [OLDEST]
    assert f"Bottom 10% of {OLDEST}" in main_text(page)


def select_first_row(pg: Page) -> None:
    """Tick the first data row of the first grid (a canvas: click its row marker)."""
    grid = pg.locator(DRAWN_GRID).first
    grid.scroll_into_view_if_needed()
    box = grid.locator("canvas").first.bounding_box()
    assert box is not None
    row_height = 35  # Streamlit's default grid row height, header included
    pg.mouse.click(box["x"] + 12, box["y"] + row_height * 1.5)


def test_diagnose_table_fits_1280_px_without_scrolling(page: Page, server: Server):
    """The columns a failing question is opened for, readable at 1280 px: the table was
    cut at 'answer correctn…', faithfulness and unsupported claims out of sight."""
    assert page.viewport_size == {"width": 1280, "height": 900}
    open_view(page, url(server, "diagnose", run=LATEST), "Diagnose", charts=1, grids=1)
    table = page.locator(DRAWN_GRID).last
    sizes = table.locator(".dvn-scroller").evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert sizes[0] <= sizes[1] + 1, sizes


def test_question_page_names_chunks_and_zooms_the_gold_document(page: Page, server: Server):
    """Chunks are headed by their document and character range, the id kept inside to
    copy; the gold document's chart shows the region around its spans, not 0–length."""
    open_view(page, url(server, "question", run=LATEST, question="q011"), "Question", charts=2)
    summaries = page.locator('[data-testid="stExpander"] summary').all_inner_texts()
    headings = [s.split("\n\n")[-1] for s in summaries]  # after the icon's name
    chunks = [h for h in headings if h.startswith("#")]
    assert chunks and all(re.search(r" · [a-z@0-9-]+ \d[\d,]*–\d[\d,]* · score", h) for h in chunks)
    assert not [h for h in chunks if "#" in h[1:].split(" · score")[0]], chunks  # no chunk id
    expect(
        page.locator('[data-testid="stCode"]').filter(has_text="incident-handling#")
    ).not_to_have_count(0)

    # incident-handling is 1,900 characters; q011's gold span is 626–934
    ranges = page.evaluate(
        """() => [...document.querySelectorAll('.js-plotly-plot')]
             .filter(e => (e._fullLayout?.title?.text || '').includes('incident-handling'))
             .map(e => e._fullLayout.xaxis.range)"""
    )
    assert len(ranges) == 1, ranges
    low, high = ranges[0]
    assert low <= 626 and high >= 934  # the span is in view
    assert high - low < 1_900  # zoomed: not the whole document


def test_compare_draws_a_tab_or_expanders_table_when_it_is_opened(page: Page, server: Server):
    """Compare's question tables are drawn only for the open tab and the open expander
    (each table went to the browser on every visit, shown or not): a click draws one."""
    open_view(page, url(server, "compare"), "Compare", charts=1, grids=3)
    improved = page.locator(".st-key-compare_questions_improvement")
    expect(page.locator(".st-key-compare_questions_regression " + DRAWN_GRID)).to_be_visible()
    expect(improved).to_have_count(0)

    page.get_by_role("tab", name=re.compile(r"^Improved questions \(\d+\)$")).click()
    expect(improved.locator(DRAWN_GRID)).to_be_visible()
    expect(page.locator(".st-key-compare_questions_regression")).to_have_count(0)

    every = page.locator(".st-key-compare_regressions")
    expect(every).to_have_count(0)
    page.get_by_text("All question × metric changes").click()
    every.scroll_into_view_if_needed()
    expect(every.locator(DRAWN_GRID)).to_be_visible()
    expect(page.locator('[data-stale="true"]')).to_have_count(0)
