"""Compare: two or more runs against a baseline — what changed in the config, which metrics
moved (paired bootstrap intervals), and which questions regressed, improved or flipped."""

import streamlit as st

from dashboard import data, ui
from dashboard.diffs import show_answer_diff
from dashboard.shaping import (
    QUESTION_CHANGE_TABS,
    default_compare,
    metric_changes,
    paired_deltas,
    split_config_diff,
    split_question_changes,
)
from rageval_core import charts
from rageval_core.catalogue import READING_A_CHANGE, SECTIONS
from rageval_core.errors import RagevalError
from rageval_core.links import md_escape
from rageval_core.page_states import QuestionState

QUESTION_COLUMNS = ["run_id", "question_id", "question", "failure_change", "flaky_note", "changes"]
# Rows drawn per table, in its order (questions worst first): 20 runs of 1,000 questions
# change ~18,000 questions and ~70,000 question × metric pairs, more than anyone reads and
# than a rerun can draw in 1 s.
TABLE_ROWS = 1_000
EMPTY = {
    "regression": "No question got worse.",
    "improvement": "No question got better.",
    "mixed": "No question got better on some metrics and worse on others.",
}
CHANGE_COLUMNS = [
    "run_id",
    "question_id",
    "question",
    "metric",
    "base",
    "value",
    "delta",
    "base_failure_type",
    "failure_type",
]

page = ui.start("compare")
state = page.state
runs = ui.require_runs()
if len(runs) < 2:
    st.info(
        "Compare needs at least two runs and there is only one so far. Change one thing "
        "in your config, run `rageval run CONFIG.yaml` again, then come back here."
    )
    page.publish(state.shared())
    st.stop()

wanted = ([state.baseline] if state.baseline else []) + [
    r for r in state.runs if r != state.baseline
]
chosen = ui.pick_runs(
    runs, wanted, default_compare(runs), key="compare_runs", label="Runs to compare"
)
if len(chosen) < 2:
    page.publish(state.shared().with_(runs=tuple(chosen), baseline=None))
    st.info("Pick at least two runs to compare.")
    st.stop()
baseline = st.selectbox(
    "Baseline",
    chosen,
    key="compare_baseline",
    index=chosen.index(state.baseline) if state.baseline in chosen else 0,
)
chosen_state = state.shared().with_(runs=tuple(chosen), baseline=baseline)

try:
    cmp = data.compare_runs([baseline, *(r for r in chosen if r != baseline)])
except RagevalError as exc:
    page.publish(chosen_state)
    ui.say("error", f"Cannot compare these runs: {exc}")
    st.stop()
for w in cmp.warnings:  # they name runs, configs and datasets: text from manifests
    st.warning(md_escape(w), icon=":material/warning:")

st.subheader("Config differences")
differing, same = split_config_diff(cmp.config_diff)
if differing.empty:
    st.info("The configs are identical.")
else:
    st.dataframe(differing, hide_index=True, width="stretch", key="compare_config_diff")
# Closed expanders and unselected tabs draw nothing (on_change="rerun" makes them lazy): at
# 1,000 questions their tables were most of the megabyte this page sent on every visit.
identical = st.expander(
    f"{len(same)} identical settings", key="compare_config_same_open", on_change="rerun"
)
if identical.open:
    with identical:
        st.dataframe(same, hide_index=True, width="stretch", key="compare_config_same")

st.subheader("Metric changes against the baseline")
moved, unpaired = paired_deltas(cmp.metrics, cmp.baseline)
for reason in unpaired:
    st.info(reason)
