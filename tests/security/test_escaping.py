"""Model text is untrusted: on every dashboard page it arrives escaped, or in an element
that does not render HTML or markdown."""

from __future__ import annotations

import json
import shutil

import pytest

from rageval_core import query


@pytest.fixture(scope="module")
def question_id(poisoned, helpers, tmp_path_factory):
    run_id = helpers.run_ids(poisoned)[-1]
    with query.ResultsStore(
        str(poisoned), read_only=True, cache_dir=tmp_path_factory.mktemp("c")
    ) as store:
        page = query.question_rows(store, run_id, query.QuestionFilter(), limit=1)
    return run_id, str(page.rows["question_id"].iloc[0])


def assert_escaped(at, helpers, where: str) -> int:
    """Every HTML-rendering element holds the payload escaped; markdown holds none raw."""
    seen = 0
    for kind, allow_html, text in helpers.page_strings(at):
        if kind in ("code", "text"):
            continue  # rendered as plain text by Streamlit
        for marker in helpers.RAW_MARKERS:
            assert marker not in text, (where, kind, allow_html, text[:300])
        if allow_html:
            # One line = one CommonMark HTML block: markdown inside it (an image that would
            # fetch a URL, a javascript: link) is not parsed, only shown.
            assert "\n" not in text and "\r" not in text, (where, kind, text[:300])
        else:
            assert "](http://127.0.0.1:9" not in text, (where, kind, text[:300])
            assert "](javascript:" not in text, (where, kind, text[:300])
        if allow_html and "&lt;script&gt;" in text:
            seen += 1
    return seen


def test_every_page_escapes_model_text(poisoned, app, helpers, question_id):
    run_id, qid = question_id
    ids = helpers.run_ids(poisoned)
    at = app(poisoned, run=run_id, baseline=ids[-2], runs=[ids[-2], run_id], question=qid)
    at.run()
    assert not at.exception
    escaped_seen = 0
    for page in helpers.PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        escaped_seen += assert_escaped(at, helpers, page)
    assert escaped_seen > 0, "the question page should show the (escaped) answer"


def test_question_page_shows_payload_as_text(poisoned, app, helpers, question_id):
    run_id, qid = question_id
    at = app(poisoned, run=run_id, question=qid)
    at.run()
    at.switch_page("app_pages/question.py").run()
    assert not at.exception
    html_bodies = [t for _, allow, t in helpers.page_strings(at) if allow]
    assert any("&lt;script&gt;" in t for t in html_bodies)
    assert_escaped(at, helpers, "question")


MD_LINK = "![t](http://127.0.0.1:9/t.png)[x](http://127.0.0.1:9/x)"


def test_bad_url_values_echoed_in_errors_are_not_markdown(demo_results, app, helpers):
    # A crafted link must not make the dashboard draw an image from (or a link to) another
    # site in its own error box: every echoed value is shown as text.
    params = {
        "run": MD_LINK,
        "baseline": MD_LINK,
        "runs": [MD_LINK],
        "question": MD_LINK,
        "metric": MD_LINK,
        "sort": MD_LINK,
        "chart": MD_LINK,
        "tags": ["<" + MD_LINK],
        # a bound that is not a number: a protocol-relative link has no ':' to split on
        "range": ["faithfulness:![t](//127.0.0.1/t.png):"],
        "answerable": MD_LINK,
        "page": MD_LINK,
    }
    at = app(demo_results)
    at.run()
    for page in helpers.PAGES:
        for k, v in params.items():  # each page writes the cleaned state back to the URL
            at.query_params[k] = v
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        errors = [t for kind, _, t in helpers.page_strings(at) if kind == "error"]
        assert sum("Ignored URL parameter" in e for e in errors) >= len(params), (page, errors)
        assert not any("](" in e for e in errors), (page, errors)
        assert_escaped(at, helpers, page)


