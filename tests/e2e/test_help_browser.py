"""Every figure explains itself, in a real browser: each page's metric tiles carry a help
tooltip with the catalogue's definition whose link opens its section of the Definitions
page (also under a base URL path), and the server started from a user's folder shows a
product's toolbar (no Deploy button).

With RAGEVAL_SCREENSHOTS=1 the pages are also shot at 1920 px into the test's tmp folder
(printed), to look at the charts' legends on a wide screen; the 1280 px ones in
docs/screenshots come from test_dashboard_browser.py.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from dashboard.pages import PAGES
from rageval_core.catalogue import DEFINITIONS_PATH, SECTIONS
from tests.e2e.browser import PAGE_CASES, open_view, url, wait_rendered
from tests.e2e.conftest import WIDE, Flagged, Server, screenshot

pytestmark = pytest.mark.e2e

TILE = '[data-testid="stMetric"]'
TIP = '[data-testid="stTooltipHoverTarget"]'
TIP_TEXT = '[data-testid="stTooltipContent"]'
HOVERS = 5


def hover_until(target: Locator, shown: Locator) -> None:
    """Hover `target` until `shown` appears, moving away between tries: under load a page
    still drawing redrew the tile under the pointer and its tooltip never opened (a full
    CI run). The caller's own expectation on `shown` decides."""
    for _ in range(HOVERS):
        target.hover()
        try:
            expect(shown).to_be_visible(timeout=5_000)
            return
        except AssertionError:
            target.page.mouse.move(0, 0)


@pytest.mark.parametrize("case", PAGE_CASES, ids=[c.key for c in PAGE_CASES])
def test_every_metric_tile_has_a_help_tooltip(
    page: Page, server: Server, flagged: Flagged, case, tmp_path_factory
):
    params = case.params
    if case.key == "question":
        params = {"run": flagged.run_id, "question": flagged.question_id}
    title = PAGES[case.key].title
    open_view(page, url(server, case.key, **params), title, charts=case.charts, grids=case.grids)
    tiles = page.locator(TILE)
    n = tiles.count()
    if case.key in ("runs", "diagnose", "question"):
        assert n >= 3, f"{case.key}: expected metric tiles, found {n}"
    for i in range(n):
        tile = tiles.nth(i)
        expect(tile.locator(TIP), f"tile {tile.inner_text()!r} has no help").to_have_count(1)
    if n:
        tip = page.locator(TIP_TEXT).first
        hover_until(tiles.nth(0).locator(TIP), tip)
        expect(tip).to_be_visible()
        assert "is better" in tip.inner_text(), tip.inner_text()
    assert page.get_by_role("button", name="Deploy").count() == 0
    screenshot(page, case.key, tmp_path_factory.getbasetemp() / "wide", width=WIDE)


@pytest.mark.parametrize("where", ["server", "prefixed_server"])
def test_a_tiles_definition_link_opens_its_section(page: Page, request, where: str):
    """Hover a Runs tile, follow its "Definition" link: the Definitions page of the same
    dashboard opens scrolled to the section that defines the figure."""
    server = request.getfixturevalue(where)
    open_view(page, f"{server.url}/", PAGES["runs"].title)
    tip = page.locator(TILE).first.locator(TIP)
    expect(tip).to_be_visible()
    link = page.locator(TIP_TEXT).get_by_role("link", name="Definition")
    hover_until(tip, link)
    expect(link).to_have_attribute("href", re.compile(f"^{DEFINITIONS_PATH}#"))
    anchor = link.get_attribute("href").partition("#")[2]
    assert anchor in SECTIONS and anchor != next(iter(SECTIONS)), anchor
    with page.context.expect_page() as opened:  # Streamlit opens Markdown links in a tab
        link.click()
    tab = opened.value
    try:
        wait_rendered(tab, PAGES["definitions"].title)
        assert tab.url == f"{server.url}/{DEFINITIONS_PATH}#{anchor}"
        heading = tab.locator(f'[id="{anchor}"]')
        expect(heading).to_have_count(1)
        expect(heading).to_be_in_viewport()  # the deep link landed on the section
        # the page's own first section is out of view: the scroll was the link's doing
        expect(tab.locator(f'[id="{next(iter(SECTIONS))}"]')).not_to_be_in_viewport()
    finally:
        tab.close()