st.dataframe(
    metric_changes(cmp.metrics, cmp.baseline, cmp.catalogue),
    hide_index=True,
    width="stretch",
    key="compare_metrics",
    column_config={
        "change": st.column_config.TextColumn(
            "change",
            help="better / worse beyond its noise; same: the 95% interval includes 0",
        ),
        "baseline": st.column_config.NumberColumn("baseline", format="%.3f"),
        **{
            c: st.column_config.NumberColumn(c, format="%.3f")
            for c in ("mean", "delta", "ci_low", "ci_high")
        },
        "definition": st.column_config.TextColumn("what it measures", width="large"),
    },
)
st.caption(
    "What changed first: significant changes, largest first, then the rest; metrics no "
    "run has are left out. Deltas are paired over the questions both runs answered; the "
    "interval is a 95% paired bootstrap. `significant` = the interval excludes 0; `note` "
    "says why a delta is missing. [How a change is read]"
    f"({SECTIONS[READING_A_CHANGE].link})"
)
if not moved.empty:
    ui.chart(
        charts.metric_deltas(moved, cmp.catalogue),
        key="compare_deltas",
        metrics=[cmp.catalogue.entry(m) for m in moved["metric"].unique()],
    )

st.subheader("Questions that changed")
st.caption(
    f"One row per question (and candidate run): its failure-type change and every metric "
    f"that moved by more than {cmp.tolerance:g}. Mixed = some better, some worse. Worst "
    "first: flips to a failure, then the largest drop. Select a row to open the question "
    "in that run."
)
by_kind = split_question_changes(cmp.questions)
tabs = st.tabs(
    [f"{QUESTION_CHANGE_TABS[k]} ({len(rows)})" for k, rows in by_kind.items()],
    key="compare_question_tab",
    on_change="rerun",
)
for tab, (kind, rows) in zip(tabs, by_kind.items(), strict=True):
    if not tab.open:
        continue
    with tab:
        if rows.empty:
            st.info(EMPTY[kind])
        else:
            ui.question_table(
                rows,
                QUESTION_COLUMNS,
                key=f"compare_questions_{kind}",
                limit=TABLE_ROWS,
                config={
                    "failure_change": st.column_config.TextColumn("failure type"),
                    "flaky_note": st.column_config.TextColumn(
                        "known flaky", help="the question flips across runs of this config"
                    ),
                    "changes": st.column_config.TextColumn("changes", width="large"),
                },
            )

st.subheader("What changed in an answer")
changed = cmp.questions.drop_duplicates("question_id")
if changed.empty:
    page.publish(chosen_state)
    st.info("No question changed beyond the tolerance.")
else:
    qids = list(changed["question_id"])
    kinds = dict(zip(qids, changed["kind"], strict=True))  # one lookup per option, not a frame
    c = st.columns([2, 2])
    qid = c[0].selectbox(
        "Question",
        qids,
        index=qids.index(state.question) if state.question in qids else 0,
        key="compare_diff_question",
        format_func=lambda q: f"{q} · {kinds[q]}",
    )
    others = [r for r in cmp.run_ids if r != baseline]
    diff_run = c[1].selectbox("Against the baseline, in run", others, key="compare_diff_run")
    page.publish(chosen_state.with_(question=qid))  # the question too: a link shows its diff
    note = changed.set_index("question_id").loc[qid, "flaky_note"]
    if note:  # names the config: text from a manifest
        st.warning(f"Known flaky question: {md_escape(note)}.", icon=":material/casino:")
    show_answer_diff(data.answer_diff(baseline, diff_run, qid), key="compare")
    ui.link("question", f"Open {qid} in {diff_run}", QuestionState(run=diff_run, question=qid))

every_change = st.expander(
    "All question × metric changes", key="compare_all_changes", on_change="rerun"
)
with every_change:
    st.caption(
        "One row per question and metric; a flip goes between ok and a failure and has no "
        "value of its own."
    )
    detail = {
        "regressions": cmp.regressions,
        "improvements": cmp.improvements,
        "flips": cmp.flips,
    }
    tabs = st.tabs(
        [f"{name.capitalize()} ({len(rows)})" for name, rows in detail.items()],
        key="compare_change_tab",
        on_change="rerun",
    )
    for tab, (name, rows) in zip(tabs, detail.items(), strict=True):
        if not (every_change.open and tab.open):
            continue
        with tab:
            if rows.empty:
                st.info(f"No {name}.")
            else:
                ui.question_table(rows, CHANGE_COLUMNS, key=f"compare_{name}", limit=TABLE_ROWS)
