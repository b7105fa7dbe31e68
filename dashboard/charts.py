"""Plotly figure builders: a small DataFrame in, a figure out.

No Streamlit, no queries, no maths beyond laying out what the query layer computed.
Run ids are long; traces name them in full and the hover says which figure is which.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.shaping import label, question_label
from rageval_core.catalogue import BUILTIN, Catalogue

GROUP_COLORS = {
    "retrieval": "#d62728",
    "generation": "#ff7f0e",
    "abstention": "#9467bd",
    "error": "#7f7f7f",
    "ok": "#2ca02c",
}
FAILURE_COLORS = {
    "retrieval_miss": "#d62728",
    "ranking_miss": "#ff9896",
    "unfaithful": "#ff7f0e",
    "incorrect": "#ffbb78",
    "missed_refusal": "#9467bd",
    "false_refusal": "#c5b0d5",
    "error": "#7f7f7f",
    "ok": "#2ca02c",
}


def _layout(fig: go.Figure, title: str, x: str, y: str, **kw) -> go.Figure:
    fig.update_layout(
        title=title,
        xaxis_title=x,
        yaxis_title=y,
        # Legend above the plot: below it, it collided with long rotated run ids.
        margin=dict(l=10, r=10, t=80, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
        **kw,
    )
    return fig


def trend(df: pd.DataFrame, metric: str, cat: Catalogue = BUILTIN) -> go.Figure:
    """Mean and p10 of a run-level metric over time (columns created_at, run_id, value, p10)."""
    fig = go.Figure()
    fig.add_scatter(
        x=df["created_at"],
        y=df["value"],
        mode="lines+markers",
        name="mean",
        text=df["run_id"],
        hovertemplate="%{text}<br>mean %{y:.3f}<extra></extra>",
    )
    if df["p10"].notna().any():
        fig.add_scatter(
            x=df["created_at"],
            y=df["p10"],
            mode="lines+markers",
            name="p10",
            line=dict(dash="dot"),
            text=df["run_id"],
            hovertemplate="%{text}<br>p10 %{y:.3f}<extra></extra>",
        )
    name = label(metric, cat)
    return _layout(fig, f"{name} over time", "run created", name)


def failure_shares(df: pd.DataFrame) -> go.Figure:
    """Stacked share of each failure type per run (long form: run_id, failure_type, share)."""
    fig = go.Figure()
    for ft, color in FAILURE_COLORS.items():
        sub = df[df["failure_type"] == ft]
        if sub.empty:
            continue
        fig.add_bar(
            x=sub["run_id"],
            y=sub["share"],
            name=ft.replace("_", " "),
            marker_color=color,
            customdata=sub["n"],
            hovertemplate="%{x}<br>%{y:.0%} (%{customdata})<extra>" + ft + "</extra>",
        )
    fig.update_layout(barmode="stack", yaxis_tickformat=".0%")
    return _layout(fig, "Failure types per run", "run", "share of questions")


def failure_breakdown(df: pd.DataFrame) -> go.Figure:
    """One run's failures grouped retrieval / generation / abstention / error (n per type)."""
    fig = go.Figure()
    for group, sub in df[df["failure_type"] != "ok"].groupby("group", sort=False):
        fig.add_bar(
            x=sub["failure_type"].str.replace("_", " "),
            y=sub["n"],
            name=group,
            marker_color=GROUP_COLORS[group],
            text=sub["n"],
            textposition="outside",
        )
    return _layout(fig, "Failures by type", "failure type", "questions")


def distributions(df: pd.DataFrame, metric: str, kind: str, cat: Catalogue = BUILTIN) -> go.Figure:
    """Per-question values of several runs overlaid (columns run_id, value)."""
    fig = go.Figure()
    for run_id, sub in df.groupby("run_id", sort=False):
        values = sub["value"].sort_values()
        if kind == "histogram":
            fig.add_histogram(x=values, name=str(run_id), opacity=0.55, nbinsx=20)
        else:
            ecdf = (pd.Series(range(1, len(values) + 1)) / len(values)).to_numpy()
            fig.add_scatter(x=values, y=ecdf, mode="lines", line_shape="hv", name=str(run_id))
    if kind == "histogram":
        fig.update_layout(barmode="overlay")
        return _layout(
            fig, f"Distribution of {label(metric, cat)}", label(metric, cat), "questions"
        )
    return _layout(
        fig, f"ECDF of {label(metric, cat)}", label(metric, cat), "share of questions ≤ x"
    )


def recall_curves(df: pd.DataFrame) -> go.Figure:
    """Mean recall@k against k, one line per run (columns run_id, k, recall)."""
    fig = go.Figure()
    for run_id, sub in df.groupby("run_id", sort=False):
        fig.add_scatter(x=sub["k"], y=sub["recall"], mode="lines+markers", name=str(run_id))
    fig.update_xaxes(type="category")
    return _layout(fig, "Recall@k", "k", "mean recall")


