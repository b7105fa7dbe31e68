"""Every message quoting URL text shows it as text: hostile values through every URL
parameter of every page, and a valid but missing run id, reach the error, warning and info
boxes escaped (`ui.say`), never as a link, HTML, a Streamlit directive or an emoji code."""

from __future__ import annotations

import re

import pytest

from dashboard.pages import PAGES
from dashboard.ui import url_problem
from rageval_core.links import ViewState, escape_word
from tests.dashboard.apptest import no_exception

PAYLOADS = [
    "[click me](http://127.0.0.1:9/phish)",
    ":red[r] **b** :x: :material/home:",
    "<img src=x onerror=alert(1)>",
]
PARAMS = (
    "run runs baseline question metric failure_types tags range answerable config "
    "dataset_version sort chart page size pos"
).split()
# Markup that would be live in a markdown body: an unescaped bracket, emphasis or tag, or a
# colon followed by a name (an emoji, icon or coloured-text directive).
LIVE = re.compile(r"(?<!\\)[\[<]|(?<!\\)\*\*|:[\w/]")


def bodies(at) -> list[str]:
    return [e.value for kind in ("error", "warning", "info") for e in at.get(kind)]


def assert_inert(at, where) -> None:
    for body in bodies(at):
        assert not LIVE.search(body), (where, body)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_hostile_url_values_are_shown_as_text_on_every_page(demo_results, app, payload):
    params = {p: payload for p in PARAMS}
    params["range"] = f"faithfulness:{payload}:"  # a known metric, a bound that is no number
    _, problems = ViewState.from_query_params(params)
    expected = [escape_word(url_problem(p)) for p in problems]
    assert {p.parameter for p in problems} >= set(PARAMS) - {"tags", "config", "dataset_version"}
    at = app(demo_results)
    for page in PAGES:
        for k, v in params.items():  # each page writes the cleaned state back to the URL
            at.query_params[k] = v
        no_exception(at.switch_page(PAGES[page].path).run())
        errors = [e.value for e in at.error]
        for message in expected:
            assert message in errors, (page, message, errors)
        assert_inert(at, page)


@pytest.mark.parametrize("page", ["diagnose", "question", "review", "tails", "compare"])
def test_a_missing_run_id_in_a_message_is_text(demo_results, app, page):
    # `__init__` is a valid run id that names nothing, and bold in markdown.
    at = app(demo_results, run="__init__", runs=["__init__"], baseline="__init__")
    no_exception(at.switch_page(PAGES[page].path).run())
    said = [b for b in bodies(at) if "init" in b]
    assert said and all("\\_\\_init\\_\\_" in b for b in said), (page, said)
    assert_inert(at, page)


def test_a_valid_question_id_with_a_shortcode_is_text(demo_results, app):
    """`ZQ:fire:` is a valid question id (QUESTION_ID_RE) naming nothing: quoted in the
    not-found message, it must not become 🔥."""
    at = app(demo_results, question="ZQ:fire:")
    no_exception(at.switch_page(PAGES["question"].path).run())
    said = [b for b in bodies(at) if "ZQ" in b]
    assert said and all(":fire:" not in b.replace("\\:", "") for b in said), said
    assert_inert(at, "question")
