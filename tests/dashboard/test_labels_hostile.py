"""Labels on a running dashboard under hostile conditions (issue 23).

The Judge page's memo follows every save, whoever made it: a correction from another
process keeps the label count, and with a future-dated label (clock skew between
replicas) it is not the newest either; the page keyed on both showed stale figures for ten
minutes. The key is now the set of label files read. A read-only dashboard refuses a save
at the save path itself, whatever message reaches it."""

from __future__ import annotations

from rageval_core import numbers
from rageval_core.labels import LabelStore
from rageval_core.query import judge_reports, question_detail
from tests.dashboard.conftest import LATEST
from tests.dashboard.reviewing import (
    QUESTION,
    human,
    no_exception,
    open_page,
)


def _figures(at) -> dict:
    figures, *_ = (t.value for t in at.table)
    return figures["claims"]


def _expected(store, location) -> str:
    [report] = [r for r in judge_reports(store, LabelStore(location).load()) if LATEST in r.runs]
    return numbers.percent(report.claims.raw)


def test_a_correction_from_another_process_shows_after_the_labels_refresh(
    app,
    results,
    labels,
    store,
):
    import dashboard.data as data

    claims = question_detail(store, LATEST, QUESTION).claims
    verdicts = [c.verdict for c in claims[:2]]
    here = LabelStore(str(labels))
    here.save(
        [human(results, claims[0].text, verdicts[0], "ann", created_at="2099-01-01T00:00:00Z")]
    )
    here.save(
        [human(results, claims[1].text, verdicts[1], "ann", created_at="2026-01-01T00:00:00Z")]
    )
    at = open_page(app, results, "judge")
    before = _figures(at)["raw agreement"]
    assert before == _expected(store, str(labels)) == "100.0%"
    # another replica corrects claim 2: same count, and 2099 stays the newest created_at
    other = "supported" if verdicts[1] != "supported" else "contradicted"
    LabelStore(str(labels)).save(
        [human(results, claims[1].text, other, "ann", created_at="2026-06-01T00:00:00Z")]
    )
    data._load_labels.clear()  # what LABELS_REFRESH_S does: the labels are read again
    at = no_exception(at.run())
    assert _figures(at)["raw agreement"] == _expected(store, str(labels)) == "50.0%"


def test_a_read_only_dashboard_refuses_a_save_that_reaches_the_session_api(
    results,
    labels,
    monkeypatch,
):
    """A crafted websocket message may fire a widget's callback the page never drew; the
    save path itself refuses, so a read-only dashboard writes nothing whatever it is sent."""
    import pytest

    import dashboard.data as data
    from rageval_core.errors import ConfigError
    from rageval_core.labels import READ_ONLY_ENV

    monkeypatch.setenv(READ_ONLY_ENV, "1")
    with pytest.raises(ConfigError, match="read-only"):
        data.save_labels([human(results, "A claim.", "supported", "mallory")])
    assert not labels.exists() or not list(labels.rglob("*.jsonl"))


def test_every_label_page_opens_over_hostile_label_lines(app, results, labels):
    """Issue 23: one line with `"claim": 5`, a deep line or a lone surrogate crashed Runs,
    Diagnose, Question, Review and Judge with a traceback showing the server's paths."""
    from tests.core.labels.helpers import HOSTILE

    ds = human(results, "A claim.", "supported", "eve")
    LabelStore(str(labels)).save([ds])
    bad = labels / "qa" / "eve" / "hostile.jsonl"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("\n".join(HOSTILE.values()) + "\n")
    for page in ("runs", "diagnose", "review", "judge"):
        open_page(app, results, page)  # fails on any exception the page shows
    open_page(app, results, "question", run=LATEST, question=QUESTION)
