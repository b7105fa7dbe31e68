"""The app-wide note on a run that left stale questions out (issue 33 item 5): on every
page, for the run the URL names or else the newest, its ids as plain text."""

from __future__ import annotations

import json
from dataclasses import replace

from dashboard.shaping import stale_questions_note
from rageval_core.runs.layout import MANIFEST
from rageval_core.runs.reading import inspect_run
from tests.dashboard.apptest import PAGES, no_exception, seen, texts
from tests.dashboard.conftest import LATEST, PREVIOUS

WHY = "gold_spans[0]: 'x' is no longer in 'doc'"
HOSTILE = "q9](javascript:alert(1)) :red[x] <b>"


def _mark(results, run_id: str, ids: list[str]) -> None:
    path = results / run_id / MANIFEST
    manifest = json.loads(path.read_text())
    manifest["stale_questions"] = dict.fromkeys(ids, WHY)
    path.write_text(json.dumps(manifest))


def test_every_page_names_the_stale_questions_of_the_newest_run(app, results):
    _mark(results, LATEST, ["q003", HOSTILE])
    at = no_exception(app(results).run())
    for page in ["runs", *PAGES]:
        at.switch_page(f"app_pages/{page}.py").run()
        notes = [w for w in texts(no_exception(at).warning) if "stale question" in w]
        assert [seen(n) for n in notes] == [
            f"2 stale questions left out of run {LATEST}: q003, {HOSTILE} — their gold no "
            "longer matches the documents; see docs/datasets.md#refreshing-gold"
        ], page
        assert "](" not in notes[0] and ":red[" not in notes[0] and "<b>" not in notes[0]


def test_a_deep_link_to_another_run_speaks_of_that_run(app, results):
    _mark(results, LATEST, ["q003"])
    at = no_exception(app(results, run=PREVIOUS).run())
    assert not [w for w in texts(at.warning) if "stale question" in w]


def test_a_long_list_is_cut_after_ten_ids(results):
    info = inspect_run(str(results), LATEST)
    many = replace(
        info, manifest=replace(info.manifest, stale_questions={f"q{i}": WHY for i in range(13)})
    )
    (note,) = stale_questions_note([many], [LATEST])
    assert note.startswith(f"13 stale questions left out of run {LATEST}: q0, q1,")
    assert "q9 and 3 more — " in note
    assert stale_questions_note([info], [None]) == []  # the newest run left none out
