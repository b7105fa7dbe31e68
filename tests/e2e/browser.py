"""What the browser tests share: the demo's run ids, the selectors that say a page has
drawn, addresses of views, waiting for a page to finish, the page cases every page
test opens, a private server with its own labels and signing in as a reviewer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

from playwright.sync_api import Page, expect

from dashboard.pages import PAGES
from rageval_core.demo import DEMO_RUNS, demo_run_id
from rageval_core.labels import LABELS_ENV, READ_ONLY_ENV
from rageval_core.links import DEFAULT_PAGE
from tests.e2e.conftest import Server, _serve

RUN_IDS = [demo_run_id(d) for d in DEMO_RUNS]  # oldest first
LATEST, OLDEST = RUN_IDS[-1], RUN_IDS[0]

CHART = '[data-testid="stPlotlyChart"]'
DRAWN_CHART = f"{CHART}:has(.main-svg)"
GRID = '[data-testid="stDataFrame"]'
DRAWN_GRID = f"{GRID}:has(canvas)"
EXCEPTION = '[data-testid="stException"]'
ERROR = '[data-testid="stAlertContentError"]'
# Streamlit's own end-of-run mark (its e2e suite waits on it); the running indicator is not
# one: it appears only some time after a run starts, so a page can look idle mid-run.
RUN_DONE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def url(server: Server, page: str, **params: str | list[str]) -> str:
    path = "" if page == DEFAULT_PAGE else PAGES[page].url_path
    query = urlencode(params, doseq=True)
    return f"{server.url}/{path}" + (f"?{query}" if query else "")


def params_of(pg: Page) -> dict[str, list[str]]:
    return parse_qs(urlparse(pg.url).query)


def wait_rendered(pg: Page, title: str, *, charts: int = 0, grids: int = 0) -> None:
    """Wait until the page titled `title` finished its run with `charts` plotly charts and
    `grids` dataframes drawn (at least), then check it raised nothing."""
    expect(pg.get_by_role("heading", name=title, level=1, exact=True)).to_be_visible()
    expect(pg.locator(RUN_DONE)).to_be_visible()
    if charts:
        expect(pg.locator(DRAWN_CHART).nth(charts - 1)).to_be_visible()
    if grids:
        expect(pg.locator(DRAWN_GRID).nth(grids - 1)).to_be_visible()
    expect(pg.locator('[data-stale="true"]')).to_have_count(0)
    expect(pg.locator(EXCEPTION)).to_have_count(0)


def open_view(pg: Page, address: str, title: str, **expected: int) -> None:
    pg.goto(address)
    wait_rendered(pg, title, **expected)


def main_text(pg: Page) -> str:
    return pg.locator('[data-testid="stMain"]').inner_text()


@dataclass(frozen=True)
class PageCase:
    key: str
    params: dict[str, str]
    charts: int  # exactly this many plotly charts on the demo runs
    grids: int  # at least this many dataframes
    texts: tuple[str, ...]  # what the page must say about the demo runs


PAGE_CASES = [
    PageCase("runs", {}, 2, 1, (f"Latest run: {LATEST}", "All runs (9)")),
    PageCase("diagnose", {}, 1, 1, ("of 99 questions failed", "matching")),
    PageCase("tails", {}, 2, 1, (f"Bottom 10% of {LATEST} on correctness",)),
    # Opens on the run with the widest recall@5-vs-@20 gap (bm25-top20), where a reranker helps.
    PageCase("retrieval", {}, 5, 1, (f"Rerank candidates in {RUN_IDS[1]}", "A reranker can fix")),
    PageCase("cost", {}, 3, 1, ("A run is dominated when",)),
    PageCase("compare", {}, 1, 2, ("Config differences", "Metric changes against the baseline")),
    # Filled in by the test: the demo question with a flagged claim, the view worth showing.
    PageCase("question", {}, 2, 1, ("Answer", "This question across runs")),
]


@contextmanager
def serving(results: Path, labels: Path | str, *, read_only: bool = False) -> Iterator[Server]:
    # No file watcher: a source file changed under the server (other work in the same
    # checkout) would leave "Source file changed" in the status widget the test waits on.
    env = {
        LABELS_ENV: str(labels),
        READ_ONLY_ENV: "1" if read_only else "",
        "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none",
    }
    log = results.parent / f"dashboard-{len(list(results.parent.glob('dashboard-*')))}.log"
    servers = _serve(results, log, env)
    try:
        yield next(servers)
    finally:
        servers.close()  # terminates the server


def sign_in_as(pg: Page, name: str) -> None:
    pg.get_by_label("Your name, saved with each label you give").fill(name)
    pg.get_by_role("button", name="Start labelling").click()
    expect(pg.get_by_text(f"Labelling as {name}.")).to_be_visible()
