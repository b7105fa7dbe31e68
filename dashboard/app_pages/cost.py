"""Cost & latency: quality against p95 latency and cost per question, the Pareto frontier
with dominated runs marked, and latency per pipeline stage."""

import streamlit as st

from dashboard import data, ui
from rageval_core import charts
from rageval_core.links import md_escape

MAX_STAGE_RUNS = 30  # newest runs in the per-stage chart
# Not correctness: a run that answers from memory is correct but unsupported, and on
# correctness it dominates every grounded run, a misleading first view. Not faithfulness
# either: a run that retrieves nothing and says little is faithful, and sat on the frontier.
DEFAULT_QUALITY = "recall_at_5"
LATENCY, COST = "total_ms_p95", "total_cost_per_question"  # what the two x axes hold

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
    "Any quality figure can go on the y axis. Recall@5 is shown first: a run can be "
    "correct without being supported by what it retrieved (answering from memory), and "
    "faithful while retrieving nothing useful; see both per question on Compare or Diagnose."
)
page.publish(state.shared().with_(metric=quality))

points = data.cost_quality(quality=quality)
if points.empty:
    ui.say("info", f"No run has a value for {label(quality)}.")
    st.stop()
c = st.columns(2)
with c[0]:
    ui.chart(
        charts.pareto(points, "latency_p95_ms", "dominated_latency", quality, LATENCY, cat),
        key="cost_latency",
    )
with c[1]:
    ui.chart(
        charts.pareto(points, "cost_per_question", "dominated_cost", quality, COST, cat),
        key="cost_cost",
    )
st.caption(
    " · ".join(
        f"**{md_escape(cat.entry(m).label)}**: {cat.help(m)}" for m in (quality, LATENCY, COST)
    )
)
st.caption(
    "A run is dominated when another is at least as good on quality and at least as "
    "cheap on the axis, and strictly better on one. Frontier runs are the only ones worth "
    "choosing between."
)
for flag, m in (("dominated_latency", LATENCY), ("dominated_cost", COST)):
    if unknown := points.loc[points[flag].isna(), "run_id"].tolist():  # no value, not $0
        st.caption(
            f"Left off the {md_escape(cat.label(m))} chart, no question reported one: "
            + ", ".join(f"`{md_escape(r)}`" for r in unknown)
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
st.dataframe(  # the runs the charts show, by name: hover a point for the same
    table,
    hide_index=True,
    width="stretch",
    key="cost_table",
    column_config={
        "quality": st.column_config.NumberColumn(
            label(quality), help=cat.help(quality), format=cat.entry(quality).column_format()
        ),
        **{
            col: st.column_config.NumberColumn(
                cat.label(m), help=cat.help(m), format=cat.entry(m).column_format()
            )
            for col, m in (("latency_p95_ms", LATENCY), ("cost_per_question", COST))
        },
    },
)

ui.chart(
    charts.stage_latency(runs.head(MAX_STAGE_RUNS).iloc[::-1]),
    key="cost_stages",
    metrics=[cat.entry("retrieval_ms_p95"), cat.entry("generation_ms_p95")],
)