def test_a_hostile_import_origin_is_shown_as_text(demo_results, app, helpers, tmp_path):
    # The origin's tool and file names come from the imported file and the command line:
    # Runs (a table cell) and Compare's config diff show them, never as markup.
    out = tmp_path / "results"
    shutil.copytree(demo_results, out, ignore=shutil.ignore_patterns(".rageval"))
    ids = helpers.run_ids(out)
    newest = max(
        ids, key=lambda r: json.loads((out / r / "manifest.json").read_text())["created_at"]
    )
    path = out / newest / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["config"]["origin"] = {"kind": "import", "tool": helpers.XSS, "file": helpers.XSS}
    path.write_text(json.dumps(manifest))
    (out / newest / "summary.json").unlink()  # the cache re-reads the manifest either way
    at = app(out, runs=[ids[0], newest], baseline=ids[0])
    at.run()
    assert not at.exception
    table = at.dataframe[0].value
    assert table.loc[table["run_id"] == newest, "origin"].item().startswith("imported from <img")
    assert_escaped(at, helpers, "runs")
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception
    assert_escaped(at, helpers, "compare")


def test_answer_diffs_escape_every_word(poisoned, app, helpers, tmp_path):
    """The answer diff colours words with markdown directives: every word is escaped, so a
    removed or added payload cannot close a directive, draw an image or add HTML."""

    from tests.daily_loop import add_flaky_series

    results = tmp_path / "results"
    shutil.copytree(poisoned, results, ignore=shutil.ignore_patterns(".rageval"))
    s = add_flaky_series(results, wrong=helpers.XSS + "] :red[x](http://127.0.0.1:9/d)")
    pages = {
        "compare": dict(runs=[s.ok_run, s.broken_run], baseline=s.ok_run, question=s.question),
        "question": dict(run=s.broken_run, question=s.question),
    }
    for page, params in pages.items():
        at = app(results, **params)
        at.run()
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        diffs = [m.value for m in at.markdown if ":green-background[" in m.value]
        assert diffs, page
        for d in diffs:
            assert "&lt;script&gt;" in d and "\\]" in d  # shown, escaped
            # the payload's own directive is inert text: its colon escaped and joined
            assert "\\:\u2060red\\[x\\]" in d
        assert_escaped(at, helpers, page)


def test_labels_notes_and_reviewer_names_stay_text(poisoned, app, helpers, tmp_path, monkeypatch):
    """A reviewer name and a note are typed by anyone who can reach the dashboard, and a
    labelled claim is model text: on the Question, Review and Judge pages they arrive
    escaped, in the label lines, the claim headings, the "labelling as" line and the
    disagreements; a judge named with a payload in a manifest too."""
    from rageval_core.labels import LABELS_ENV, READ_ONLY_ENV, HumanLabel, LabelStore, utc_stamp
    from rageval_core.runs.reading import inspect_run

    results = tmp_path / "results"
    shutil.copytree(poisoned, results, ignore=shutil.ignore_patterns(".rageval"))
    run_id = helpers.run_ids(results)[-1]
    manifest_path = results / run_id / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["judge"]["model"] = helpers.XSS
    manifest_path.write_text(json.dumps(manifest))
    (results / run_id / "summary.json").unlink(missing_ok=True)
    ds = inspect_run(str(results), run_id).manifest.dataset
    # A reviewer name holds no control character and at most 120 characters.
    name = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script> [x](javascript:1)'
    assert len(name) <= 120
    labels = tmp_path / "labels"
    monkeypatch.setenv(LABELS_ENV, str(labels))
    monkeypatch.delenv(READ_ONLY_ENV, raising=False)
    LabelStore(str(labels)).save(
        [
            HumanLabel(ds.name, ds.sha256, "q001", helpers.XSS, "supported", None, name,
                       utc_stamp(), note=helpers.XSS, run_id=run_id, judge="unsupported"),
            HumanLabel(ds.name, ds.sha256, "q001", None, None, "pass", name, utc_stamp(),
                       note=helpers.XSS, run_id=run_id, judge="fail"),
        ]
    )  # fmt: skip
    at = app(results)
    at.run()
    assert not at.exception
    seen = 0
    for page in ("question", "review", "judge"):
        at.query_params.clear()
        at.query_params.update({"run": run_id, "question": "q001", "size": "10"})
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        if page == "question":  # this session labels under the hostile name
            at.text_input(key="label_reviewer_name").input(name)
            [b for b in at.button if b.label == "Start labelling"][0].click().run()
            assert not at.exception, at.exception
        seen += assert_escaped(at, helpers, page)
        strings = " ".join(t for _, _, t in helpers.page_strings(at))
        assert "&lt;script&gt;" in strings, page  # the payload is shown, as text
    assert seen > 0
    judge = " ".join(t for _, _, t in helpers.page_strings(at))
    assert "Judge: " in judge and "&lt;img" in judge  # the judge's name, from the manifest
