"""Plotly figure builders for the dashboard and the HTML report: a small DataFrame in, a
figure out.

One set serves both so a chart reads the same in the browser and in `rageval report`. No
Streamlit, no queries, no maths beyond laying out what the query layer computed. Labels
come from the metric catalogue.

Run ids, question ids, config names and declared metric labels are untrusted, and plotly
renders a subset of HTML in titles, tick labels, legend names and hover text: every text a
builder puts in a figure goes through `html.escape` here (plotly turns the entities back
into the characters). Run ids are long; traces name them in full and the hover says which
figure is which.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from rageval_core.catalogue import (
    BUILTIN,
    FAILURE_GROUPS,
    Catalogue,
    Metric,
    failure_label,
    failure_rank,
)

GROUP_COLORS = {
    "retrieval": "#d62728",
    "generation": "#ff7f0e",
    "abstention": "#9467bd",
    "error": "#7f7f7f",
    "judge": "#17becf",
    "ok": "#2ca02c",
    "unknown": "#bcbd22",
}
FAILURE_COLORS = {
    "retrieval_miss": "#d62728",
    "ranking_miss": "#ff9896",
    "irrelevant_context": "#8c564b",
    "unfaithful": "#ff7f0e",
    "off_topic": "#e377c2",
    "incorrect": "#ffbb78",
    "missed_refusal": "#9467bd",
    "false_refusal": "#c5b0d5",
    "error": "#7f7f7f",
    "unscored": "#17becf",
    "ok": "#2ca02c",
}
UNIT_BINS = dict(start=0, end=1.0001, size=0.05)
"""Histogram bins of a 0–1 measure: one set for every run, so overlaid bars line up."""


def _esc(values: Iterable[object]) -> list[str]:
    return [html.escape(str(v)) for v in values]


def _esc_points(values: pd.Series) -> np.ndarray:
    """`_esc` as a string array, for a per-point property (`text`) of a long trace: plotly
    checks and copies a list (or an object array) element by element, a string array at
    once (a third of the Tails charts' time at 1,000 runs and 1,000 questions)."""
    return np.array([html.escape(str(v)) for v in values.tolist()], dtype=str)


def _label(name: str, cat: Catalogue = BUILTIN) -> str:
    return html.escape(cat.label(name))


def _layout(
    fig: go.Figure,
    title: str,
    x: str,
    y: str,
    *,
    x_metric: Metric | None = None,
    y_metric: Metric | None = None,
    **kw,
) -> go.Figure:
    """The one layout of every chart: title, axis titles (escaped here, once for every
    builder), axes in the metrics' number style, and the legend where it cannot cover
    anything.

    The legend stands right of the plot, top-aligned: plotly widens the right margin to
    fit it. Above the plot (where it was) a legend that wraps to a second row at 1280 px
    grew up into the title; below, it collided with long rotated run ids.
    """
    fig.update_layout(
        title=dict(text=html.escape(title), x=0, xanchor="left", y=0.98, yanchor="top"),
        xaxis_title=html.escape(x),
        yaxis_title=html.escape(y),
        margin=dict(l=10, r=10, t=60, b=10),
        legend=dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top"),
        **kw,
    )
    for axis, m in (("xaxis", x_metric), ("yaxis", y_metric)):
        if m is not None:
            fig.update_layout({axis: _axis_format(m)})
    return fig


def _axis_format(m: Metric) -> dict[str, str]:
    """Tick format of an axis showing `m`: `$0.00010`, `1,995 ms`, `30%`, `0.80` — never
    plotly's SI prefixes (`100µ` dollars)."""
    if m.style == "ms":
        return {"tickformat": ",~r", "ticksuffix": " ms"}
    if m.style == "usd":
        return {"tickformat": "$.2~r"}
    if m.style == "percent":
        return {"tickformat": ".0%"}
    return {"tickformat": ",.4~r"}


def _hover(m: Metric, axis: str) -> str:
    """A hover value of `axis` (`x` / `y`) in `m`'s number style."""
    suffix = " ms" if m.style == "ms" else ""
    return f"%{{{axis}:{m.d3}}}{suffix}"


TREND_COLORS = tuple(
    "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf".split()
)
"""One colour per config line of the trend (plotly's default cycle), its p10 the same."""


def config_trend(df: pd.DataFrame, metric: str, cat: Catalogue = BUILTIN) -> go.Figure:
    """A run-level metric over time, one line per config (the Runs and Tails pages): its
    mean, and
    its p10 dotted in the same colour (hidden until picked in the legend when several
    configs are drawn).
    A ◆ marks each run whose dataset version differs from the run before it on its line:
    figures on either side of it are not comparable (no delta crosses it elsewhere).

    Columns: created_at, run_id, config_name, dataset_name, dataset_version, value, p10;
    oldest first (`metric_trend`).
    """
    fig = go.Figure()
    has_p10 = df["p10"].notna().any()
    configs = df["config_name"].fillna("").astype(str)
    names = list(dict.fromkeys(configs))
    dataset = df["dataset_name"].fillna("").astype(str) + " v" + df["dataset_version"].astype(str)
    for i, config in enumerate(names):
        sub, ds = df[configs == config], dataset[configs == config]
        color = TREND_COLORS[i % len(TREND_COLORS)]
        name = html.escape(config or "(unnamed)")
        hover = [f"{r}<br>{d}" for r, d in zip(_esc(sub["run_id"]), _esc(ds), strict=True)]
        fig.add_scatter(
            x=sub["created_at"],
            y=sub["value"],
            mode="lines+markers",
            name=name,
            legendgroup=name,
            line=dict(color=color),
            text=hover,
            hovertemplate=f"{name}<br>%{{text}}<br>mean %{{y:.3f}}<extra></extra>",
        )
        if has_p10:
            fig.add_scatter(
                x=sub["created_at"],
                y=sub["p10"],
                mode="lines+markers",
                name=f"{name} p10",
                legendgroup=name,
                line=dict(color=color, dash="dot"),
                visible=True if len(names) == 1 else "legendonly",
                text=hover,
                hovertemplate=f"{name}<br>%{{text}}<br>p10 %{{y:.3f}}<extra></extra>",
            )
        changed = (ds != ds.shift()) & ds.shift().notna()
        if changed.any():
            was = _esc(ds.shift()[changed])
            fig.add_scatter(
                x=sub["created_at"][changed],
                y=sub["value"][changed],
                mode="markers",
                name=f"{name}: dataset version changed",
                legendgroup=name,
                marker=dict(symbol="diamond-open", size=14, color=color, line=dict(width=2)),
                text=[f"{h}<br>was {w}" for h, w in zip(_esc(ds[changed]), was, strict=True)],
                hovertemplate=f"{name}: dataset now %{{text}}<extra></extra>",
            )
    label = cat.label(metric)
    return _layout(fig, f"{label} over time, one line per config", "run created", label)


def failure_shares(df: pd.DataFrame) -> go.Figure:
    """Stacked share of each failure type per run (long form: run_id, failure_type, n, share)."""
    fig = go.Figure()
    for ft, color in FAILURE_COLORS.items():
        sub = df[df["failure_type"] == ft]
        if sub.empty:
            continue
        fig.add_bar(
            x=_esc(sub["run_id"]),
            y=sub["share"],
            name=failure_label(ft),
            marker_color=color,
            customdata=sub["n"],
            hovertemplate="%{x}<br>%{y:.0%} (%{customdata})<extra>" + ft + "</extra>",
        )
    # runs in the order given (newest first from the query), not in the order in which
    # each run's first failure type happens to be drawn
    fig.update_xaxes(categoryorder="array", categoryarray=_esc(df["run_id"].unique()))
    fig.update_layout(barmode="stack", yaxis_tickformat=".0%")
    return _layout(fig, "Failure types per run", "run", "share of questions")


def _failure_groups(counts: pd.DataFrame) -> pd.DataFrame:
    """One run's (failure_type, n) with each type's group (`catalogue.FAILURE_GROUPS`;
    "unknown" for a type no rule makes), in `catalogue.failure_rank` order."""
    df = counts[["failure_type", "n"]].copy()
    df["group"] = df["failure_type"].map(lambda ft: FAILURE_GROUPS.get(ft, "unknown"))
    df["rank"] = df["failure_type"].map(failure_rank)
    return df.sort_values("rank", kind="stable").drop(columns="rank").reset_index(drop=True)


def failure_breakdown(counts: pd.DataFrame) -> go.Figure:
    """One run's failures grouped retrieval / generation / abstention / error, a bar per
    type (counts: failure_type, n): the Diagnose page and the report draw this one."""
    df = _failure_groups(counts)
    fig = go.Figure()
    for group, sub in df[df["failure_type"] != "ok"].groupby("group", sort=False):
        fig.add_bar(
            x=_esc(sub["failure_type"].map(failure_label)),
            y=sub["n"],
            name=group,
            marker_color=GROUP_COLORS[group],
            text=sub["n"],
            textposition="outside",
        )
    return _layout(fig, "Failures by type", "failure type", "questions")


def distributions(df: pd.DataFrame, metric: str, kind: str, cat: Catalogue = BUILTIN) -> go.Figure:
    """Per-question values of several runs overlaid (columns run_id, question_id, value).

    A 0–1 measure is binned the same way for every run (`UNIT_BINS`); others in 20 bins.
    """
    measure = cat.measures.get(metric)
    bins = dict(xbins=UNIT_BINS) if measure and measure.unit == "unit" else dict(nbinsx=20)
    fig = go.Figure()
    for run_id, sub in df.groupby("run_id", sort=False):
        sub = sub.sort_values("value")
        name = html.escape(str(run_id))
        if kind == "histogram":
            fig.add_histogram(x=sub["value"], name=name, opacity=0.55, **bins)
        else:
            ecdf = (pd.Series(range(1, len(sub) + 1)) / len(sub)).to_numpy()
            fig.add_scatter(
                x=sub["value"],
                y=ecdf,
                mode="lines",
                line_shape="hv",
                name=name,
                text=_esc_points(sub["question_id"]),
                hovertemplate="%{text}<br>%{x:.3f}",
            )
    label = cat.label(metric)
    m = cat.measures.get(metric)
    if kind == "histogram":
        fig.update_layout(barmode="overlay")
        return _layout(fig, f"Distribution of {label}", label, "questions", x_metric=m)
    return _layout(fig, f"ECDF of {label}", label, "share of questions ≤ x", x_metric=m)


def mean_and_p10(runs: pd.DataFrame, metrics: Sequence[str], cat: Catalogue = BUILTIN) -> go.Figure:
    """Mean and p10 of each metric side by side per run (columns run_id, `m`, `m`_p10):
    a p10 far below its mean is the tail the mean hides."""
    fig = go.Figure()
    x = [_label(m, cat) for m in metrics]
    for row in runs.to_dict("records"):
        for stat, suffix in (("mean", ""), ("p10", "_p10")):
            fig.add_bar(
                name=html.escape(f"{row['run_id']} {stat}"),
                x=x,
                y=[row.get(f"{m}{suffix}") for m in metrics],
            )
    fig.update_layout(barmode="group", yaxis_range=[0, 1])
    return _layout(fig, "Mean vs 10th percentile", "", "")


def recall_curves(df: pd.DataFrame) -> go.Figure:
    """Mean recall@k against k, one line per run (columns run_id, k, recall)."""
    fig = go.Figure()
    for run_id, sub in df.groupby("run_id", sort=False):
        fig.add_scatter(
            x=sub["k"], y=sub["recall"], mode="lines+markers", name=html.escape(str(run_id))
        )
    fig.update_xaxes(type="category")
    fig.update_yaxes(range=[0, 1])
    return _layout(fig, "Recall@k", "k", "mean recall")


def span_curves(df: pd.DataFrame) -> go.Figure:
    """Mean span recall, precision and IoU against k, per run (`query._spans.span_curve`)."""
    fig = go.Figure()
    dashes = {"span_recall": "solid", "span_precision": "dash", "span_iou": "dot"}
    for run_id, sub in df.groupby("run_id", sort=False):
        for col, dash in dashes.items():
            fig.add_scatter(
                x=sub["k"],
                y=sub[col],
                mode="lines+markers",
                line_dash=dash,
                name=html.escape(f"{run_id} {col.replace('_', ' ')}"),
            )
    fig.update_xaxes(type="category")
    fig.update_yaxes(range=[0, 1])
    return _layout(fig, "Span recall, precision and IoU at k", "k", "mean (characters)")


def span_tradeoff(df: pd.DataFrame) -> go.Figure:
    """Span recall@k against span precision@k, one line per run through its k, the hover
    giving its input tokens per question: what a bigger chunk buys and what it costs."""
    fig = go.Figure()
    for run_id, sub in df.groupby("run_id", sort=False):
        tokens = sub["input_tokens"].iloc[0]
        cost = "" if pd.isna(tokens) else f", {tokens:,.0f} input tokens / question"
        fig.add_scatter(
            x=sub["span_precision"],
            y=sub["span_recall"],
            mode="lines+markers+text",
            text=[f"k={k}" for k in sub["k"]],
            textposition="top center",
            name=html.escape(f"{run_id}{cost}"),
        )
    fig.update_xaxes(range=[0, 1])
    fig.update_yaxes(range=[0, 1])
    return _layout(
        fig,
        "Span recall@k vs span precision@k — bigger chunks buy recall with precision and tokens",
        "span precision@k",
        "span recall@k",
    )


def span_map(
    doc_id: str,
    length: int,
    gold: Sequence[tuple[int, int]],
    chunks: Sequence[tuple[int, str, int, int]],
) -> go.Figure:
    """One document as a line of characters: its gold spans, and each retrieved chunk's
    range on a row of its own (rank order), so a boundary through a span shows."""
    fig = go.Figure()
    rows = ["gold"] + [html.escape(f"#{rank} {cid}"[:60]) for rank, cid, _, _ in chunks]
    fig.add_bar(
        y=["gold"] * len(gold),
        x=[e - s for s, e in gold],
        base=[s for s, _ in gold],
        orientation="h",
        marker_color="#2ca02c",
        name="gold span",
        hovertemplate="gold %{base}–%{x}<extra></extra>",
    )
    fig.add_bar(
        y=rows[1:],
        x=[e - s for _, _, s, e in chunks],
        base=[s for _, _, s, _ in chunks],
        orientation="h",
        marker_color="#1f77b4",
        name="retrieved chunk",
        hovertemplate="%{y}: from %{base}, %{x} characters<extra></extra>",
    )
    fig.update_yaxes(categoryorder="array", categoryarray=rows[::-1])
    lo, hi = _span_window(length, [*gold, *((s, e) for _, _, s, e in chunks)])
    fig.update_xaxes(range=[lo, hi])
    where = f"characters {lo:,}–{hi:,} of {length:,}" if (lo, hi) != (0, length) else ""
    title = f"{doc_id}: gold spans and retrieved chunks" + (f" ({where})" if where else "")
    return _layout(fig, title, "character", "")


def _span_window(length: int, ranges: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """The part of a document the span map shows: the region holding every gold span and
    retrieved range with a margin (a tenth of it, at least 40 characters) each side,
    within the document — not its whole length, where a 300-character span in 50,000
    was a sliver. The whole document when nothing is placed in it."""
    length = max(length, 1)
    if not ranges:
        return 0, length
    start, end = min(s for s, _ in ranges), max(e for _, e in ranges)
    margin = max(40, (end - start) // 10)
    return max(0, start - margin), min(length, end + margin)


def recall_gap(df: pd.DataFrame) -> go.Figure:
    """recall@5 and recall@20 side by side per run, the gap annotated as a ranking problem."""
    fig = go.Figure()
    runs = _esc(df["run_id"])
    for col, color in (("recall_at_5", "#1f77b4"), ("recall_at_20", "#aec7e8")):
        fig.add_bar(x=runs, y=df[col], name=_label(col), marker_color=color)
    for run, r5, r20 in zip(runs, df["recall_at_5"], df["recall_at_20"], strict=True):
        if pd.notna(r20) and pd.notna(r5):
            fig.add_annotation(x=run, y=r20, yshift=12, showarrow=False, text=f"gap {r20 - r5:.2f}")
    fig.update_layout(barmode="group")
    return _layout(
        fig,
        "recall@5 vs recall@20 — the gap is a ranking problem, not embedding",
        "run",
        "mean recall",
    )


def per_run_bar(df: pd.DataFrame, column: str) -> go.Figure:
    """One run-level figure per run as bars (columns run_id, `column`)."""
    fig = go.Figure(go.Bar(x=_esc(df["run_id"]), y=df[column], marker_color="#1f77b4"))
    name = BUILTIN.label(column)
    return _layout(fig, f"{name} per run", "run", name, y_metric=BUILTIN.entry(column))


def pareto(
    df: pd.DataFrame,
    x: str,
    dominated: str,
    quality: str,
    x_metric: str,
    cat: Catalogue = BUILTIN,
) -> go.Figure:
    """Quality against a cost axis (`x`: the column, `x_metric`: the figure it holds); the
    frontier joins non-dominated runs, dominated are ×. Runs are named on hover only:
    labels on the points were clipped at the edges and overlapped into garble. Runs whose
    `dominated` flag is NA (the axis figure unknown) are left off, and the title says how
    many: an unknown cost drawn at $0 sat alone on the frontier."""
    fig = go.Figure()
    flag = df[dominated].astype("boolean")
    front = df[flag.eq(False).fillna(False).to_numpy(bool)].sort_values(x)
    dom = df[flag.eq(True).fillna(False).to_numpy(bool)]
    xm, ym = cat.entry(x_metric), cat.entry(quality)
    hover = f"%{{customdata}}<br>{_hover(xm, 'x')}, {_hover(ym, 'y')}"
    for part, name, marker, mode in (
        (front, "Pareto frontier", dict(size=11, color="#2ca02c"), "lines+markers"),
        (dom, "dominated", dict(size=10, symbol="x", color="#7f7f7f"), "markers"),
    ):
        fig.add_scatter(
            x=part[x],
            y=part["quality"],
            mode=mode,
            name=name,
            customdata=_esc(part["run_id"] + " · " + part["config_name"].fillna("")),
            marker=marker,
            hovertemplate=hover + f"<extra>{name}</extra>",
        )
    title = f"{ym.label} vs {xm.label}"
    if left := int(flag.isna().sum()):
        title += f" · {left} run{'s' if left > 1 else ''} left off: {xm.label} unknown"
    return _layout(fig, title, xm.label, ym.label, x_metric=xm, y_metric=ym)


def stage_latency(df: pd.DataFrame) -> go.Figure:
    """p50 and p95 of retrieval and generation latency per run (summary columns)."""
    fig = go.Figure()
    runs = _esc(df["run_id"])
    for col, name, color in (
        ("retrieval_ms_p50", "retrieval p50", "#aec7e8"),
        ("retrieval_ms_p95", "retrieval p95", "#1f77b4"),
        ("generation_ms_p50", "generation p50", "#ffbb78"),
        ("generation_ms_p95", "generation p95", "#ff7f0e"),
    ):
        fig.add_bar(x=runs, y=df[col], name=name, marker_color=color)
    fig.update_layout(barmode="group")
    ms = BUILTIN.figures["retrieval_ms_p95"]
    return _layout(fig, "Latency per stage", "run", "latency", y_metric=ms)


def metric_deltas(df: pd.DataFrame, cat: Catalogue = BUILTIN) -> go.Figure:
    """Paired deltas against the baseline with 95% bootstrap intervals (non-baseline rows)."""
    fig = go.Figure()
    for run_id, sub in df.groupby("run_id", sort=False):
        fig.add_scatter(
            x=sub["delta"],
            y=[_label(m, cat) for m in sub["metric"]],
            mode="markers",
            name=html.escape(str(run_id)),
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


def question_history(df: pd.DataFrame, metrics: list[str], cat: Catalogue = BUILTIN) -> go.Figure:
    """One question's metrics across runs (columns created_at, run_id, failure_type, metrics…);
    a metric no row has a value for (a declared one older runs lack) is left out.

    Per-question labels (`question_label`): one question's answer_correctness is its own
    score (refusal credit on an unanswerable question), so no `(answerable)` here.
    """
    fig = go.Figure()
    text = _esc(df["run_id"] + " · " + df["failure_type"].fillna(""))
    for m in (m for m in metrics if m in df.columns and df[m].notna().any()):
        name = html.escape(cat.question_label(m))
        fig.add_scatter(
            x=df["created_at"],
            y=df[m],
            mode="lines+markers",
            name=name,
            text=text,
            hovertemplate="%{text}<br>%{y:.3f}<extra>" + name + "</extra>",
        )
    return _layout(fig, "This question across runs", "run created", "score")


def confusion(
    categories: Sequence[str],
    counts: Sequence[Sequence[int]],
    title: str,
    rows: str = "human",
    cols: str = "judge",
) -> go.Figure:
    """A confusion matrix as a heatmap: `counts[i][j]` = items `rows` put in category i and
    `cols` in category j; each cell shows its count. Rows read top to bottom in order."""
    names = _esc(categories)
    z = [list(map(int, r)) for r in counts]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=names,
            y=names,
            text=z,
            texttemplate="%{text}",
            colorscale="Blues",
            showscale=False,
            hovertemplate=f"{html.escape(rows)} %{{y}}<br>{html.escape(cols)} %{{x}}"
            "<br>%{z} labels<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, title, cols, rows, height=320)
