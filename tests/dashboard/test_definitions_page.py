"""The Definitions page: every help link's target is a section of it, with the metric's
own line there, on the demo runs and on runs that declare metrics of their own."""

from __future__ import annotations

import re

import pytest

from dashboard.pages import PAGES
from rageval_core.catalogue import (
    BUILTIN,
    DEFINITIONS_PATH,
    READING_A_CHANGE,
    SECTIONS,
    parse_declared,
)
from tests.dashboard.apptest import no_exception, open_page
from tests.dashboard.conftest import DECLARED

LINK = re.compile(r"\[Definition\]\(([^)#]*)#([^)]*)\)")


def _sections(at) -> dict[str, list[str]]:
    """Each header's anchor and the metric names listed under it, in page order."""
    out: dict[str, list[str]] = {}
    for block in at.main.children.values():
        proto = getattr(block, "proto", None)
        if block.type == "header":
            current = out.setdefault(proto.anchor, [])
        elif block.type == "table":
            current.extend(c.strip("`") for c in block.value["column"])
    return out


@pytest.mark.parametrize("fixture", ["demo_results", "declared_results"])
def test_every_metrics_help_link_lands_on_its_section(app, request, fixture):
    at = open_page(app(request.getfixturevalue(fixture)), "definitions")
    assert PAGES["definitions"].url_path == DEFINITIONS_PATH
    sections = _sections(at)
    assert list(sections) == list(SECTIONS)  # every section, anchored as docs/metrics.md
    cat = BUILTIN
    if fixture == "declared_results":
        cat = BUILTIN.with_declared(parse_declared(DECLARED, "manifest.json"))
        assert "toxicity" in sections["declared-metrics"]
    for m in cat:
        path, anchor = LINK.search(m.help).groups()
        assert path == DEFINITIONS_PATH, m.help  # relative: works under any base URL path
        assert m.name in sections[anchor], (m.name, anchor)
    assert not sections[READING_A_CHANGE]  # prose only: the rule Compare links to
    leads = [t.value for t in at.markdown]
    assert SECTIONS[READING_A_CHANGE].lead in leads


def test_runs_tiles_and_compare_link_to_the_definitions_page(app, demo_results):
    at = no_exception(app(demo_results).run())
    for tile in at.metric:
        path, anchor = LINK.search(tile.help).groups()
        assert (path, anchor in SECTIONS) == (DEFINITIONS_PATH, True), tile.help
    at = open_page(app(demo_results), "compare")
    captions = " ".join(c.value for c in at.caption)
    assert f"[How a change is read]({DEFINITIONS_PATH}#{READING_A_CHANGE})" in captions


def test_a_declared_label_is_shown_as_typed_in_the_definitions_table(app, scratch):
    """Table cells are markdown: a label from a run's manifest is escaped, never a link."""
    from rageval_core.links import md_escape
    from tests.core.query.conftest import row, write_run

    label = "[see](javascript:alert(1)) <b>*x*</b>"
    write_run(
        scratch / "results",
        "decl",
        [row("q1", tone=0.5)],
        created_at="2025-01-01T00:00Z",
        metrics={"tone": {"label": label, "direction": "higher"}},
    )
    at = open_page(app(scratch / "results"), "definitions")
    [table] = [t.value for t in at.table if "`tone`" in list(t.value["column"])]
    cells = set(table.loc[table["column"] == "`tone`", "figure"])  # per question, per run
    assert cells == {md_escape(label)} and "\\[see\\]" in md_escape(label)
