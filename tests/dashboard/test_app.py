"""The whole app under AppTest on real demo runs: every page, deep links, broken states.

Expected figures come from the query layer directly, so each test checks the page shows
what the results say, not what the page computed.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import time

import pytest
from streamlit.testing.v1 import AppTest

from rageval_core.catalogue import BUILTIN
from rageval_core.links import escape_word
from rageval_core.query import (
    QuestionFilter,
    ResultsStore,
    compare_runs,
    question_detail,
    question_rows,
    rerank_candidates,
    runs_overview,
)
from rageval_core.runs.lease import STALE_ENV
from tests.dashboard.apptest import (
    PAGES,
    PAGES_TITLES,
    figure,
    no_exception,
    open_page,
    seen,
    texts,
    tiles,
    trace_names,
)
from tests.dashboard.conftest import (
    LATEST,
    PREVIOUS,
    RUN_IDS,
    make_corrupt,
    make_running,
)


@pytest.fixture(scope="module")
def store(demo_results):
    with ResultsStore(str(demo_results), read_only=True) as s:
        yield s


# ---------------------------------------------------------------------------- Runs


def test_the_dashboard_never_writes_into_the_results_location(app, results):
    before = sorted(p.relative_to(results) for p in results.rglob("*"))
    no_exception(app(results).run())
    assert sorted(p.relative_to(results) for p in results.rglob("*")) == before


def test_runs_page_lists_every_run_newest_first_with_metrics_and_charts(app, demo_results, store):
    at = no_exception(app(demo_results).run())
    assert texts(at.title) == ["Runs"]
    assert f"Latest run: {LATEST}" in texts(at.subheader)
    table = at.dataframe[0].value
    assert list(table["run_id"]) == RUN_IDS[::-1]
    assert table["diagnose"].iloc[0] == f"diagnose?run={LATEST}"
    overview = runs_overview(store).set_index("run_id")
    recall = tiles(at)["recall@5"]
    assert recall == BUILTIN.fmt("recall_at_5", overview.loc[LATEST, "recall_at_5"])
    # every tile says what it means, with its section of the Definitions page
    for m in at.metric:
        assert "is better" in m.help and "](definitions#" in m.help, (m.label, m.help)
    # every demo run is a config of its own: none has a previous run, so no Δ
    assert overview["previous_run"].isna().all()
    assert table["Δ faithfulness"].isna().all()
    # one line per config (its mean, its p10 hidden in the legend), oldest first
    configs = overview.loc[RUN_IDS, "config_name"].tolist()
    assert trace_names(at, 0) == [n for c in configs for n in (c, f"{c} p10")]
    assert [t["text"][0].split("<br>")[0] for t in figure(at, 0)["data"][::2]] == RUN_IDS
    assert "unfaithful" in trace_names(at, 1) and "ok" in trace_names(at, 1)
    assert at.sidebar.markdown and f"{len(RUN_IDS)} runs" in texts(at.sidebar.markdown)
    assert at.query_params["metric"] == "recall_at_5"
    # a first screen without false alarms: the re-chunked demo runs are scored by spans
    # as intended, every chunk placed (a two-word tail chunk once could not be)
    assert [w.value for w in at.warning if "dashboard is public" not in w.value] == []


def _copy_run(results, run_id: str) -> str:
    """A new run folder: the latest demo run under another id."""
    shutil.copytree(results / LATEST, results / run_id)
    manifest = json.loads((results / run_id / "manifest.json").read_text())
    (results / run_id / "manifest.json").write_text(json.dumps({**manifest, "run_id": run_id}))
    return run_id


def test_a_restarted_dashboard_opens_on_its_runs_index_then_lists_the_location(
    app, results, monkeypatch
):
    from dashboard import data

    ResultsStore(str(results), read_only=True)  # the cache a previous server built
    newest = _copy_run(results, "20991231-000000-added-while-down")
    monkeypatch.setattr(data, "LISTING_DELAY_S", 0.0)
    at = no_exception(app(results).run())
    assert f"Latest run: {LATEST}" in texts(at.subheader)  # what the index held
    store = data._store(str(results))
    deadline = time.monotonic() + 20
    while len(store.runs()) < len(RUN_IDS) + 1 and time.monotonic() < deadline:
        time.sleep(0.05)  # the listing runs on its own thread
    no_exception(at.run())
    assert f"Latest run: {newest}" in texts(at.subheader)


def test_a_restarted_dashboard_lists_the_location_after_its_first_page_has_run(
    app, results, monkeypatch
):
    # a delay counted from the store's opening ran the listing beside the page (its
    # second of Python shared the page's GIL) once the page ran longer than the delay
    from dashboard import data, ui

    ResultsStore(str(results), read_only=True)  # the cache a previous server built
    events: list[str] = []
    page_reads = ui.require_runs

    def page_reading():
        events.append("page")
        return page_reads()

    real_timer = data.threading.Timer

    class Timer(real_timer):  # records when the listing is scheduled, and runs it at once
        def start(self):
            if self.function is not data._list_later:
                return super().start()
            events.append("listing")
            self.function(*self.args)

    monkeypatch.setattr(ui, "require_runs", page_reading)
    monkeypatch.setattr(data.threading, "Timer", Timer)
    no_exception(app(results).run())
    assert events == ["page", "listing"]
    assert data._store(str(results)).listed


def test_a_link_to_a_run_written_while_down_opens_it_on_a_restarted_dashboard(
    app, results, monkeypatch
):
    from dashboard import data

    ResultsStore(str(results), read_only=True)  # the cache a previous server built
    newest = _copy_run(results, "20991231-000000-added-while-down")
    monkeypatch.setattr(data, "LISTING_DELAY_S", 600.0)  # the listing after it: not yet
    at = no_exception(app(results, run=newest).switch_page("app_pages/diagnose.py").run())
    assert not texts(at.error)
    assert at.selectbox(key="diagnose_run").value == newest


@pytest.mark.parametrize("every_s, found", [(0.0, True), (600.0, False)])
def test_a_link_to_a_run_newer_than_the_listing_lists_again_at_most_so_often(
    app, results, monkeypatch, every_s, found
):
    from dashboard import data

    no_exception(app(results).run())  # the server listed the location for its first page
    newest = _copy_run(results, "20991231-000000-written-since")
    monkeypatch.setattr(data, "LINK_REFRESH_S", every_s)
    at = no_exception(app(results, run=newest).switch_page("app_pages/diagnose.py").run())
    assert (at.selectbox(key="diagnose_run").value == newest) is found
    said = escape_word(f"Run '{newest}' not found")
    assert any(said in e for e in texts(at.error)) is not found


def test_a_listing_that_fails_after_the_first_page_is_logged_not_raised(
    results, monkeypatch, caplog
):
    from dashboard import data

    store = ResultsStore(str(results), read_only=True, refresh=False)

    def fails(progress=None, **how) -> None:
        raise OSError("the disk went away")

    monkeypatch.setattr(store, "refresh", fails)
    data._list_later(store)  # on its thread this would end the thread, unseen
    assert f"listing {results} after the first page failed" in caplog.text
    assert "the disk went away" in caplog.text


def test_runs_filters_come_from_the_url(app, demo_results):
    at = no_exception(app(demo_results, config="bm25-top5").run())
    assert list(at.dataframe[0].value["run_id"]) == [RUN_IDS[0]]
    assert at.selectbox(key="runs_config").value == "bm25-top5"


def test_diagnose_latest_button_opens_diagnose_for_that_run(app, demo_results):
    at = no_exception(app(demo_results).run())
    at.button(key="runs_diagnose_latest").click().run()
    no_exception(at)
    assert texts(at.title) == ["Diagnose"]
    assert at.query_params["run"] == LATEST
    assert at.selectbox(key="diagnose_run").value == LATEST


def test_selecting_a_run_row_opens_diagnose(app, demo_results):
    at = no_exception(app(demo_results).run())
    at.session_state["runs_table"] = {"selection": {"rows": [2], "columns": [], "cells": []}}
    no_exception(at.run())
    assert texts(at.title) == ["Diagnose"]
    assert at.selectbox(key="diagnose_run").value == RUN_IDS[-3]


# ---------------------------------------------------------------------------- Diagnose


def test_diagnose_headline_chart_and_worst_first_table(app, demo_results, store):
    at = open_page(app(demo_results, run=LATEST), "diagnose")
    counts = question_rows(store, LATEST, limit=1000).rows["failure_type"].value_counts()
    n_failed = int(counts.drop("ok", errors="ignore").sum())
    headline = texts(at.subheader)[0]
    assert headline.startswith(f"{n_failed} of {counts.sum()} questions failed: ")
    assert f"{counts['unfaithful']} unfaithful" in headline
    assert {t["name"] for t in figure(at, 0)["data"]} >= {"generation", "abstention"}
    rows = at.dataframe[0].value
    expected = question_rows(store, LATEST, limit=50).rows
    assert list(rows["question_id"]) == list(expected["question_id"])
    assert rows["open"].iloc[0] == f"question?run={LATEST}&question={expected['question_id'][0]}"
    assert at.query_params["run"] == LATEST


def test_diagnose_filters_from_the_url_reach_the_query(app, demo_results, store):
    at = app(
        demo_results,
        run=LATEST,
        failure_types="unfaithful",
        tags="multi-hop",
        range="faithfulness:0:0.5",
    )
    open_page(at, "diagnose")
    expected = question_rows(
        store,
        LATEST,
        QuestionFilter(
            failure_types=("unfaithful",),
            tags=("multi-hop",),
            metric_ranges={"faithfulness": (0.0, 0.5)},
        ),
        limit=50,
    )
    rows = at.dataframe[0].value
    assert expected.total > 0 and list(rows["question_id"]) == list(expected.rows["question_id"])
    assert set(rows["failure_type"]) == {"unfaithful"}
    assert at.multiselect(key="diagnose_tags").value == ["multi-hop"]
    assert at.selectbox(key="diagnose_range_metric").value == "faithfulness"


def test_diagnose_search_typed_in_goes_to_the_url(app, demo_results, store):
    at = open_page(app(demo_results, run=LATEST), "diagnose")
    at.text_input(key="diagnose_search").input("DockBook").run()
    no_exception(at)
    expected = question_rows(store, LATEST, QuestionFilter(search="DockBook"))
    assert len(at.dataframe[0].value) == expected.total > 0
    assert at.query_params["search"] == "DockBook"


def test_diagnose_pages_through_the_table(app, demo_results, store):
    at = open_page(app(demo_results, run=LATEST), "diagnose")
    at.button(key="diagnose_next").click().run()
    no_exception(at)
    expected = question_rows(store, LATEST, limit=50, offset=50).rows
    assert list(at.dataframe[0].value["question_id"]) == list(expected["question_id"])
    assert at.query_params["page"] == "1"


def test_diagnose_keeps_the_urls_page_when_the_url_carries_other_fields(app, demo_results, store):
    # A link from the Question page back to the table carries `question` as well.
    at = open_page(app(demo_results, run=LATEST, page="1", question="q001"), "diagnose")
    expected = question_rows(store, LATEST, limit=50, offset=50).rows
    assert list(at.dataframe[0].value["question_id"]) == list(expected["question_id"])
    assert at.query_params["page"] == "1"
    # without a run the page shows the newest run: that default is not a new filter
    at = open_page(app(demo_results, page="1", question="q001"), "diagnose")
    assert at.query_params["run"] == LATEST and at.query_params["page"] == "1"


def test_diagnose_goes_back_to_the_first_page_when_a_filter_changes(app, demo_results):
    at = open_page(app(demo_results, run=LATEST, page="1"), "diagnose")
    at.text_input(key="diagnose_search").input("DockBook").run()
    no_exception(at)
    assert "page" not in at.query_params


def test_selecting_a_row_on_diagnose_opens_that_question(app, demo_results, store):
    at = open_page(app(demo_results, run=LATEST), "diagnose")
    qid = question_rows(store, LATEST, limit=50).rows["question_id"][4]
    at.session_state["diagnose_table"] = {"selection": {"rows": [4], "columns": [], "cells": []}}
    no_exception(at.run())
    assert texts(at.title) == ["Question"]
    assert at.query_params["run"] == LATEST and at.query_params["question"] == qid
    assert texts(at.subheader)[0].startswith(f"{qid} · ")


def test_diagnose_open_question_fallback(app, demo_results):
    at = open_page(app(demo_results, run=LATEST), "diagnose")
    qid = at.selectbox(key="diagnose_question").options[1]
    at.selectbox(key="diagnose_question").set_value(qid)
    at.button(key="diagnose_open").click().run()
    no_exception(at)
    assert texts(at.title) == ["Question"] and at.query_params["question"] == qid


# ---------------------------------------------------------------------------- Question


def flagged_question(store):
    page = question_rows(store, LATEST, QuestionFilter(failure_types=("unfaithful",)), limit=1)
    detail = question_detail(store, LATEST, page.rows["question_id"][0])
    claim = next(c for c in detail.claims if c.verdict == "unsupported")
    return detail, claim


def test_question_deep_link_marks_the_claim_with_the_judges_reason(app, demo_results, store):
    detail, claim = flagged_question(store)
    at = open_page(app(demo_results, run=LATEST, question=detail.question_id), "question")
    assert texts(at.title) == ["Question"]
    body = "\n".join(texts(at.markdown))
    mark = (
        f'<mark class="rageval-unsupported" title="{html.escape("unsupported: " + claim.reason)}'
        f'">{html.escape(claim.text)}</mark>'
    )
    assert mark in body
    claim_labels = [e.label for e in at.expander if e.label.startswith("Claim")]
    assert len(claim_labels) == len(detail.claims)
    assert html.escape(claim.reason) in body  # in the claim's expander as well
    chunk_labels = [e.label for e in at.expander if e.label.startswith("#")]
    assert len(chunk_labels) == len(detail.retrieved)
    gold_ranks = [r.rank for r in detail.retrieved if r.is_gold]
    assert [int(lbl[1:].split()[0]) for lbl in chunk_labels if "✓ gold" in lbl] == gold_ranks
    supported = next(c for c in detail.claims if c.verdict == "supported")
    assert f'title="{html.escape("evidence for: " + supported.text)}"' in body
    # the history table (the answer diff's claims table may follow it)
    history = next(d.value for d in at.dataframe if "config_name" in d.value.columns)
    assert list(history["run_id"]) == RUN_IDS
    assert history["open"].iloc[0] == f"question?run={RUN_IDS[0]}&question={detail.question_id}"


def test_question_history_row_opens_that_runs_question(app, demo_results):
    at = open_page(app(demo_results, run=LATEST, question="q001"), "question")
    at.session_state["question_history"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    no_exception(at.run())
    assert at.query_params["run"] == RUN_IDS[0] and at.query_params["question"] == "q001"
    history = next(d.value for d in at.dataframe if "config_name" in d.value.columns)
    assert history["run_id"].iloc[0] == RUN_IDS[0]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"run": "../../etc/passwd", "question": "q001"},
            "'../../etc/passwd': not a valid run id",
        ),
        (
            {"run": "20990101-000000-nope", "question": "q001"},
            "Run '20990101-000000-nope' not found",
        ),
        ({"run": LATEST, "question": "q999"}, f"Question 'q999' not found in run '{LATEST}'"),
        ({"run": LATEST, "question": "<script>alert(1)</script>"}, "not a valid question id"),
    ],
)
def test_question_with_bad_ids_says_so_without_an_exception(app, demo_results, params, message):
    at = open_page(app(demo_results, **params), "question")
    assert texts(at.title) == ["Question"]
    assert any(escape_word(message) in e for e in texts(at.error)), texts(at.error)


def test_question_of_a_run_without_questions_says_it_has_none_yet(app, results):
    make_running(results, LATEST, keep=0)  # just started: the journal is still empty
    at = open_page(app(results, run=LATEST), "question")
    said = texts(at.info)
    assert any("has no questions yet" in i and escape_word(LATEST) in i for i in said), said
    assert not any("None" in e for e in texts(at.error)), texts(at.error)
    assert "question" not in at.query_params


def test_question_without_a_question_offers_a_picker(app, demo_results):
    at = open_page(app(demo_results, run=LATEST), "question")
    assert at.selectbox(key="question_pick").value == "q001"
    assert texts(at.subheader)[0].startswith("q001 · ")


# ---------------------------------------------------------------------------- other pages


def test_tails_page(app, demo_results, store):
    at = open_page(app(demo_results, metric="faithfulness"), "tails")
    # over time, one line per config (its mean and its p10), as on the Runs page
    assert trace_names(at, 0)[:2] == ["bm25-top5", "bm25-top5 p10"]
    assert trace_names(at, 1) == RUN_IDS[::-1][:3]  # ECDF per run, newest three by default
    assert figure(at, 1)["data"][0]["line"]["shape"] == "hv"
    bottom = at.dataframe[0].value
    assert len(bottom) > 0 and bottom["value"].max() <= 0.5
    assert at.query_params["chart"] == "ecdf"
    at.radio(key="tails_chart").set_value("histogram").run()
    no_exception(at)
    assert figure(at, 1)["data"][0]["type"] == "histogram"


def test_retrieval_page(app, demo_results, store):
    run = RUN_IDS[1]  # bm25-top20: gold chunks below rank 5 exist
    at = open_page(app(demo_results, run=run), "retrieval")
    assert len(figure(at, 0)["data"]) == len(RUN_IDS)  # a curve per run
    gap = figure(at, 1)
    assert "ranking problem, not embedding" in gap["layout"]["title"]["text"]
    assert any(a["text"].startswith("gap ") for a in gap["layout"]["annotations"])
    assert trace_names(at, 1) == ["recall@5", "recall@20"]
    expected = rerank_candidates(store, run)
    assert len(expected) > 0
    assert list(at.dataframe[0].value["question_id"]) == list(expected["question_id"])


def test_retrieval_page_opens_on_the_story(app, demo_results, store):
    at = open_page(app(demo_results), "retrieval")
    assert at.multiselect(key="retrieval_runs").value == RUN_IDS[::-1]  # every demo run
    widest = RUN_IDS[1]  # bm25-top20: recall@20 beats recall@5 the most
    assert at.selectbox(key="retrieval_run").value == widest
    assert len(at.dataframe[0].value) == len(rerank_candidates(store, widest)) > 0


def test_cost_page_marks_the_frontier_and_dominated_runs(app, demo_results):
    at = open_page(app(demo_results), "cost")
    table = at.dataframe[0].value
    assert len(table) == len(RUN_IDS)
    latency = figure(at, 0)
    frontier, dominated = latency["data"]
    assert frontier["name"] == "Pareto frontier" and dominated["name"] == "dominated"
    # named on hover (run · config), never as text on the points
    assert sorted(c.split(" · ")[0] for c in frontier["customdata"]) == sorted(
        table.loc[~table["dominated_latency"], "run_id"]
    )
    assert "text" not in frontier["mode"] and not frontier.get("text")
    assert latency["layout"]["xaxis"]["ticksuffix"] == " ms"
    assert figure(at, 1)["layout"]["xaxis"]["tickformat"] == "$.2~r"  # not `100µ`
    assert trace_names(at, 2)[0] == "retrieval p50"


def test_cost_page_defaults_to_recall_and_says_why(app, demo_results):
    # On correctness the demo's "memorising" run (correct but unsupported) dominates all.
    at = open_page(app(demo_results), "cost")
    assert at.selectbox(key="cost_metric").value == "recall_at_5"
    assert at.query_params["metric"] == "recall_at_5"
    # any quality figure may go on the y axis
    assert {"faithfulness", "correctness (answerable)", "MRR"} <= set(
        at.selectbox(key="cost_metric").options
    )
    assert any("correct without being supported" in c for c in texts(at.caption)), texts(at.caption)
    at = open_page(app(demo_results, metric="answer_correctness"), "cost")
    assert at.selectbox(key="cost_metric").value == "answer_correctness"


def test_compare_defaults_to_the_latest_two(app, demo_results, store):
    at = open_page(app(demo_results), "compare")
    assert at.query_params["baseline"] == PREVIOUS
    assert at.multiselect(key="compare_runs").value == [PREVIOUS, LATEST]
    cmp = compare_runs(store, [PREVIOUS, LATEST])
    differing = at.dataframe[0].value
    assert set(differing["key"]) == set(cmp.config_diff.loc[cmp.config_diff["differs"], "key"])
    n = cmp.questions["kind"].value_counts()
    assert [t.label for t in at.tabs] == [
        f"Regressed questions ({n.get('regression', 0)})",
        f"Improved questions ({n.get('improvement', 0)})",
        f"Mixed ({n.get('mixed', 0)})",
        # the per-metric detail, in the expander below
        f"Regressions ({len(cmp.regressions)})",
        f"Improvements ({len(cmp.improvements)})",
        f"Flips ({len(cmp.flips)})",
    ]
    # counts are questions: never more than the run has, though metric rows may be
    n_questions = question_rows(store, LATEST, limit=1).total
    assert 0 < n.get("regression", 0) <= n_questions < len(cmp.regressions)
    assert n.sum() <= n_questions
    assert at.expander[-1].label == "All question × metric changes"
    regressed = at.dataframe(key="compare_questions_regression").value
    assert list(regressed["question_id"]) == list(
        cmp.questions.query("kind == 'regression'")["question_id"]
    )
    top = regressed.iloc[0]
    assert " → " in top["failure_change"] and top["failure_change"].startswith("ok")
    assert "→" in top["changes"] and "(−" in top["changes"]
    assert trace_names(at, 0) == [LATEST]


def test_compare_baseline_from_url_and_question_links(app, demo_results, store):
    at = app(demo_results, runs=[RUN_IDS[0], RUN_IDS[2]], baseline=RUN_IDS[2])
    open_page(at, "compare")
    assert at.selectbox(key="compare_baseline").value == RUN_IDS[2]
    cmp = compare_runs(store, [RUN_IDS[2], RUN_IDS[0]])
    at.session_state["compare_all_changes"] = True  # the per-metric tables, drawn when opened
    no_exception(at.run())
    regressions = at.dataframe(key="compare_regressions").value
    assert len(regressions) == len(cmp.regressions) > 0
    assert regressions["open"].iloc[0].startswith(f"question?run={RUN_IDS[0]}&question=")
    # the per-question tab links to the question in the candidate run, worst first
    regressed = at.dataframe(key="compare_questions_regression").value
    first = cmp.questions.iloc[0]
    assert first["kind"] == "regression"
    assert regressed["open"].iloc[0] == f"question?run={RUN_IDS[0]}&question={first.question_id}"
    # the tab lists questions whose every change is for the worse (mixed ones have their own)
    assert len(regressed) == (cmp.questions["kind"] == "regression").sum()
    assert len(regressed) <= cmp.regressions["question_id"].nunique()


def test_compare_draws_only_the_open_tab_and_expander(app, demo_results, store):
    # every table of a tab or expander went to the browser on each visit, shown or not: at
    # 1,000 questions they were most of the megabyte Compare sent
    at = open_page(app(demo_results), "compare")

    def drawn() -> set[str]:
        # a table without row selection has no key here: the identical settings are told
        # by their length, which the expander's label gives
        keys = {d.key for d in at.dataframe if d.key}
        n_same = int(next(e.label for e in at.expander if "identical" in e.label).split()[0])
        same = any(d.key is None and len(d.value) == n_same for d in at.dataframe)
        return keys | ({"identical settings"} if same else set())

    assert drawn() == {"compare_questions_regression"}
    cmp = compare_runs(store, [PREVIOUS, LATEST])
    improved = next(t.label for t in at.tabs if t.label.startswith("Improved questions"))
    at.session_state["compare_question_tab"] = improved
    at.session_state["compare_all_changes"] = True
    at.session_state["compare_config_same_open"] = True
    no_exception(at.run())
    assert drawn() == {"compare_questions_improvement", "compare_regressions", "identical settings"}
    assert list(at.dataframe(key="compare_questions_improvement").value["question_id"]) == list(
        cmp.questions.query("kind == 'improvement'")["question_id"]
    )
    at.session_state["compare_change_tab"] = f"Improvements ({len(cmp.improvements)})"
    at.session_state["compare_config_same_open"] = False
    no_exception(at.run())
    assert drawn() == {"compare_questions_improvement", "compare_improvements"}
    assert len(at.dataframe(key="compare_improvements").value) == len(cmp.improvements)


def test_compare_selecting_a_regressed_question_opens_it_in_the_candidate(app, demo_results, store):
    at = open_page(app(demo_results), "compare")
    first = compare_runs(store, [PREVIOUS, LATEST]).questions.iloc[0]
    key = "compare_questions_regression"
    at.session_state[key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    no_exception(at.run())
    assert texts(at.title) == ["Question"]
    assert at.query_params["run"] == LATEST and at.query_params["question"] == first.question_id
    assert texts(at.subheader)[0].startswith(f"{first.question_id} · ")


def _long_question_table() -> None:
    import pandas as pd

    from dashboard import ui

    rows = pd.DataFrame({"run_id": "r", "question_id": [f"q{i}" for i in range(5)]})
    ui.question_table(rows, ["question_id"], key="long", limit=3)


def test_a_long_question_table_draws_its_first_rows_and_says_how_many_are_left_out():
    # Compare at 20 runs × 1,000 questions changes ~18,000 questions: with row selection
    # every drawn row goes to the browser with its own link, so the page draws the worst.
    at = no_exception(AppTest.from_function(_long_question_table).run())
    shown = at.dataframe(key="long").value
    assert list(shown["question_id"]) == ["q0", "q1", "q2"]
    assert shown["open"].tolist() == [f"question?run=r&question=q{i}" for i in range(3)]
    assert texts(at.caption) == ["The first 3 of 5 rows are shown, in this order."]


def test_compare_warns_when_the_dataset_version_differs(app, results):
    manifest = results / LATEST / "manifest.json"
    m = json.loads(manifest.read_text())
    m["dataset"]["version"] = "999"
    manifest.write_text(json.dumps(m))
    at = open_page(app(results), "compare")
    assert any("deltas mix question-set changes" in w for w in texts(at.warning))


def test_navigation_links_carry_the_run(app, demo_results):
    at = open_page(app(demo_results, run=RUN_IDS[2]), "tails")
    links = {p.proto.label: p.proto.page for p in at.sidebar.get("page_link")}
    assert set(links) == set(PAGES_TITLES.values())  # every page, Review and Judge too
    hrefs = [p.proto.query_string for p in at.sidebar.get("page_link")]
    assert all(f"run={RUN_IDS[2]}" in h for h in hrefs)


def test_every_page_has_a_copy_link(app, demo_results):
    at = open_page(app(demo_results, run=LATEST, question="q002"), "question")
    assert any(c.startswith(f"question?run={LATEST}&question=q002") for c in texts(at.code))
    for page in PAGES[:-1]:
        at.switch_page(f"app_pages/{page}.py").run()
        no_exception(at)
        assert any(c.startswith(page) for c in texts(at.code)), (page, texts(at.code))


# ---------------------------------------------------------------------------- broken states


@pytest.mark.parametrize("page", ["runs", *PAGES])
def test_empty_results_say_how_to_make_runs(app, scratch, page):
    at = app(scratch / "nothing-here")
    if page != "runs":
        at.run()
        at.switch_page(f"app_pages/{page}.py")
    no_exception(at.run())
    info = " ".join(texts(at.info))
    assert "No runs yet" in info and "rageval demo" in info and "rageval run CONFIG.yaml" in info


def test_single_run_compare_explains_it_needs_two(app, demo_results, scratch):
    shutil.copytree(demo_results / LATEST, scratch / LATEST)
    at = no_exception(app(scratch).run())
    assert len(at.dataframe[0].value) == 1
    at.switch_page("app_pages/compare.py").run()
    no_exception(at)
    assert any("needs at least two runs" in i for i in texts(at.info))


def test_corrupt_run_gets_a_banner_and_the_rest_works(app, results):
    broken = make_corrupt(results)
    at = no_exception(app(results).run())
    banner = " ".join(texts(at.warning))
    assert broken in banner and "not valid JSON" in banner
    assert len(at.dataframe[0].value) == len(RUN_IDS)
    for page in PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        no_exception(at)
        assert broken in " ".join(texts(at.warning))


def test_deep_link_to_a_corrupt_run_is_a_message(app, results):
    broken = make_corrupt(results)
    at = open_page(app(results, run=broken, question="q001"), "question")
    assert any(escape_word(f"Run '{broken}' not found") in e for e in texts(at.error))


def test_running_run_is_shown_in_progress_and_can_be_diagnosed(app, results):
    make_running(results, LATEST, keep=40)
    at = no_exception(app(results).run())
    assert any(LATEST in i for i in texts(at.sidebar.info))
    table = at.dataframe[0].value
    assert table.loc[table["run_id"] == LATEST, "status"].item() == "running"
    assert any("running" in i for i in texts(at.info))
    at.switch_page("app_pages/diagnose.py").run()
    no_exception(at)
    assert texts(at.subheader)[0].split(" questions")[0].endswith("of 40")
    assert at.selectbox(key="diagnose_run").format_func(LATEST) == f"{LATEST} (running)"


def test_abandoned_run_is_shown_stale_with_the_resume_hint(app, results, monkeypatch):
    # A writer killed with -9 leaves its run "running"; nothing in its folder changes again.
    make_running(results, LATEST, keep=40)
    make_running(results, PREVIOUS, keep=10)  # this one is still being written
    long_ago = time.time() - 600
    for f in (results / LATEST).iterdir():
        os.utime(f, (long_ago, long_ago))
    monkeypatch.setenv(STALE_ENV, "300")
    at = no_exception(app(results).run())

    hint = f"rageval run CONFIG.yaml --resume {LATEST}"
    stale = [w for w in texts(at.sidebar.warning) if LATEST in w]
    assert len(stale) == 1 and "Stale" in stale[0] and hint in stale[0], stale
    assert not [i for i in texts(at.sidebar.info) if LATEST in i]
    assert any(PREVIOUS in i and "In progress" in i for i in texts(at.sidebar.info))
    assert any(hint in w for w in texts(at.warning)), texts(at.warning)  # the latest run
    table = at.dataframe[0].value
    assert table.loc[table["run_id"] == LATEST, "status"].item() == "stale"
    assert table.loc[table["run_id"] == PREVIOUS, "status"].item() == "running"


def test_untrusted_text_in_a_run_is_escaped_on_the_page(app, results):
    payload = '<img src=x onerror=alert(1)><script>alert("x")</script>'
    make_running(results, LATEST, keep=3)
    journal = results / LATEST / "questions.jsonl"
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    row = rows[0]
    row["answer"] = f"Fine. {payload}"
    row["question"] = payload
    row["claims"] = [
        {
            "text": payload,
            "verdict": "contradicted",
            "evidence_chunk_id": None,
            "evidence": None,
            "reason": payload,
        }
    ]
    row["retrieved_texts"] = [payload] * len(row["retrieved_texts"])
    journal.write_text("".join(json.dumps(r) + "\n" for r in rows))
    at = open_page(app(results, run=LATEST, question=row["question_id"]), "question")
    body = "\n".join(texts(at.markdown))
    assert "<script" not in body and "<img" not in body
    assert "&lt;img src=x onerror=alert(1)&gt;" in body
    assert '<mark class="rageval-contradicted"' in body


def test_compare_lists_the_largest_significant_change_first(app, demo_results, store):
    base, cand = RUN_IDS[3], RUN_IDS[-1]  # bm25-rerank-top5 against verbose: one moved
    at = no_exception(open_page(app(demo_results, runs=[base, cand], baseline=base), "compare"))
    (table,) = [d.value for d in at.dataframe if "definition" in d.value.columns]
    rows = compare_runs(store, [base, cand]).metrics
    moved = rows[(rows["run_id"] == cand) & rows["significant"].astype(bool)]
    largest = moved.loc[moved["delta"].abs().idxmax()]
    assert table["metric"].iloc[0] == BUILTIN.label(largest["metric"])
    assert table["delta"].iloc[0] == pytest.approx(largest["delta"])
    assert table["change"].iloc[0] == BUILTIN.metric(largest["metric"]).reading(largest["delta"])
    # significant first, then the rest; an interval that includes 0 reads "same"
    sig = table["significant"].astype(bool).tolist()
    assert sig == sorted(sig, reverse=True) and not all(sig)
    assert set(table.loc[~table["significant"].astype(bool), "change"]) <= {"same", "no delta"}
    assert table["definition"].str.len().gt(0).all()


def test_diagnose_shows_the_failing_questions_columns_first_and_the_url_keeps_a_choice(
    app, demo_results
):
    """Question, failure type, faithfulness, unsupported claims and the retrieval figure
    that explains a miss (span recall: the demo's latest run is scored by spans); the rest
    behind the column chooser, whose choice is in the URL."""
    at = no_exception(app(demo_results, run=LATEST).switch_page("app_pages/diagnose.py").run())
    first = ["question", "failure_type", "faithfulness", "n_unsupported_claims"]
    default = [*first, "span_recall_at_5"]
    assert at.multiselect(key="diagnose_columns").value == default
    assert list(at.dataframe[-1].value.columns) == ["open", "question_id", *default]
    assert "cols" not in at.query_params
    at.multiselect(key="diagnose_columns").set_value(["mrr", "tags"]).run()
    assert list(at.dataframe[-1].value.columns) == ["open", "question_id", "mrr", "tags"]
    assert at.query_params["cols"] == ["mrr", "tags"]
    for cols, shown in ((["tags"], ["tags"]), (["tags", "nope"], default)):
        shared = app(demo_results, run=LATEST, cols=cols).switch_page("app_pages/diagnose.py")
        shared = no_exception(shared.run())
        assert list(shared.dataframe[-1].value.columns) == ["open", "question_id", *shown]
    assert any("cols" in e.value and "unknown column" in seen(e.value) for e in shared.error)
