"""Tails: the questions a mean hides — distributions per run, mean vs p10 over time, the
questions whose outcome flips across runs of one config (flaky), and the bottom 10% of
one run."""

import pandas as pd
import streamlit as st

from dashboard import data, ui
from dashboard.shaping import newest_with, quality_metrics
from rageval_core import charts
from rageval_core.catalogue import BUILTIN
from rageval_core.links import CHARTS
from rageval_core.query import TAIL_PCT

DEFAULT_RUNS = 3

page = ui.start("tails")
state = page.state
runs = ui.require_runs()
cat = data.catalogue()  # built-in metrics plus the ones runs declare
options = quality_metrics(cat)

c = st.columns([2, 1])
metric = c[0].selectbox(
    "Metric",
    options,
    format_func=cat.label,
    key="tails_metric",
    index=options.index(state.metric if state.metric in options else "answer_correctness"),
)
kind = c[1].radio(
    "Distribution as",
    CHARTS,
    index=CHARTS.index(state.chart or "ecdf"),
    horizontal=True,
    key="tails_chart",
)
chosen = ui.pick_runs(
    runs,
    state.runs,
    newest_with(runs, metric, DEFAULT_RUNS),
    key="tails_runs",
    label="Runs to overlay",
)
run = ui.pick_run(runs, state.run, key="tails_run", label=f"Run for the bottom {TAIL_PCT:g}%")
page.publish(state.shared().with_(metric=metric, chart=kind, runs=tuple(chosen), run=run))

ui.chart(
    charts.config_trend(data.metric_trend(metric), metric, cat),  # one line per config
    key="tails_trend",
    metrics=[cat.entry(metric), cat.entry(f"{metric}_p10")],
)

name = cat.label(metric)
# a declared metric exists only in the runs that declare it; a built-in one in every run
# (each run_catalogue call looks its run up among all of them: 10,000 at scale)
having = [
    r for r in chosen if metric in BUILTIN.measures or metric in data.run_catalogue(r).measures
]
if having:
    values = pd.concat(
        [data.metric_distribution(r, metric).assign(run_id=r) for r in having], ignore_index=True
    )
    ui.chart(
        charts.distributions(values, metric, kind, cat),
        key="tails_distribution",
        metrics=[cat.measures[metric]],
    )
else:
    ui.say("info", f"Pick at least one run with {name} to see its distribution.")

st.subheader("Flaky questions")
flaky = data.run_flaky(run)
if flaky.empty:
    st.caption(
        f"No question flips between ok and a failure across the runs of {run}'s config on "
        "its dataset version (a question needs two runs of one config to flip)."
    )
else:
    st.caption(
        f"{len(flaky)} question(s) flip between ok and a failure, or across 0.5 correctness, "
        f"over runs of the config of {run} on its dataset version, most flips first: a "
        "regression on one of these may be noise. Compare marks them as known flaky."
    )
    ui.question_table(
        flaky,
        ["question_id", "flaky_note", "n_runs", "n_ok", "verdict_flips", "correctness_flips"],
        key="tails_flaky",
        run_id=run,
        config={"flaky_note": st.column_config.TextColumn("how often")},
    )

st.subheader(f"Bottom {TAIL_PCT:g}% of {run} on {name}")
if metric not in data.run_catalogue(run).measures:
    ui.say("info", f"Run {run} does not record {name}.")
    st.stop()
tail = data.bottom_questions(run, metric)
if tail.rows.empty:
    ui.say("info", f"No question of this run has a value for {name}.")
else:
    st.caption(f"Showing the {tail.describe(name)}.")
    m = cat.measures[metric]
    ui.question_table(
        tail.rows,
        ["question_id", "question", "failure_type", "value", "tags"],
        key="tails_bottom",
        run_id=run,
        config={
            "value": st.column_config.NumberColumn(
                cat.question_label(metric), help=m.help, format=m.column_format()
            )
        },
    )
