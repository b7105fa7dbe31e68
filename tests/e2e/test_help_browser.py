"""Every figure explains itself, in a real browser: each page's metric tiles carry a help
tooltip with the catalogue's definition, and the server started from a user's folder shows
a product's toolbar (no Deploy button).

With RAGEVAL_SCREENSHOTS=1 the pages are also shot at 1920 px into the test's tmp folder
(printed), to look at the charts' legends on a wide screen; the 1280 px ones in
docs/screenshots come from test_dashboard_browser.py.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from dashboard.pages import PAGES
from tests.e2e.conftest import WIDE, Flagged, Server, screenshot
from tests.e2e.test_dashboard_browser import PAGE_CASES, open_view, url

pytestmark = pytest.mark.e2e

TILE = '[data-testid="stMetric"]'
TIP = '[data-testid="stTooltipHoverTarget"]'
TIP_TEXT = '[data-testid="stTooltipContent"]'


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
        tiles.nth(0).locator(TIP).hover()
        tip = page.locator(TIP_TEXT).first
        expect(tip).to_be_visible()
        assert "is better" in tip.inner_text(), tip.inner_text()
    assert page.get_by_role("button", name="Deploy").count() == 0
    screenshot(page, case.key, tmp_path_factory.getbasetemp() / "wide", width=WIDE)
