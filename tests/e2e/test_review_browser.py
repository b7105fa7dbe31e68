"""Human review in a real browser against real `rageval dashboard` servers: labels given
on the Question page survive a reload, a page change and a server restart; the Judge
page's kappa moves with them and equals `rageval calibrate` on the same labels; two
people labelling one question at once both keep their labels; a read-only server shows
labels and offers no way to write one.

Each test serves its own copy of the demo runs with its own labels folder, so the
session's shared servers stay unlabelled. Fixtures are in conftest.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.browser import (
    DRAWN_CHART,
    EXCEPTION,
    LATEST,
    serving,
    sign_in_as,
    url,
    wait_rendered,
)
from tests.e2e.conftest import ROOT, VIEWPORT, Server, screenshot
from tests.hosting.conftest import bucket, s3_endpoint  # noqa: F401 (fixtures)

pytestmark = pytest.mark.e2e

QUESTION = "q001"  # in the latest demo run: claim 1 supported, claim 2 unsupported
KAPPA = "Cohen's kappa"


@pytest.fixture
def site(demo_results, tmp_path) -> tuple[Path, Path]:
    """(results, labels): a private copy of the demo runs and an empty labels folder."""
    results = tmp_path / "results"
    shutil.copytree(demo_results, results, ignore=shutil.ignore_patterns(".rageval"))
    return results, tmp_path / "labels"


def open_question(pg: Page, server: Server) -> None:
    pg.goto(url(server, "question", run=LATEST, question=QUESTION))
    wait_rendered(pg, "Question")


def claim(pg: Page, n: int) -> Locator:
    return pg.locator('[data-testid="stExpander"]').filter(has_text=re.compile(rf"Claim {n}: "))


def choose(scope: Locator, option: str) -> None:
    scope.locator('[data-testid="stRadio"] label').filter(
        has_text=re.compile(rf"^{option}$")
    ).click()


def held(scope: Locator, option: str) -> None:
    """`option` still chosen in `scope` before its Save: under load a late rerun redrew a
    form and a click made before it was lost (the default was saved, in full CI runs)."""
    picked = scope.get_by_role("radio", name=option, exact=True)
    if not picked.is_checked():
        choose(scope, option)
    expect(picked).to_be_checked()


def label_claim(pg: Page, n: int, option: str, note: str = "") -> None:
    box = claim(pg, n)
    if (
        box.locator('[data-testid="stForm"]').count() == 0
        or not box.locator('[data-testid="stForm"]').is_visible()
    ):
        box.locator("summary").click()  # supported claims start collapsed
    choose(box, option)
    if note:
        box.get_by_label("Note (optional)").fill(note)
    held(claim(pg, n), option)
    claim(pg, n).get_by_role("button", name="Save claim label").click()


def label_question(pg: Page, option: str) -> None:
    form = pg.locator('[data-testid="stForm"]').filter(has_text="The answer as a whole")
    choose(form, option)
    held(form, option)
    form.get_by_role("button", name="Save question label").click()


def expect_labels(pg: Page) -> None:
    """The labels the first test gives, as the Question page shows them."""
    expect(claim(pg, 1)).to_contain_text("Claim 1: supported · people: supported")
    expect(claim(pg, 2)).to_contain_text("Claim 2: unsupported · people: contradicted")
    main = pg.locator('[data-testid="stMain"]')
    expect(main).to_contain_text("Ann Reviewer: fail")
    expect(pg.locator(EXCEPTION)).to_have_count(0)


def judge_kappa(pg: Page, server: Server) -> str:
    """The claims kappa the Judge page shows for the latest run's judge (first section)."""
    pg.goto(url(server, "judge"))
    wait_rendered(pg, "Judge")
    row = pg.locator('[data-testid="stTable"] tr').filter(has_text=KAPPA).first
    return row.locator("td").first.inner_text().strip()  # the claims column


