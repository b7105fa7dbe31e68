"""Helpers of the AppTest page tests: open a page as a deep link does, read its texts and
figures, fail on any exception the script raised."""

from __future__ import annotations

import html
import json
import re

from streamlit.testing.v1 import AppTest

from dashboard.pages import PAGES as LINK_PAGES

PAGES_TITLES = {p.key: p.title for p in LINK_PAGES.values()}
PAGES = ["diagnose", "tails", "retrieval", "cost", "compare", "question"]


def texts(elements) -> list[str]:
    return [e.value for e in elements]


def figure(at: AppTest, i: int) -> dict:
    return json.loads(at.get("plotly_chart")[i].proto.spec)


def trace_names(at: AppTest, i: int) -> list[str]:
    return [t.get("name") for t in figure(at, i)["data"]]


def open_page(at: AppTest, page: str) -> AppTest:
    """Open `page` first, as a browser following a deep link does (no Runs page run before)."""
    no_exception(at.switch_page(f"app_pages/{page}.py").run())
    assert [t.value for t in at.title] == [PAGES_TITLES[page]]
    return at


def no_exception(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def seen(markdown: str) -> str:
    """What a reader sees of escaped markdown (`links.md_escape`, `escape_word`): no
    backslash before punctuation, no word joiner, `&lt;` as `<`. Directives stay."""
    return html.unescape(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown.replace("\u2060", "")))


def tiles(at) -> dict[str, str]:
    """The metric tiles by label, without the "(86 of 99 questions)" a label carries when
    its figure covers only some questions, and their values."""
    part = re.compile(r" \(\d[\d,]* of \d[\d,]* questions\)$")
    return {part.sub("", m.label): m.value for m in at.metric}


def all_text(at) -> str:
    """Every markdown, caption, subheader, info, warning and expander text of the page."""
    kinds = ("markdown", "caption", "subheader", "info", "warning", "expander")
    out = []
    for k in kinds:
        for e in at.get(k):
            out.append(str(getattr(e, "label", None) or "") + " " + str(getattr(e, "value", "")))
    return "\n".join(out)