def recall_gap(df: pd.DataFrame) -> go.Figure:
    """recall@5 and recall@20 side by side per run, the gap annotated as a ranking problem."""
    fig = go.Figure()
    fig.add_bar(x=df["run_id"], y=df["recall_at_5"], name="recall@5", marker_color="#1f77b4")
    fig.add_bar(x=df["run_id"], y=df["recall_at_20"], name="recall@20", marker_color="#aec7e8")
    for r in df.itertuples():
        if pd.notna(r.recall_at_20) and pd.notna(r.recall_at_5):
            fig.add_annotation(
                x=r.run_id,
                y=r.recall_at_20,
                yshift=12,
                showarrow=False,
                text=f"gap {r.recall_at_20 - r.recall_at_5:.2f}",
            )
    fig.update_layout(barmode="group")
    return _layout(
        fig,
        "recall@5 vs recall@20 — the gap is a ranking problem, not embedding",
        "run",
        "mean recall",
    )


def per_run_bar(df: pd.DataFrame, column: str) -> go.Figure:
    """One run-level figure per run as bars (columns run_id, `column`)."""
    fig = go.Figure(go.Bar(x=df["run_id"], y=df[column], marker_color="#1f77b4"))
    return _layout(fig, f"{label(column)} per run", "run", label(column))


def pareto(
    df: pd.DataFrame,
    x: str,
    dominated: str,
    quality: str,
    x_title: str,
    cat: Catalogue = BUILTIN,
) -> go.Figure:
    """Quality against a cost axis; the frontier joins non-dominated runs, dominated are ×."""
    fig = go.Figure()
    front = df[~df[dominated].astype(bool)].sort_values(x)
    dom = df[df[dominated].astype(bool)]
    fig.add_scatter(
        x=front[x],
        y=front["quality"],
        mode="lines+markers+text",
        name="Pareto frontier",
        text=front["config_name"],
        textposition="top center",
        customdata=front["run_id"],
        marker=dict(size=11, color="#2ca02c"),
        hovertemplate="%{customdata}<br>%{x:.4g}, %{y:.3f}<extra>frontier</extra>",
    )
    fig.add_scatter(
        x=dom[x],
        y=dom["quality"],
        mode="markers",
        name="dominated",
        customdata=dom["run_id"],
        marker=dict(size=10, symbol="x", color="#7f7f7f"),
        hovertemplate="%{customdata}<br>%{x:.4g}, %{y:.3f}<extra>dominated</extra>",
    )
    return _layout(fig, f"{label(quality, cat)} vs {x_title}", x_title, label(quality, cat))


def stage_latency(df: pd.DataFrame) -> go.Figure:
    """p50 and p95 of retrieval and generation latency per run (summary columns)."""
    fig = go.Figure()
    for col, name, color in (
        ("retrieval_ms_p50", "retrieval p50", "#aec7e8"),
        ("retrieval_ms_p95", "retrieval p95", "#1f77b4"),
        ("generation_ms_p50", "generation p50", "#ffbb78"),
        ("generation_ms_p95", "generation p95", "#ff7f0e"),
    ):
        fig.add_bar(x=df["run_id"], y=df[col], name=name, marker_color=color)
    fig.update_layout(barmode="group")
    return _layout(fig, "Latency per stage", "run", "ms")


def metric_deltas(df: pd.DataFrame, cat: Catalogue = BUILTIN) -> go.Figure:
    """Paired deltas against the baseline with 95% bootstrap intervals (non-baseline rows)."""
    fig = go.Figure()
    for run_id, sub in df.groupby("run_id", sort=False):
        fig.add_scatter(
            x=sub["delta"],
            y=[label(m, cat) for m in sub["metric"]],
            mode="markers",
            name=str(run_id),
            marker=dict(size=10),
            error_x=dict(
                type="data",
                symmetric=False,
                array=(sub["ci_high"] - sub["delta"]).to_numpy(),
                arrayminus=(sub["delta"] - sub["ci_low"]).to_numpy(),
            ),
        )
    fig.add_vline(x=0, line_dash="dot", line_color="#7f7f7f")
    return _layout(fig, "Change against the baseline (95% paired bootstrap)", "delta", "")


def question_history(df: pd.DataFrame, metrics: list[str]) -> go.Figure:
    """One question's metrics across runs (columns created_at, run_id, metrics…)."""
    fig = go.Figure()
    for m in metrics:
        fig.add_scatter(
            x=df["created_at"],
            y=df[m],
            mode="lines+markers",
            name=question_label(m),
            text=df["run_id"] + " · " + df["failure_type"].fillna(""),
            hovertemplate="%{text}<br>%{y:.3f}<extra>" + question_label(m) + "</extra>",
        )
    return _layout(fig, "This question across runs", "run created", "score")
