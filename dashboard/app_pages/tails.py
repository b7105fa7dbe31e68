"""Tails: the questions a mean hides — distributions per run, mean vs p10 over time, and
the bottom 10% of one run."""

import pandas as pd
import streamlit as st

from dashboard import charts, data, ui
from dashboard.links import CHARTS
from dashboard.shaping import label
from rageval_core.query import QUALITY_METRICS

DEFAULT_RUNS = 3
BOTTOM_PCT = 10

page = ui.start("tails")
state = page.state
runs = ui.require_runs()

c = st.columns([2, 1])
metric = c[0].selectbox(
    "Metric",
    QUALITY_METRICS,
    format_func=label,
    key="tails_metric",
    index=QUALITY_METRICS.index(
        state.metric if state.metric in QUALITY_METRICS else "answer_correctness"
    ),
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
    list(runs["run_id"].head(DEFAULT_RUNS)),
    key="tails_runs",
    label="Runs to overlay",
)
run = ui.pick_run(runs, state.run, key="tails_run", label="Run for the bottom 10%")
page.publish(state.shared().with_(metric=metric, chart=kind, runs=tuple(chosen), run=run))

ui.chart(charts.trend(data.metric_trend(metric), metric), key="tails_trend")

if chosen:
    values = pd.concat(
        [data.metric_distribution(r, metric).assign(run_id=r) for r in chosen], ignore_index=True
    )
    ui.chart(charts.distributions(values, metric, kind), key="tails_distribution")
else:
    st.info("Pick at least one run to see its distribution.")

st.subheader(f"Bottom {BOTTOM_PCT}% of {run} on {label(metric)}")
bottom = data.bottom_questions(run, metric, pct=BOTTOM_PCT)
if bottom.empty:
    st.info(f"No question of this run has a value for {label(metric)}.")
else:
    st.caption(f"{len(bottom)} questions at or below {bottom['threshold'].iloc[0]:.3f}.")
    ui.question_table(
        bottom,
        ["question_id", "question", "failure_type", "value", "tags"],
        key="tails_bottom",
        run_id=run,
    )
