"""Runs: every run newest first, key metrics with deltas (and, beside faithfulness, how
many claims people checked and the judge's kappa on them), trends and failure shares."""

import pandas as pd
import streamlit as st

from dashboard import data, ui
from dashboard.shaping import (
    TABLE_RUNS,
    coverage_columns,
    distinct,
    key_metrics,
    quality_metrics,
    run_links,
    stale_note,
    tile_metrics,
    with_deltas,
)
from dashboard.shaping import run_tags as tag_options
from dashboard.verdicts import gaps_note, keep_figures
from rageval_core import charts
from rageval_core.errors import RagevalError
from rageval_core.mismatch import run_notes, run_warnings
from rageval_core.origin import origin_label
from rageval_core.page_states import DiagnoseState
from rageval_core.query import figure_covered, intervals, latency_spreads

MAX_BARS = 60  # newest runs in the failure-share chart; more bars stop being readable
DELTA_HELP = (
    "this run minus its previous run: the newest complete run created before it with the "
    "same config name and dataset version (empty when there is none)"
)

page = ui.start("runs")
state = page.state
all_runs = ui.require_runs()
cat = data.catalogue()  # built-in metrics plus the ones runs declare
KEY_METRICS = key_metrics(cat)
PAIRED = tuple(m for m in KEY_METRICS if m in cat.measure_names("compare"))  # with intervals
TREND = quality_metrics(cat)

cols = st.columns(3)
tags = cols[0].multiselect(
    "Tags",
    sorted({*tag_options(all_runs), *state.run_tags}),
    default=list(state.run_tags),
    key="runs_tags",
    accept_new_options=True,
)
configs = distinct(all_runs["config_name"])
config = cols[1].selectbox(
    "Config",
    configs,
    index=configs.index(state.config) if state.config in configs else None,
    key="runs_config",
    placeholder="all configs",
)
versions = distinct(all_runs["dataset_version"])
version = cols[2].selectbox(
    "Dataset version",
    versions,
    index=versions.index(state.dataset_version) if state.dataset_version in versions else None,
    key="runs_dataset_version",
    placeholder="all versions",
)
metric = st.selectbox(
    "Trend metric",
    TREND,
    index=TREND.index(state.metric if state.metric in TREND else "recall_at_5"),
    key="runs_metric",
    format_func=cat.label,
)
page.publish(
    state.shared().with_(
        run_tags=tuple(tags), config=config, dataset_version=version, metric=metric
    )
)

filters = dict(tags=tuple(tags), config=config, dataset_version=version)
# No filter: the overview read above (a second query of every run cost 0.1 s at 10,000)
runs = data.runs_overview(**filters) if tags or config or version else all_runs
if runs.empty:
    st.info("No run matches these filters.")
    st.stop()

runs = with_deltas(runs, KEY_METRICS, all_runs)  # against each run's previous run
latest = runs.iloc[0]
st.subheader(f"Latest run: {latest['run_id']}")
stale = {r.run_id: r for r in data.runs() if r.stale}
if latest["run_id"] in stale:
    st.warning(stale_note(stale[latest["run_id"]]), icon=":material/warning:")
elif latest["status"] != "complete":
    st.info(f"This run is {latest['status']}: figures cover the questions answered so far.")
paired: dict[str, tuple[float, float]] = {}
previous = latest.get("previous_run")
# only the tiles with a Δ (none while a first start summarises: 0.5 s at 1,000 questions)
judged = tuple(m for m in PAIRED if pd.notna(latest[f"{m}_delta"]))
if isinstance(previous, str) and previous and judged:  # a change within its noise is grey
    pair = [previous, str(latest["run_id"])]
    try:
        paired = intervals(data.compare_runs(pair, metrics=judged).metrics, pair[1])
    except RagevalError:  # a run that cannot be read: the Δ is judged by its sign
        paired = {}
same = data.same_settings(str(latest["run_id"]))
spreads = latency_spreads(all_runs, str(latest["run_id"]), KEY_METRICS, same, cat)
gaps = data.unavailable(str(latest["run_id"]))
if gaps:
    st.info(gaps_note(gaps), icon=":material/info:")
