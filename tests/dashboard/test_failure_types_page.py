"""Every question can fail, and unscored is not ok (issue 32 item 4), as Diagnose shows it:
an off-topic reference-free answer, a retrieval with no relevant context and a question
the judge could not score each appear under their own type — headline, chart and filter —
never counted ok."""

from __future__ import annotations

from dashboard.pages import PAGES
from rageval_core.catalogue import failure_label
from tests.core.query.conftest import row, write_run
from tests.dashboard.apptest import no_exception, trace_names

TYPES = {"q1": "off_topic", "q2": "irrelevant_context", "q3": "unscored", "q4": "ok"}


def test_diagnose_shows_reference_free_failures_and_unscored_questions(app, scratch):
    rows = [row(q, answerable=None, failure_type=ft) for q, ft in TYPES.items()]
    rows[2]["judge_error"] = "judge endpoint gave up after 3 attempt(s): HTTP 503"
    write_run(scratch / "results", "20260101-000000-prod", rows)
    at = app(scratch / "results", run="20260101-000000-prod")
    at = no_exception(at.switch_page(PAGES["diagnose"].path).run())
    headline = " ".join(s.value for s in at.subheader)
    assert "3 of 4 questions failed" in headline, headline
    for ft in ("off_topic", "irrelevant_context", "unscored"):
        assert f"1 {failure_label(ft)}" in headline
    # the chart groups types by the stage they blame (catalogue.FAILURE_GROUPS)
    assert {"retrieval", "generation", "judge"} <= set(trace_names(at, 0))
    options = at.multiselect(key="diagnose_failure_types").options
    assert {failure_label(ft) for ft in TYPES.values()} <= set(options), options
    table = at.dataframe[-1].value
    assert sorted(table["failure_type"]) == sorted(TYPES.values())
