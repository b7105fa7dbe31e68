"""An imported run in a real browser: promptfoo's file (made by promptfoo itself, see
tests/fixtures/imports) imported beside the demo runs draws on Diagnose and Question with
no error, its declared metric on Tails, and Compare against a native run."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from dashboard.pages import PAGES
from rageval_core.dataset import example_dataset_path
from rageval_core.importers import import_run
from tests.core.importers.conftest import FILES
from tests.e2e.browser import ERROR, open_view, url
from tests.e2e.conftest import Server, Watch, _serve

pytestmark = pytest.mark.e2e

RUN = "20261201-000000-imported-promptfoo"  # newer than every demo run: the latest


@pytest.fixture(scope="module")
def imported_server(demo_results, tmp_path_factory) -> Iterator[Server]:
    out = tmp_path_factory.mktemp("e2e-imported") / "results"
    shutil.copytree(demo_results, out, ignore=shutil.ignore_patterns(".rageval"))
    import_run(
        "promptfoo",
        FILES["promptfoo"],
        results_dir=out,
        run_id=RUN,
        dataset=example_dataset_path(),
    )
    yield from _serve(out, out.parent / "dashboard.log")


@pytest.mark.parametrize(
    "page_key, params, expected",
    [
        # the 2 unanswerable get a failure type by the refusal rule too (docs/import.md)
        ("diagnose", {"run": RUN}, "10 questions"),
        ("tails", {"run": RUN, "metric": "correctness"}, "correctness"),
        ("question", {"run": RUN, "question": "q001"}, "q001 · ok"),
        ("compare", {}, "Config differences"),
    ],
)
def test_an_imported_run_draws_in_the_browser(
    page: Page, imported_server: Server, watch: Watch, page_key, params, expected
):
    if page_key == "compare":
        native = sorted(p.name for p in imported_server.results.iterdir() if p.name[0] != ".")
        params = {"runs": [native[-2], RUN], "baseline": native[-2]}
    open_view(page, url(imported_server, page_key, **params), PAGES[page_key].title)
    expect(page.locator(ERROR)).to_have_count(0)
    expect(page.locator('[data-testid="stMain"]')).to_contain_text(expected)
    assert watch.page_errors == [] and watch.dialogs == []