def calibrate_kappa(results: Path, labels: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", "calibrate", "--run", LATEST]
        + ["--results", str(results), "--labels", str(labels)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    claims = out.split("Questions")[0]
    found = re.search(r"kappa\s+(-?[0-9.]+|n/a)", claims)
    assert found, out
    return found.group(1)


def test_labels_survive_reload_page_change_and_restart_and_move_the_judges_kappa(page: Page, site):
    results, labels = site
    with serving(results, labels) as server:
        assert judge_kappa(page, server) == "–"  # no labels yet
        open_question(page, server)
        sign_in_as(page, "Ann Reviewer")
        label_claim(page, 2, "contradicted", "the chunk says the opposite")
        expect(claim(page, 2)).to_contain_text("people: contradicted")
        label_claim(page, 1, "judge is right")
        expect(claim(page, 1)).to_contain_text("people: supported")
        label_question(page, "fail")
        expect_labels(page)
        assert len(list(labels.rglob("*.jsonl"))) == 3  # one new file per save

        page.reload()
        wait_rendered(page, "Question")
        expect_labels(page)

        page.get_by_role("link", name="Runs").first.click()  # the sidebar
        wait_rendered(page, "Runs")
        open_question(page, server)
        expect_labels(page)
        after = judge_kappa(page, server)

    with serving(results, labels) as server:  # a new process: nothing held in memory
        open_question(page, server)
        expect_labels(page)
        screenshot(page, "question-labels")
        assert judge_kappa(page, server) == after
        expect(page.locator(DRAWN_CHART).first).to_be_visible()  # the confusion heatmap
        screenshot(page, "judge")
        # The Review queue: its progress, the question it opens on, the way to the rest.
        page.goto(url(server, "review", run=LATEST, size="10"))
        wait_rendered(page, "Review")
        expect(page.locator('[data-testid="stMain"]')).to_contain_text(" of 10 reviewed")
        page.get_by_role("button", name="Next").click()
        expect(page.get_by_role("heading", name=re.compile("^2 of 10: "))).to_be_visible()
        assert "pos=1" in page.url
        screenshot(page, "review")

    assert after != "–"
    assert after == f"{float(calibrate_kappa(results, labels)):.2f}"
    lines = [json.loads(x) for f in labels.rglob("*.jsonl") for x in f.read_text().splitlines()]
    assert {(d["claim"] is None, d["verdict"] or d["question_label"]) for d in lines} == {
        (False, "contradicted"),
        (False, "supported"),
        (True, "fail"),
    }


def test_two_people_labelling_one_question_at_once_both_keep_their_labels(browser, site):
    results, labels = site
    with serving(results, labels) as server:
        contexts = [browser.new_context(viewport=VIEWPORT) for _ in range(2)]
        try:
            ann, bo = (ctx.new_page() for ctx in contexts)
            for pg, name in ((ann, "Ann"), (bo, "Bo")):
                open_question(pg, server)
                sign_in_as(pg, name)
                # the sign-in's rerun drawn to its end before a form is touched: a choice
                # made while it still ran was lost in full-suite CI runs
                wait_rendered(pg, "Question")
            # Both forms filled, then both saved without waiting for either to finish.
            for pg, n in ((ann, 1), (bo, 2)):
                box = claim(pg, n)
                if not box.locator('[data-testid="stForm"]').is_visible():
                    box.locator("summary").click()
                choose(box, "contradicted")
            for pg, n in ((ann, 1), (bo, 2)):
                held(claim(pg, n), "contradicted")
                claim(pg, n).get_by_role("button", name="Save claim label").click()
            expect(claim(ann, 1)).to_contain_text("people: contradicted")
            expect(claim(bo, 2)).to_contain_text("people: contradicted")
            ann.reload()
            wait_rendered(ann, "Question")
            expect(claim(ann, 1)).to_contain_text("people: contradicted")
            expect(claim(ann, 2)).to_contain_text("people: contradicted")  # Bo's
        finally:
            for ctx in contexts:
                ctx.close()
    reviewers = sorted(p.parent.name for p in labels.rglob("*.jsonl"))
    assert reviewers == ["Ann", "Bo"]


def test_a_read_only_server_shows_labels_and_offers_no_way_to_write(page: Page, site):
    results, labels = site
    with serving(results, labels) as server:
        open_question(page, server)
        sign_in_as(page, "Ann Reviewer")
        label_question(page, "fail")
        expect(page.locator('[data-testid="stMain"]')).to_contain_text("Ann Reviewer: fail")
    with serving(results, labels, read_only=True) as server:
        for key, title in (("question", "Question"), ("review", "Review")):
            page.goto(url(server, key, run=LATEST, question=QUESTION))
            wait_rendered(page, title)
            main = page.locator('[data-testid="stMain"]')
            expect(main).to_contain_text("started read-only")
            if key == "question":
                expect(main).to_contain_text("Ann Reviewer: fail")
            expect(page.locator('[data-testid="stForm"]')).to_have_count(0)
            writes = page.get_by_role("button", name=re.compile("^(Save|Start labelling)"))
            expect(writes).to_have_count(0)
            expect(page.locator('[data-testid="stTextInput"]')).to_have_count(0)
    assert len(list(labels.rglob("*.jsonl"))) == 1


def test_labels_in_a_bucket_work_as_a_folder_does(page: Page, site, bucket):  # noqa: F811
    """The same save and reload with the labels location on S3 (moto on loopback): the
    server is told s3://bucket/labels and the AWS_* variables of the moto fixture."""
    import boto3

    results, _ = site
    labels = f"s3://{bucket}/labels"
    with serving(results, labels) as server:
        open_question(page, server)
        sign_in_as(page, "Ann Reviewer")
        label_claim(page, 2, "contradicted")
        expect(claim(page, 2)).to_contain_text("people: contradicted")
        page.reload()
        wait_rendered(page, "Question")
        expect(claim(page, 2)).to_contain_text("people: contradicted")
    keys = [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert len(keys) == 1 and keys[0].startswith("labels/") and "/Ann_Reviewer" in keys[0]
