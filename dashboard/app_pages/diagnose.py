"""Diagnose: one run's failures by kind (with its faithfulness, the claims people checked
and the judge's kappa on them) and the filterable per-question table, worst first; the
figures the run cannot have (no gold, no references, not judged) left out with one note."""

import streamlit as st

from dashboard import data, ui
from dashboard.shaping import (
    coverage_columns,
    default_columns,
    failure_headline,
    quality_metrics,
    slider_range,
)
from dashboard.verdicts import gaps_note, keep
from rageval_core import charts, numbers
from rageval_core.catalogue import TABLE_COLUMNS, failure_label
from rageval_core.links import MAX_SEARCH
from rageval_core.mismatch import run_warnings
from rageval_core.models import FAILURE_TYPES
from rageval_core.page_states import QuestionState, RunContext
from rageval_core.query import SORT_KEYS, QuestionFilter

PAGE_SIZE = 50
ANSWERABLE = {None: "any", True: "answerable", False: "unanswerable"}
FILTER_FIELDS = ("run", "search", "failure_types", "question_tags", "answerable", "ranges", "sort")

page = ui.start("diagnose")
state = page.state
runs = ui.require_runs()
run = ui.pick_run(runs, state.run, key="diagnose_run")
cat = data.run_catalogue(run)  # built-in metrics plus the ones this run declares
RANGE_METRICS = quality_metrics(cat)
SORTS = (*SORT_KEYS, *cat.declared_names)

gaps = data.unavailable(run)
if gaps:
    st.info(gaps_note(gaps), icon=":material/info:")
warned, _ = run_warnings(data.runs(), only={run})
if warned:
    ui.banner_lines("Retrieval figures of this run may read as misses:", warned)
no_gold = data.no_retrieval_gold(run)
if no_gold:
    st.caption(
        f"{no_gold} answerable question(s) have no retrieval gold (no gold_chunk_ids or "
        "gold_spans in the dataset): their retrieval figures are not computed, and they are "
        "never a retrieval or ranking miss."
    )
cut = data.cut_gold_spans(run)
if cut.n_spans:
    st.caption(
        f"{cut.n_cut} of {cut.n_spans} gold spans are cut by a chunk boundary: the top "
        f"{cut.k} chunks cover only part of them (span recall counts the part covered)."
    )
counts = data.failure_counts([run])
st.subheader(failure_headline(dict(zip(counts["failure_type"], counts["n"], strict=True))))
trust = coverage_columns([run], data.run_coverage((run,))).iloc[0]  # this run only
c = st.columns([1, 1, 1, 2], vertical_alignment="bottom")
ui.tile(c[0], cat.entry("faithfulness"), runs.loc[runs["run_id"] == run, "faithfulness"].iloc[0])
c[1].metric(
    "claims checked by people",
    trust["claims checked"],
    help="claims of this run a person labelled, of all the judge checked (docs/review.md)",
)
c[2].metric(
    "judge κ on them",
    numbers.agreement(trust["judge κ"]),
    help="Cohen's kappa of the judge against people on those claims: 1 = always agree, "
    "0 = no better than chance (docs/review.md)",
)
with c[3]:
    ui.link("judge", "How far to trust the judge", RunContext(run=run))
ui.chart(charts.failure_breakdown(counts), key="diagnose_breakdown")

st.subheader("Questions")
c = st.columns([3, 3, 3, 2])
search = c[0].text_input(
    "Search question or answer",
    value=state.search or "",
    max_chars=MAX_SEARCH,
    key="diagnose_search",
)
failure_types = c[1].multiselect(
    "Failure types",
    FAILURE_TYPES,
    default=list(state.failure_types),
    format_func=failure_label,
    key="diagnose_failure_types",
)
tags = c[2].multiselect(
    "Tags",
    sorted({*data.question_tags(run), *state.question_tags}),
    default=list(state.question_tags),
    key="diagnose_tags",
)
answerable = c[3].selectbox(
    "Answerable",
    list(ANSWERABLE),
    index=list(ANSWERABLE).index(state.answerable),
    format_func=ANSWERABLE.__getitem__,
    key="diagnose_answerable",
)

