"""Labelling, the Review queue and the Judge page under AppTest, on real demo runs with a
real labels folder: a save lands as a file and shows at once; a read-only dashboard shows
labels and offers no way to write one; the Judge page shows what the query layer computes.
"""

from __future__ import annotations

import pytest

from dashboard.pages import PAGES
from rageval_core.labels import (
    LABELS_ENV,
    READ_ONLY_ENV,
    HumanLabel,
    LabelSet,
    LabelStore,
    utc_stamp,
)
from rageval_core.links import escape_word
from rageval_core.query import (
    judge_reports,
    question_detail,
    review_queue,
    run_coverage,
)
from tests.dashboard.conftest import LATEST, RUN_IDS
from tests.dashboard.reviewing import (
    QUESTION,
    button,
    dataset_of,
    human,
    label_files,
    no_exception,
    open_page,
    open_question,
    read_labels,
    sign,
    texts,
)

# ---------------------------------------------------------------------------- Question page


def test_a_claim_label_is_saved_as_a_file_and_shows_at_once(app, results, labels, store):
    at = open_question(app, results)
    assert not [b for b in at.button if b.label == "Save claim label"], "no name asked yet"
    sign(at)
    assert "Labelling as Ann Reviewer." in texts(at, "caption")
    judged = question_detail(store, LATEST, QUESTION).claims
    assert [c.verdict for c in judged[:2]] == ["supported", "unsupported"]

    at.radio(key=f"question_label_{LATEST}_{QUESTION}_claim_2_choice").set_value("supported")
    at.text_input(key=f"question_label_{LATEST}_{QUESTION}_claim_2_note").input("chunk 3 says so")
    no_exception(button(at, "Save claim label", 1).click().run())

    [saved] = read_labels(labels)
    ds = dataset_of(results)
    assert saved | {"created_at": None} == {
        "dataset": ds.name,
        "dataset_sha256": ds.sha256,
        "question_id": QUESTION,
        "claim": judged[1].text,
        "verdict": "supported",
        "question_label": None,
        "reviewer": "Ann Reviewer",
        "created_at": None,
        "note": "chunk 3 says so",
        "run_id": LATEST,
        "judge": "unsupported",
    }
    # Shown at once: beside the judge's verdict in the heading, and with the note inside.
    assert any(e.label.startswith("Claim 2: unsupported · people: supported") for e in at.expander)
    assert "Ann Reviewer: supported (judge: unsupported) — chunk 3 says so" in texts(at, "markdown")
    # The form now starts from this reviewer's own label.
    assert at.radio(key=f"question_label_{LATEST}_{QUESTION}_claim_2_choice").value == "supported"


def test_judge_is_right_saves_the_judges_verdict_and_a_question_label(app, results, labels):
    at = sign(open_question(app, results))
    no_exception(button(at, "Save claim label", 0).click().run())  # default: judge is right
    at.radio(key=f"question_label_{LATEST}_{QUESTION}_question_choice").set_value("fail")
    no_exception(button(at, "Save question label").click().run())
    got = sorted(read_labels(labels), key=lambda d: d["claim"] is None)
    assert [(d["verdict"], d["judge"], d["question_label"]) for d in got] == [
        ("supported", "supported", None),
        (None, "pass" if got[1]["judge"] == "pass" else "fail", "fail"),
    ]
    assert len(label_files(labels)) == 2  # one new file per save, never a rewrite


def test_labels_of_another_run_on_the_same_dataset_show_and_a_correction_wins(
    app, results, labels, store
):
    claim = question_detail(store, LATEST, QUESTION).claims[1].text
    s = LabelStore(str(labels))
    old = "2026-11-01T00:00:00Z"
    kw = dict(run_id=RUN_IDS[0], judge="unsupported")
    s.save([human(results, claim, "contradicted", "bo", created_at=old, **kw)])
    s.save([human(results, claim, "supported", "bo", **kw)])  # bo's correction, newer
    at = open_question(app, results)
    body = texts(at, "markdown")
    assert "bo: supported (judge: unsupported)" in body
    assert "bo: contradicted" not in body


def test_a_bad_reviewer_name_is_refused_and_asked_again(app, results, labels):
    at = sign(open_question(app, results), "bad\x07name")
    assert at.error and not [b for b in at.button if b.label == "Save claim label"]
    assert at.text_input(key="label_reviewer_name")  # still asked


