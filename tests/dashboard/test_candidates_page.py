"""The Candidates page under AppTest, on a real batch `rageval dataset generate` wrote into
the demo results' `candidates/` and a real labels folder: the queue with each check and
quote, a reviewer before any action, decisions saved and read back, an edit's quote
verified, hostile candidate text escaped, bad deep links refused with a clear message,
progress, and the dataset version written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rageval_core.candidates import read_candidates
from rageval_core.candidates.decisions import DecisionStore
from rageval_core.cli import main
from rageval_core.dataset import load_dataset
from rageval_core.labels import READ_ONLY_ENV
from rageval_core.runs.layout import CANDIDATES_ENV
from tests.dashboard.apptest import seen as unescaped
from tests.dashboard.reviewing import button, no_exception, open_page, sign, texts

EXAMPLE_DOCUMENTS = Path(__file__).parents[2] / "rageval_core" / "example" / "documents.jsonl"
N = 6
XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """A batch of N candidates from the example documents (the templated generator)."""
    out = tmp_path_factory.mktemp("candidates") / "b1"
    args = ["dataset", "generate", "--documents", str(EXAMPLE_DOCUMENTS), "--out", str(out)]
    assert main([*args, "--n", str(N)]) == 0
    return out


@pytest.fixture
def site(results, labels, generated, monkeypatch) -> tuple[Path, Path, Path]:
    """(results, labels, batch): the demo runs with batch b1 in their candidates folder."""
    monkeypatch.delenv(CANDIDATES_ENV, raising=False)
    batch = results / "candidates" / "b1"
    shutil.copytree(generated, batch)
    return results, labels, batch


def candidates_page(app, results: Path, **params: str):
    return open_page(app, results, "candidates", **params)


def ids(batch: Path) -> list[str]:
    return [c.id for c in read_candidates(batch / "candidates.jsonl")]


def heading(at) -> str:
    return unescaped(at.subheader[0].value)


def decisions(labels: Path, batch: str = "b1") -> dict:
    return DecisionStore(str(labels), batch).latest()


def test_the_queue_shows_a_candidate_its_checks_and_its_quote_in_the_document(app, site):
    results, _, batch = site
    at = candidates_page(app, results)
    first = read_candidates(batch / "candidates.jsonl")[0]
    assert heading(at) == f"1 of {N}: {first.id}"
    assert at.query_params["batch"] == "b1" and at.query_params["candidate"] == first.id
    checks = at.dataframe[0].value
    assert checks.to_dict("records") == [
        {"check": c.name, "result": "passed" if c.passed else "failed", "detail": c.detail}
        for c in first.checks
    ]
    body = texts(at, "markdown")
    assert first.question in body
    q = first.quotes[0]
    assert f'<mark class="rageval-gold" title="gold span">{q.text}</mark>' in body
    assert f"0 of {N} decided" in [p.proto.text for p in at.get("progress")]
    queue = at.dataframe[1].value
    assert list(queue["candidate"]) == ids(batch) and set(queue["decision"]) == {""}


def test_no_action_without_a_reviewer_name_and_none_on_a_read_only_server(app, site, monkeypatch):
    results, labels, _ = site
    at = candidates_page(app, results)
    labels_shown = {b.label for b in at.button}
    assert not {"Accept", "Reject", "Save edit", "Write dataset version"} & labels_shown
    assert "Start labelling" in labels_shown
    sign(at)
    assert {"Accept", "Reject", "Save edit", "Write dataset version"} <= {
        b.label for b in at.button
    }
    monkeypatch.setenv(READ_ONLY_ENV, "1")
    at = candidates_page(app, results)
    assert not {"Accept", "Reject", "Start labelling"} & {b.label for b in at.button}
    assert "started read-only" in unescaped(texts(at, "info"))
    assert not labels.exists() or not list(labels.rglob("*.jsonl"))


def test_accept_reject_and_edit_are_saved_and_move_the_queue_on(app, site):
    results, labels, batch = site
    order = ids(batch)
    at = sign(candidates_page(app, results))
    no_exception(button(at, "Accept").click().run())
    assert heading(at).startswith(f"2 of {N}: ")
    assert f"1 of {N} decided" in [p.proto.text for p in at.get("progress")]
    at.text_input(key=f"cq_b1_{order[1]}_note").input("too vague")
    no_exception(button(at, "Reject").click().run())
    assert heading(at).startswith(f"3 of {N}: ")
    saved = decisions(labels)
    assert {k: (d.action, d.reviewer, d.note) for k, d in saved.items()} == {
        order[0]: ("accept", "Ann Reviewer", ""),
        order[1]: ("reject", "Ann Reviewer", "too vague"),
    }
    again = candidates_page(app, results, batch="b1", candidate=order[1])
    assert "Ann Reviewer: rejected" in unescaped(texts(again, "info"))


def test_an_edit_is_saved_only_when_each_quote_stands_exactly_once(app, site):
    results, labels, batch = site
    third = read_candidates(batch / "candidates.jsonl")[2]
    at = sign(candidates_page(app, results, batch="b1", candidate=third.id))
    key = f"cq_b1_{third.id}"
    at.text_input(key=f"{key}_quote_1").input("words no document holds")
    no_exception(button(at, "Save edit").click().run())
    assert "Not saved: quote 1: not found in" in unescaped(texts(at, "error"))
    assert decisions(labels) == {}

    part = third.quotes[0].text[:-1]  # shorter, still standing once
    at.text_area(key=f"{key}_question").input("Which figure is it?")
    at.text_input(key=f"{key}_quote_1").input(part)
    no_exception(button(at, "Save edit").click().run())
    d = decisions(labels)[third.id]
    assert (d.action, d.question, d.reference) == (
        "edit",
        "Which figure is it?",
        third.reference_answer,
    )
    assert [(q.doc_id, q.text) for q in d.quotes] == [(third.quotes[0].doc_id, part)]


def test_hostile_candidate_text_is_shown_as_text(app, site):
    results, _, batch = site
    rows = [json.loads(x) for x in (batch / "candidates.jsonl").read_text().splitlines()]
    row = rows[0]
    row["question"] = f"Q {XSS}"
    row["reference_answer"] = f"R {XSS}"
    row["checks"][0]["detail"] = XSS
    row["kind"] = f"x{XSS}"
    row["generator"] = "[link](http://evil.example) :red[x]"
    (batch / "candidates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    at = candidates_page(app, results)
    body = texts(at, "markdown", "caption", "subheader", "info", "error")
    assert "<script>" not in body and "<img" not in body
    assert "Q &lt;script&gt;window.__xss=1&lt;/script&gt;&lt;img" in body
    assert "](http" not in body and ":red[" not in body
    assert at.dataframe[0].value["detail"][0] == XSS  # a cell: data, never markup


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"batch": "../etc"}, "Ignored URL parameter 'batch' = '../etc': not a valid batch name"),
        ({"batch": "b1", "candidate": "<script>"}, "Ignored URL parameter 'candidate'"),
        ({"batch": "nope"}, "Candidate batch 'nope' not found in"),
        ({"batch": "b1", "candidate": "gen-000000000000"}, "Candidate 'gen-000000000000' is not"),
    ],
)
def test_bad_deep_links_are_refused_with_a_clear_message(app, site, params, message):
    results, _, batch = site
    at = candidates_page(app, results, **params)
    errors = [e.value for e in at.error]
    assert any(message in seen for seen in map(unescaped, errors)), errors
    assert heading(at).startswith(f"1 of {N}: ")  # opened on the first undecided one
    assert at.query_params["batch"] == "b1"


def test_a_deep_link_opens_that_candidate(app, site):
    results, _, batch = site
    order = ids(batch)
    at = candidates_page(app, results, batch="b1", candidate=order[4])
    assert heading(at).startswith(f"5 of {N}: ") and not at.error
    no_exception(button(at, "Previous").click().run())
    assert heading(at).startswith(f"4 of {N}: ") and at.query_params["candidate"] == order[3]


def test_no_batch_says_how_to_make_one(app, results, labels, monkeypatch, scratch):
    monkeypatch.setenv(CANDIDATES_ENV, str(scratch / "none"))
    at = candidates_page(app, results)
    assert "No candidate batches in" in texts(at, "info") and not at.button


def test_a_damaged_decisions_file_is_named_and_costs_only_its_line(app, site):
    results, labels, batch = site
    order = ids(batch)
    folder = labels / "b1" / "candidates" / "Ann"
    folder.mkdir(parents=True)
    good = {"batch": "b1", "candidate_id": order[0], "action": "reject", "reviewer": "Ann",
            "at": "2026-12-05T10:00:00Z", "note": ""}  # fmt: skip
    (folder / "x.decisions.jsonl").write_text(json.dumps(good) + "\n{not json\n")
    at = candidates_page(app, results)
    warnings = unescaped(texts(at, "warning"))
    assert "x.decisions.jsonl:2" in warnings
    assert heading(at).startswith(f"2 of {N}: ")  # the first is decided
    assert f"1 of {N} decided" in [p.proto.text for p in at.get("progress")]


def test_the_written_version_holds_the_accepted_candidates_and_validates(app, site):
    results, labels, batch = site
    order = ids(batch)
    at = sign(candidates_page(app, results))
    no_exception(button(at, "Write dataset version").click().run())
    assert "Nothing written: no candidate of this batch is accepted yet." in unescaped(
        texts(at, "info")
    )
    no_exception(button(at, "Accept").click().run())
    no_exception(button(at, "Reject").click().run())
    no_exception(button(at, "Write dataset version").click().run())
    [version] = (batch / "versions").iterdir()
    [written] = version.glob("*.yaml")
    dataset = load_dataset(written)
    assert [q.id for q in dataset.questions] == [order[0]]
    assert f"to {written}: 1 question(s) added ({order[0]})" in unescaped(texts(at, "info"))
    assert main(["validate", str(written)]) == 0


def test_accepted_candidates_join_the_dataset_the_runs_used_as_its_next_version(app, site):
    results, _, batch = site
    first = ids(batch)[0]
    at = sign(candidates_page(app, results))
    no_exception(button(at, "Accept").click().run())
    [target] = [o for o in at.selectbox(key="cq_target").options if "northwind-handbook" in o]
    at.selectbox(key="cq_target").set_value(target)
    no_exception(button(at, "Write dataset version").click().run())
    [version] = (batch / "versions").iterdir()
    [written] = version.glob("*.yaml")
    before = load_dataset(EXAMPLE_DOCUMENTS.parent / "dataset.yaml")
    after = load_dataset(written)
    assert (before.version, after.version) == ("3", "4")
    assert [q.id for q in after.questions] == [q.id for q in before.questions] + [first]
    assert "Wrote version 4" in unescaped(texts(at, "info"))