c = st.columns([3, 3, 2])
url_range = next((r for r in state.ranges if r[0] in RANGE_METRICS), None)
range_options = [None, *RANGE_METRICS]
range_metric = c[0].selectbox(
    "Metric range",
    range_options,
    index=range_options.index(url_range[0] if url_range else None),
    format_func=lambda m: "no range" if m is None else cat.question_label(m),
    key="diagnose_range_metric",
)
bounds = cat.bounds(range_metric) if range_metric else (0.0, 1.0)
lo, hi = c[1].slider(
    "Between",
    *bounds,
    step=(bounds[1] - bounds[0]) / 20,
    disabled=range_metric is None,
    value=slider_range(*(url_range[1:] if url_range else (None, None)), bounds),
    key=f"diagnose_range_{range_metric}",  # its bounds are the metric's
)
sort = c[2].selectbox(
    "Sort (worst first)",
    SORTS,
    index=SORTS.index(state.sort if state.sort in SORTS else "severity"),
    format_func=lambda m: cat.question_label(m),
    key="diagnose_sort",
)

view = state.shared().with_(
    run=run,
    search=search.strip() or None,
    failure_types=tuple(failure_types),
    question_tags=tuple(tags),
    answerable=answerable,
    # rounded as the URL writes them, so an unchanged slider compares equal
    ranges=((range_metric, round(lo, 4), round(hi, 4)),) if range_metric else (),
    sort=None if sort == "severity" else sort,
    page=state.page,
    columns=state.columns,
)
# New filters start on the first page. Only the table's own fields count: a URL may carry
# others (a link from another page carries its own) that this view drops.
# A URL without a (known) run shows the newest: that default is no change of run either.
before = state.with_(run=ui.run_or_newest(runs, state.run))
if any(getattr(view, f) != getattr(before, f) for f in FILTER_FIELDS):
    view = view.with_(page=0)
filters = QuestionFilter(
    failure_types=view.failure_types,
    tags=view.question_tags,
    metric_ranges=view.ranges,
    search=view.search,
    answerable=view.answerable,
)
result = data.question_rows(run, filters, sort=sort, limit=PAGE_SIZE, offset=view.page * PAGE_SIZE)
if result.total and view.page * PAGE_SIZE >= result.total:  # a URL past the last page
    view = view.with_(page=(result.total - 1) // PAGE_SIZE)
    result = data.question_rows(
        run, filters, sort=sort, limit=PAGE_SIZE, offset=view.page * PAGE_SIZE
    )
# the columns a run has (a metric the run's catalogue does not define has none); the
# chooser's choice travels in the URL only when it is not the default
offered = [c for c in keep([*TABLE_COLUMNS, *cat.declared_names], gaps) if c in result.rows.columns]
default = [c for c in (*default_columns(result.rows), *cat.declared_names) if c in offered]
chosen_columns = st.multiselect(
    "Columns",
    offered,
    default=[c for c in view.columns if c in offered] or default,
    format_func=lambda c: cat.label(c) if c in cat.measures else c.replace("_", " "),
    key="diagnose_columns",
)
view = view.with_(columns=() if chosen_columns == default else tuple(chosen_columns))
page.publish(view)

for problem in result.problems:
    ui.say("warning", problem)
if result.rows.empty:
    st.info("No question matches these filters.")
    st.stop()

first = view.page * PAGE_SIZE
st.caption(
    f"Questions {first + 1}–{first + len(result.rows)} of {result.total} matching. "
    "Select a row or use its link to open the question."
)
ui.question_table(
    result.rows,
    ["question_id", *chosen_columns],
    key="diagnose_table",
    run_id=run,
    config={"question": st.column_config.TextColumn(width="medium")},
)

c = st.columns([1, 1, 4])
last_page = (result.total - 1) // PAGE_SIZE
for col, text, target, enabled in (
    (c[0], "Previous page", view.page - 1, view.page > 0),
    (c[1], "Next page", view.page + 1, view.page < last_page),
):
    if col.button(text, disabled=not enabled, key=f"diagnose_{text.split()[0].lower()}"):
        ui.go("diagnose", view.with_(page=target))

c = st.columns([4, 1], vertical_alignment="bottom")
chosen = c[0].selectbox(
    "Question on this page", list(result.rows["question_id"]), key="diagnose_question"
)
if c[1].button("Open question", key="diagnose_open"):
    ui.go("question", QuestionState(run=run, question=chosen))
