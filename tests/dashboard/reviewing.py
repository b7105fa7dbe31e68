"""The Review and Question pages' labelling, as the tests drive it: open a page with URL
parameters, sign in as a reviewer, press buttons, read the label files back."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard.pages import PAGES
from rageval_core.labels import HumanLabel, utc_stamp
from rageval_core.runs.reading import inspect_run
from tests.dashboard.conftest import LATEST

QUESTION = "q001"  # in the latest demo run: claim 1 supported, claim 2 unsupported


def no_exception(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest, *kinds: str) -> str:
    kinds = kinds or ("markdown", "caption", "subheader", "header", "info", "warning", "error")
    return "\n".join(str(e.value) for k in kinds for e in at.get(k))


def button(at: AppTest, label: str, index: int = 0):
    found = [b for b in at.button if b.label == label]
    assert len(found) > index, (label, [b.label for b in at.button])
    return found[index]


def label_files(labels: Path) -> list[Path]:
    return sorted(labels.rglob("*.jsonl")) if labels.exists() else []


def read_labels(labels: Path) -> list[dict]:
    return [json.loads(line) for f in label_files(labels) for line in f.read_text().splitlines()]


def open_page(app, results: Path, page: str, **params: str) -> AppTest:
    """`page` opened with `params` in its URL (after the first run, which is the default
    page's and writes that page's own state into the URL)."""
    at = app(results)
    no_exception(at.run())
    at.query_params.clear()
    at.query_params.update(params)
    return no_exception(at.switch_page(PAGES[page].path).run())


def open_question(app, results: Path, run: str = LATEST, question: str = QUESTION) -> AppTest:
    return open_page(app, results, "question", run=run, question=question)


def sign(at: AppTest, name: str = "Ann Reviewer") -> AppTest:
    at.text_input(key="label_reviewer_name").input(name)
    return no_exception(button(at, "Start labelling").click().run())


def dataset_of(results: Path, run: str = LATEST):
    return inspect_run(str(results), run).manifest.dataset


def human(results: Path, claim: str | None, value: str, reviewer: str, **kw) -> HumanLabel:
    """A label of `claim` (None: of the whole answer) of QUESTION, as a reviewer gives it."""
    ds = dataset_of(results)
    verdict, question_label = (value, None) if claim is not None else (None, value)
    kw.setdefault("created_at", utc_stamp())
    return HumanLabel(ds.name, ds.sha256, QUESTION, claim, verdict, question_label, reviewer, **kw)