def test_the_signed_in_oidc_email_is_the_reviewer(app, results, labels):
    at = app(results, run=LATEST, question=QUESTION)
    at.secrets["auth"] = {"client_id": "x", "client_secret": "y", "redirect_uri": "z"}
    at.secrets["rageval"] = {"allowed_emails": ["ann@example.com"]}
    at.user = {"is_logged_in": True, "email": "ann@example.com"}
    no_exception(at.run())
    no_exception(at.switch_page(PAGES["question"].path).run())
    assert not [t for t in at.text_input if t.key == "label_reviewer_name"]
    no_exception(button(at, "Save claim label", 0).click().run())
    assert [d["reviewer"] for d in read_labels(labels)] == ["ann@example.com"]


@pytest.mark.parametrize("why", ["read_only", "unwritable"])
def test_read_only_shows_labels_with_no_way_to_write(app, results, labels, monkeypatch, why):
    LabelStore(str(labels)).save([human(results, None, "fail", "bo")])
    if why == "read_only":
        monkeypatch.setenv(READ_ONLY_ENV, "1")
        said = "read-only"
    else:  # a location nobody may write: a file where the folder would be
        blocked = labels.parent / "blocked"
        blocked.write_text("")
        monkeypatch.setenv(LABELS_ENV, str(blocked / "labels"))
        LabelStore(str(labels)).load()
        said = "cannot be saved"
    for page in ("question", "review"):
        at = open_page(app, results, page, run=LATEST, question=QUESTION)
        assert not at.get("form"), page
        assert not [b for b in at.button if b.label.startswith(("Save", "Start labelling"))]
        assert not at.text_input, page
        assert escape_word(said) in texts(at, "info"), page
        if why == "read_only" and page == "question":
            assert "bo: fail" in texts(at, "markdown")


# ---------------------------------------------------------------------------- Review page


def test_review_page_walks_the_queue_with_its_state_in_the_url(app, results, labels, store):
    at = open_page(app, results, "review", run=LATEST, size="10")
    queue = review_queue(store, LATEST, LabelSet(), 10)  # the round: chosen before labels
    assert at.query_params["run"] == LATEST and at.query_params["size"] == "10"
    assert f"1 of {len(queue)}: {queue[0].question_id}" in texts(at, "subheader")
    assert f"0 of {len(queue)} reviewed" in str(at.get("progress")[0].proto.text)
    no_exception(button(at, "Next").click().run())
    assert at.query_params["pos"] == "1"
    assert f"2 of {len(queue)}: {queue[1].question_id}" in texts(at, "subheader")

    # Label the second question: the progress counts it.
    sign(at)
    no_exception(button(at, "Save question label").click().run())
    assert f"1 of {len(queue)} reviewed" in str(at.get("progress")[0].proto.text)
    no_exception(button(at, "Previous").click().run())
    assert "pos" not in at.query_params  # position 0 is the default, left out
    links = [e.proto.page for e in at.get("page_link")]
    assert any("question" in p for p in links)


def test_review_url_with_a_position_past_the_end_opens_the_last(app, results, labels):
    at = open_page(app, results, "review", run=LATEST, size="10", pos="999")
    assert at.query_params["pos"] == "9"
    assert "10 of 10: " in texts(at, "subheader")
    assert button(at, "Next").disabled


# ---------------------------------------------------------------------------- Judge page


def test_judge_page_shows_what_the_query_layer_computes(app, results, labels, store):
    claims = question_detail(store, LATEST, QUESTION).claims
    s = LabelStore(str(labels))
    s.save(
        [
            human(results, c.text, v, "ann")
            for c, v in zip(claims[:2], ("supported", "contradicted"), strict=True)
        ]
    )
    s.save([human(results, claims[0].text, "unsupported", "bo")])
    [report] = [r for r in judge_reports(store, s.load()) if LATEST in r.runs]
    at = open_page(app, results, "judge")
    figures, reviewers = (t.value for t in at.table)
    claims, answers = figures["claims"], figures["whole answers (pass / fail)"]
    a = report.claims
    assert claims["Cohen's kappa"] == (f"{a.kappa:.2f}" if a.kappa is not None else "–")
    assert claims["95% interval (bootstrap)"] == f"{a.kappa_low:.2f} to {a.kappa_high:.2f}"
    assert claims["labels behind these figures"] == f"{a.n:,}" and a.n >= 3
    assert claims["raw agreement"] == f"{a.raw * 100:.1f}%"
    assert answers["labels behind these figures"] == "0"
    assert "too few to trust" in texts(at, "warning")
    assert len(at.get("plotly_chart")) == 2  # claims, and ann against bo (no answer labels)
    assert f"Disagreements ({len(report.disagreements)})" in texts(at, "subheader")
    # ann and bo labelled claim 1 differently: one pair, and no agreement beyond chance
    assert reviewers["claims two reviewers labelled"]["labels behind these figures"] == "1"