metric_cols = st.columns(5)
for i, m in enumerate(tile_metrics(keep_figures(list(KEY_METRICS), gaps, cat), latest)):
    figure, delta = cat.entry(m), latest[f"{m}_delta"]
    reading = figure.reading(delta, paired.get(m), spreads.get(m))
    label = figure_covered(figure.label, m, latest)  # a cost some questions lack says so
    ui.tile(metric_cols[i % 5], figure, latest[m], delta, reading, label)
st.caption(
    "Δ against the run's previous run (same config and dataset version). Grey: within its "
    "noise (a paired 95% interval that includes 0, or for latency the spread of earlier "
    "runs of the config with the same settings)."
)
if st.button("Diagnose latest run", type="primary", key="runs_diagnose_latest"):
    ui.go("diagnose", DiagnoseState(run=str(latest["run_id"])))

st.subheader(f"All runs ({len(runs)})")
shown = runs.head(TABLE_RUNS)  # a selectable table sends every row to the browser
if len(runs) > TABLE_RUNS:
    st.caption(
        f"The newest {TABLE_RUNS:,} of {len(runs):,} runs; filter by tag, config or dataset "
        "version above to reach older ones."
    )
warned, n_warned = run_warnings(data.runs(), only=set(shown["run_id"]))
if warned:
    ui.banner_lines(f"{n_warned} run(s) retrieved chunks their dataset does not know:", warned)
if notes := run_notes(data.runs(), only=set(shown["run_id"])):
    ui.banner_lines("Scored by spans, as intended:", notes, kind="info")
table = shown[["run_id", "created_at", "status", "config_name", "dataset_version", "tags"]].copy()
table.insert(4, "origin", shown["config"].map(origin_label))
table["status"] = table["status"].mask(table["run_id"].isin(list(stale)), "stale")
table.insert(0, "diagnose", run_links(shown["run_id"], "diagnose"))
for m, name in KEY_METRICS.items():
    table[name] = shown[m]
    table[f"Δ {name}"] = shown[f"{m}_delta"]
    if m == "faithfulness":  # how far to trust it, beside it
        ids = shown["run_id"].tolist()
        coverage = data.run_coverage(tuple(ids))  # empty while nobody labelled anything
        for col, values in coverage_columns(ids, coverage).items() if coverage else ():
            table[col] = values.to_numpy()
event = st.dataframe(
    table,
    key="runs_table",
    hide_index=True,
    width="stretch",
    on_select="rerun",
    selection_mode="single-row",
    column_config={
        "diagnose": st.column_config.LinkColumn("diagnose", display_text="diagnose ↗"),
        **{
            name: st.column_config.NumberColumn(
                name, help=cat.help(m), format=cat.entry(m).column_format()
            )
            for m, name in KEY_METRICS.items()
        },
        **{
            f"Δ {name}": st.column_config.NumberColumn(
                f"Δ {name}",
                help=f"{DELTA_HELP}. {name}: {cat.help(m)}",
                format=cat.entry(m).column_format(),
            )
            for m, name in KEY_METRICS.items()
        },
        "judge κ": st.column_config.NumberColumn(
            "judge κ", format="%.2f", help="the judge's Cohen's kappa on the checked claims"
        ),
    },
)
if event.selection.rows:
    ui.go("diagnose", DiagnoseState(run=str(runs.iloc[event.selection.rows[0]]["run_id"])))

if data.build_progress() is not None:  # no figures to chart yet; plotly's first figure
    st.stop()  # costs 0.5 s, paid on the redraw with the figures instead
ui.chart(
    charts.config_trend(data.metric_trend(metric, **filters), metric, cat),
    key="runs_trend",
    metrics=[cat.entry(metric)],
)
ui.chart(
    charts.failure_shares(data.failure_counts(list(runs["run_id"].head(MAX_BARS)))),
    key="runs_failures",
)
