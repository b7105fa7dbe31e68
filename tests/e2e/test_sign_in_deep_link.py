"""A deep link opened before signing in lands on its view after the password, in a real
browser: the page in the address and its query parameters survive the sign-in form."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow.parquet as pq
import pytest
from playwright.sync_api import Page, expect

from rageval_core.passwords import hash_password
from tests.e2e.browser import params_of, url, wait_rendered
from tests.e2e.conftest import Server, _serve

pytestmark = pytest.mark.e2e

PASSWORD = "deep link password"


@pytest.fixture(scope="module")
def gated_server(demo_results) -> Iterator[Server]:
    env = {"RAGEVAL_PASSWORD_HASH": hash_password(PASSWORD, iterations=100_000)}
    yield from _serve(demo_results, demo_results.parent / "gated-dashboard.log", env)


def test_a_deep_link_opens_its_view_after_signing_in(page: Page, gated_server: Server):
    runs = sorted(p.name for p in gated_server.results.iterdir() if not p.name.startswith("."))
    run = runs[-1]
    qids = pq.read_table(gated_server.results / run / "questions.parquet").column("question_id")
    qid = qids[3].as_py()
    page.goto(url(gated_server, "question", run=run, question=qid))
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    wait_rendered(page, "Question")
    assert page.url.startswith(f"{gated_server.url}/question?")
    params = params_of(page)
    assert params["run"] == [run] and params["question"] == [qid]
    expect(page.get_by_text(qid).first).to_be_visible()
