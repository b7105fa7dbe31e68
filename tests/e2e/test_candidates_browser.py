"""The Candidates page in a real browser against a real `rageval dashboard`: a reviewer
accepts one candidate with the mouse, rejects one with its key, edits one (a shorter
quote) and writes the dataset version: the decisions are in the labels folder, the
version validates and `rageval run` scores it.
A candidate whose text carries an XSS payload is shown as text and runs nothing.

The batch is a real `rageval dataset generate` of the example documents, in the served
results location's `candidates/`; labels in a folder of the test's own.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from playwright.sync_api import Page, expect

from rageval_core.candidates import read_candidates
from rageval_core.candidates.decisions import DecisionStore
from rageval_core.dataset import load_dataset
from tests.e2e.browser import EXCEPTION, serving, sign_in_as, url, wait_rendered
from tests.e2e.conftest import ROOT, XSS_PAYLOAD, screenshot

pytestmark = pytest.mark.e2e

DOCUMENTS = ROOT / "rageval_core" / "example" / "documents.jsonl"
N = 6


def rageval(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
    )


@pytest.fixture
def site(demo_results, tmp_path) -> tuple[Path, Path, Path]:
    """(results, labels, batch): the demo runs with batch b1 in their candidates folder,
    its fourth candidate's question and check detail made hostile."""
    results = tmp_path / "results"
    shutil.copytree(demo_results, results, ignore=shutil.ignore_patterns(".rageval"))
    batch = results / "candidates" / "b1"
    made = rageval("dataset", "generate", "--documents", str(DOCUMENTS), "--out", str(batch),
                   "--n", str(N))  # fmt: skip
    assert made.returncode == 0, made.stderr
    rows = [json.loads(x) for x in (batch / "candidates.jsonl").read_text().splitlines()]
    rows[3]["question"] = f"What is {XSS_PAYLOAD}?"
    rows[3]["checks"][0]["detail"] = XSS_PAYLOAD
    (batch / "candidates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return results, tmp_path / "labels", batch


def at_candidate(pg: Page, n: int) -> None:
    expect(pg.get_by_role("heading", name=re.compile(rf"^{n} of {N}: "))).to_be_visible()
    wait_rendered(pg, "Candidates")


def test_accept_reject_edit_and_write_a_version_that_validates_and_scores(page: Page, site):
    results, labels, batch = site
    cands = read_candidates(batch / "candidates.jsonl")
    third = cands[2]
    shorter = third.quotes[0].text.rstrip(".")  # still stands once: a sentence less its stop
    with serving(results, labels) as server:
        page.goto(url(server, "candidates", batch="b1"))
        wait_rendered(page, "Candidates")
        at_candidate(page, 1)
        main = page.locator('[data-testid="stMain"]')
        expect(main).to_contain_text(f"0 of {N} decided")
        expect(page.locator("mark.rageval-gold").first).to_be_visible()  # the quote, drawn
        sign_in_as(page, "Ann Reviewer")
        wait_rendered(page, "Candidates")

        page.get_by_role("button", name="Accept").click()
        at_candidate(page, 2)
        assert "candidate=" + cands[1].id in page.url
        page.locator('[data-testid="stMain"] h3').first.click()  # focus off any field
        page.keyboard.press("x")  # Reject's shortcut
        at_candidate(page, 3)
        screenshot(page, "candidates")  # two decided, a candidate with a failed check

        page.get_by_text("Edit, then accept").click()
        form = page.locator('[data-testid="stForm"]')
        form.get_by_label("Question").fill("Which sentence says it?")
        form.get_by_label(re.compile("^Quote 1")).fill(shorter)
        form.get_by_role("button", name="Save edit").click()
        at_candidate(page, 4)
        expect(main).to_contain_text(f"3 of {N} decided")

        # the hostile fourth: its text shown as typed, nothing run
        expect(main).to_contain_text(f"What is {XSS_PAYLOAD}?")
        assert page.evaluate("window.__xss") is None
        expect(page.locator(EXCEPTION)).to_have_count(0)

        page.get_by_role("button", name="Write dataset version").click()
        expect(main).to_contain_text("question(s) added")
        wait_rendered(page, "Candidates")

    saved = DecisionStore(str(labels), "b1").latest()
    assert {k: d.action for k, d in saved.items()} == {
        cands[0].id: "accept",
        cands[1].id: "reject",
        third.id: "edit",
    }
    assert saved[third.id].question == "Which sentence says it?"
    assert [q.text for q in saved[third.id].quotes] == [shorter]

    [version] = (batch / "versions").iterdir()
    [dataset_file] = version.glob("*.yaml")
    checked = rageval("validate", str(dataset_file))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    by_id = {q.id: q for q in load_dataset(dataset_file).questions}
    assert set(by_id) == {cands[0].id, third.id}
    edited = by_id[third.id]
    assert edited.question == "Which sentence says it?"
    [span] = edited.gold_spans
    assert (span.doc_id, span.end - span.start) == (third.quotes[0].doc_id, len(shorter))

    config = version.parent / "run.yaml"
    config.write_text(
        f"name: accepted\ndataset: {dataset_file}\n"
        "pipeline:\n  factory: rageval_core.example.pipeline:build\n"
        "  params: {top_k: 5, source: documents, chunk_size: 40, offsets: true}\n"
        "judge: {kind: offline}\n"
    )
    out = results.parent / "scored"
    ran = rageval("run", str(config), "--results", str(out))
    assert ran.returncode == 0, ran.stderr
    [run] = [p for p in out.iterdir() if not p.name.startswith(".")]
    rows = pq.read_table(run / "questions.parquet").to_pylist()
    assert {r["question_id"] for r in rows} == set(by_id)
    assert all(r["error"] is None for r in rows)
    assert all(r["span_recall_at_5"] is not None for r in rows)
