"""Cost & latency: quality against p95 latency and cost per question, the Pareto frontier
with dominated runs marked, and latency per pipeline stage."""

import streamlit as st

from dashboard import data, ui
from rageval_core import charts

MAX_STAGE_RUNS = 30  # newest runs in the per-stage chart
# Not correctness: a run that answers from memory is correct but unsupported, and on
# correctness it dominates every grounded run, a misleading first view.
DEFAULT_QUALITY = "faithfulness"

page = ui.start("cost")
state = page.state
runs = ui.require_runs()
cat = data.catalogue()  # built-in metrics plus the ones runs declare
options = data.cost_quality_metrics()
label = cat.label

quality = st.selectbox(
    "Quality metric",
    options,
    format_func=label,
    key="cost_metric",
    index=options.index(state.metric if state.metric in options else DEFAULT_QUALITY),
)
st.caption(
    "A run can be correct without being supported by what it retrieved (answering from "
    "memory), so faithfulness is shown first; see both per question on Compare or Diagnose."
)
page.publish(state.shared().with_(metric=quality))

points = data.cost_quality(quality=quality)
if points.empty:
    st.info(f"No run has a value for {label(quality)}.")
    st.stop()
c = st.columns(2)
with c[0]:
    ui.chart(
        charts.pareto(
            points, "latency_p95_ms", "dominated_latency", quality, "p95 latency (ms)", cat
        ),
        key="cost_latency",
    )
with c[1]:
    ui.chart(
        charts.pareto(
            points, "cost_per_question", "dominated_cost", quality, "cost per question ($)", cat
        ),
        key="cost_cost",
    )
st.caption(
    "A run is dominated when another is at least as good on quality and at least as "
    "cheap on the axis, and strictly better on one. Frontier runs are the only ones worth "
    "choosing between."
)
table = points[
    [
        "run_id",
        "config_name",
        "quality",
        "latency_p95_ms",
        "cost_per_question",
        "dominated_latency",
        "dominated_cost",
        "dominated",
    ]
]
st.dataframe(
    table.rename(columns={"quality": label(quality)}),
    hide_index=True,
    width="stretch",
    key="cost_table",
)

ui.chart(charts.stage_latency(runs.head(MAX_STAGE_RUNS).iloc[::-1]), key="cost_stages")