def test_judge_page_without_labels_says_how_to_get_some(app, results, labels):
    at = open_page(app, results, "judge")
    assert "No labels yet" in texts(at, "warning", "info")


# ---------------------------------------------------------------------------- Runs, Diagnose


def test_runs_has_no_coverage_columns_while_nobody_labelled_anything(app, results, labels):
    at = no_exception(app(results).run())
    assert "faithfulness" in at.dataframe[0].value.columns
    assert "claims checked" not in at.dataframe[0].value.columns
    no_exception(at.switch_page(PAGES["diagnose"].path).run())
    assert {m.label: m.value for m in at.metric}["claims checked by people"] == "–"


def test_runs_and_diagnose_show_claims_checked_and_kappa_beside_faithfulness(
    app, results, labels, store
):
    claims = question_detail(store, LATEST, QUESTION).claims
    s = LabelStore(str(labels))
    s.save([human(results, claims[0].text, "supported", "ann")])
    cov = run_coverage(store, s.load())[LATEST]
    checked = f"{cov.checked:,} of {cov.claims:,}"
    at = app(results)
    no_exception(at.run())
    table = at.dataframe[0].value
    cols = list(table.columns)
    assert cols.index("claims checked") == cols.index("faithfulness") + 2  # after its Δ
    assert table.loc[table["run_id"] == LATEST, "claims checked"].item() == checked
    no_exception(at.switch_page(PAGES["diagnose"].path).run())
    assert {m.label: m.value for m in at.metric}["claims checked by people"] == checked


def test_a_choice_saved_on_one_question_is_not_preselected_on_the_next(app, results, labels):
    # Widget state is kept per key for the session: the choice saved for claim 2 of one
    # question must not stand preselected for claim 2 of the next one (a second click on
    # Save would label it with a verdict nobody gave it).
    at = sign(open_question(app, results))
    radio = next(r for r in at.radio if r.key.endswith("claim_2_choice"))
    radio.set_value("supported")
    no_exception(button(at, "Save claim label", 1).click().run())
    at.query_params.update({"question": "q002"})
    no_exception(at.switch_page(PAGES["question"].path).run())
    assert any(h.startswith("q002") for h in texts(at, "subheader").splitlines())
    again = next(r for r in at.radio if r.key.endswith("claim_2_choice"))
    assert again.value == "judge is right"


def test_a_save_that_fails_says_so_and_keeps_the_page(app, results, labels):
    at = sign(open_question(app, results))
    labels.mkdir(parents=True, exist_ok=True)
    labels.rmdir()
    labels.write_text("")  # the location turned into a file after the write check
    no_exception(button(at, "Save question label").click().run())
    assert any("The label was not saved" in e.value for e in at.error)
    assert at.get("form")  # still offered: the reviewer may try again


def test_review_opens_at_the_first_question_nobody_labelled(app, results, labels, store):
    queue = review_queue(store, LATEST, LabelSet(), 10)
    ds = dataset_of(results)
    LabelStore(str(labels)).save(
        [
            HumanLabel(ds.name, ds.sha256, item.question_id, None, None, "pass", "ann", utc_stamp())
            for item in queue[:3]
        ]
    )
    at = open_page(app, results, "review", run=LATEST, size="10")
    assert f"4 of {len(queue)}: {queue[3].question_id}" in texts(at, "subheader")
    assert f"3 of {len(queue)} reviewed" in str(at.get("progress")[0].proto.text)
    # until a name is given, the answer-level heading says what it waits for
    assert "once you have entered your name" in texts(at, "caption")
    # Previous back to the first is kept: the jump is for a queue's first opening only
    no_exception(button(at, "Previous").click().run())
    no_exception(button(at, "Previous").click().run())
    no_exception(button(at, "Previous").click().run())
    assert f"1 of {len(queue)}: {queue[0].question_id}" in texts(at, "subheader")
