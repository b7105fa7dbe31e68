"""`rageval report`: one self-contained HTML file about one run (and its baseline).

The file opens with no network: plotly.js is inlined once, there are no external fonts,
images or styles, and a Content-Security-Policy forbids every fetch. The script is
plotly.js's cartesian bundle (every trace `charts` draws: scatter, bar, histogram,
heatmap), gzipped and decompressed by the browser (`DecompressionStream`), so the
report of 100 questions stays under 1 MB (the full plotly.js alone is 4.8 MB); each
figure is JSON that the loader draws once the script is there. Everything comes from
the query layer (no SQL here) and the charts are the dashboard's (`rageval_core.charts`,
which escapes every text it puts in a figure). Model output is untrusted: every other
string that reaches the page — answers, claims, judge reasons, question text, config
values — goes through `html.escape` (after credentials of a known shape are masked), and
long texts and claim lists are cut to a bounded size so a 10 MB answer cannot make a
10 MB report.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from rageval_core import __version__, charts, numbers, query
from rageval_core.catalogue import BUILTIN, Catalogue, failure_label
from rageval_core.models import FAILURE_TYPES
from rageval_core.numbers import MISSING, absent
from rageval_core.query import (
    argument_run,
    baseline_run,
    figure_covered,
    question_headline,
    run_catalogue,
)
from rageval_core.redact import scrub_shapes
from rageval_core.runs.atomic import atomic_write_bytes
from rageval_core.runs.reading import RunInfo

CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; "
    "style-src 'unsafe-inline'; img-src data:; font-src data:"
)
CORRECTNESS = BUILTIN.label("answer_correctness")
NOT_OK = tuple(ft for ft in FAILURE_TYPES if ft != "ok")
_SCRUB_MARGIN = 256


@dataclass(frozen=True)
class ReportLimits:
    """Bounds that keep the report small whatever the rows hold."""

    worst: int = 15  # questions shown in full
    text_chars: int = 1500  # per answer, claim, reason or chunk
    claims: int = 25  # per question
    regressions: int = 40


# ---------------------------------------------------------------------------- escaping


def esc(value: Any, limit: int | None = None) -> str:
    """Escape for HTML (quotes too), cutting to `limit` characters with a visible note.

    Credentials of a recognisable shape are masked first (`redact.scrub_shapes`): the run
    may have been written by an older version or another tool, before redaction. A margin
    past the cut is scrubbed too, so a credential across the cut is still recognised.
    """
    text = "" if value is None else str(value)
    if limit is not None and len(text) > limit:
        more = len(text) - limit
        text = f"{scrub_shapes(text[: limit + _SCRUB_MARGIN])[:limit]} … [{more:,} more characters]"
    else:
        text = scrub_shapes(text)
    return html.escape(text, quote=True)


def _table(headers: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "") -> str:
    """An HTML table from cells that are already escaped."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


# ---------------------------------------------------------------------------- charts


PLOTLY_JS = Path(__file__).parent / "assets" / "plotly-cartesian-4.1.1.min.js.gz"
"""plotly.js's cartesian bundle (MIT, assets/plotly-LICENSE.txt), the version plotly.py
bundles (a test holds them equal)."""


def _figure_html(fig: go.Figure) -> str:
    """A figure from `charts` (the dashboard's builders) as an empty div and its JSON,
    drawn by `_LOADER` once plotly.js is decompressed. `<` is written as `\\u003c`, so no
    text in a figure can close the script element."""
    fig.update_layout(
        height=380,
        template="plotly_white",
        font={"family": "system-ui, sans-serif"},
    )
    spec = fig.to_json(validate=False).replace("<", "\\u003c")
    return f'<div class="chart"></div><script type="application/json" class="fig">{spec}</script>'


def _plotly_js() -> str:
    return base64.b64encode(PLOTLY_JS.read_bytes()).decode("ascii")


_LOADER = """(async () => {
  const figs = [...document.querySelectorAll("script.fig")];
  try {
    const gz = Uint8Array.from(atob(document.getElementById("plotly-gz").textContent),
                               (c) => c.charCodeAt(0));
    const js = await new Response(new Blob([gz]).stream()
      .pipeThrough(new DecompressionStream("gzip"))).text();
    const el = document.createElement("script");
    el.textContent = js;
    document.head.appendChild(el);
    for (const f of figs) {
      const spec = JSON.parse(f.textContent);
      Plotly.newPlot(f.previousElementSibling, spec.data, spec.layout,
                     {displaylogo: false, responsive: true});
    }
  } catch (e) {
    for (const f of figs) {
      f.previousElementSibling.textContent = "This browser cannot draw the charts: " + e;
    }
  }
})();"""


# ---------------------------------------------------------------------------- sections


def _summary_section(
    run_ids: list[str], rows: Mapping[str, Mapping[str, Any]], cat: Catalogue
) -> str:
    headers = ["", *run_ids] + (["change"] if len(run_ids) == 2 else [])
    body = []
    for key in cat.figure_names("report"):
        vals = [rows[r].get(key) for r in run_ids]
        if all(absent(v) for v in vals) and cat.entry(key).unit not in ("ms", "usd"):
            continue  # a figure no run has (spans without documents): an empty row says nothing
        m = cat.entry(key)  # an unknown cost or latency stays: "–" says it was not reported
        label = f'<abbr title="{esc(m.definition)} ({esc(m.source)})">{esc(m.label)}</abbr>'
        cells = [
            label,
            *(
                esc(figure_covered(cat.fmt(key, v), key, rows[r]))
                for r, v in zip(run_ids, vals, strict=True)
            ),
        ]
        if len(run_ids) == 2:
            a, b = vals
            both = not (absent(a) or absent(b))
            cells.append(esc(cat.fmt_delta(key, b - a) if both else MISSING))
        body.append(cells)
    return _table(headers, body, "num")


def _items(value: Any) -> list[Any]:
    """A list from a cell that may be None, a list or a numpy array."""
    return [] if value is None else list(value)


def _about(row: Mapping[str, Any]) -> str:
    items = [
        ("status", row.get("status")),
        ("created", row.get("created_at")),
        ("config", row.get("config_name")),
        ("parameters", row.get("params")),
        ("dataset", f"{row.get('dataset_name')} v{row.get('dataset_version')}"),
        ("judge", " ".join(str(v) for v in (row.get("judge_kind"), row.get("judge_model")) if v)),
        ("git commit", row.get("git_commit")),
        ("tags", ", ".join(str(t) for t in _items(row.get("tags")))),
    ]
    return "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v, 400)}</dd>" for k, v in items) + "</dl>"


def _question_block(d: query.QuestionDetail, lim: ReportLimits) -> str:
    parts = [
        f"<details open><summary><code>{esc(d.question_id)}</code> · "
        f'<span class="ft">{esc(failure_label(d.failure_type or "unknown"))}</span> — '
        f"{esc(d.question, 300)}</summary>",
        f"<p><b>Answer</b></p><blockquote>{esc(d.answer, lim.text_chars)}</blockquote>",
    ]
    if d.reference_answer:
        parts.append(f"<p><b>Reference</b>: {esc(d.reference_answer, lim.text_chars)}</p>")
    bad = [c for c in d.claims if c.verdict != "supported"]
    if bad:
        rows = [
            [
                esc(c.verdict),
                esc(c.text, lim.text_chars),
                esc(c.reason, lim.text_chars),
                esc(c.evidence_chunk_id)
                + ("<br>" if c.evidence else "")
                + esc(c.evidence, lim.text_chars),
            ]
            for c in bad[: lim.claims]
        ]
        parts.append(_table(["verdict", "claim", "judge's reason", "evidence"], rows, "claims"))
        if len(bad) > lim.claims:
            parts.append(f"<p class='note'>… and {len(bad) - lim.claims:,} more claims.</p>")
    elif d.unsupported_claims:
        items = "".join(
            f"<li>{esc(c, lim.text_chars)}</li>" for c in d.unsupported_claims[: lim.claims]
        )
        parts.append(f"<p><b>Unsupported claims</b></p><ul>{items}</ul>")
    if d.missed_gold_ids:
        parts.append(
            f"<p><b>Gold chunks not retrieved</b>: {esc(', '.join(d.missed_gold_ids), 500)}</p>"
        )
    for label, value in (("Pipeline error", d.error), ("Judge error", d.judge_error)):
        if value:
            parts.append(f"<p><b>{label}</b>: {esc(value, lim.text_chars)}</p>")
    parts.append("</details>")
    return "".join(parts)


def _comparison_section(c: query.Comparison, run_id: str, lim: ReportLimits) -> tuple[str, str]:
    """(table + regressions html, delta chart html)."""
    m = c.metrics[c.metrics["run_id"] == run_id].reset_index(drop=True)
    fmt = c.catalogue.fmt
    rows = [
        [
            esc(c.catalogue.label(r.metric)),
            esc(fmt(r.metric, r.mean)),
            esc(c.catalogue.fmt_delta(r.metric, r.delta)),
            esc(r.note)
            if isinstance(r.note, str)
            else esc(f"[{fmt(r.metric, r.ci_low)}, {fmt(r.metric, r.ci_high)}]"),
            "yes" if bool(r.significant) else "no",
            esc(numbers.count(r.n_pairs)),
        ]
        for r in m.itertuples()
    ]
    out = [
        _table(["metric", "mean", "change", "95% interval", "significant", "pairs"], rows, "num")
    ]
    if c.warnings:
        out.append(
            "<ul class='warn'>" + "".join(f"<li>{esc(w, 500)}</li>" for w in c.warnings) + "</ul>"
        )
    qc = c.questions[c.questions["run_id"] == run_id]
    worse = qc[qc["kind"] != "improvement"]
    out.append(f"<h3>Questions that regressed ({question_headline(qc)})</h3>")
    if len(worse):
        out.append(
            _table(
                ["question", "kind", "failure type", "what moved"],
                [
                    [
                        f"<code>{esc(r.question_id)}</code> {esc(r.question, 200)}",
                        esc(f"{r.kind} (flaky: {r.flaky_note})" if r.flaky else r.kind),
                        esc(r.failure_change),
                        esc(r.changes, 500),
                    ]
                    for r in worse.head(lim.regressions).itertuples()
                ],
            )
        )
    paired = m[m["delta"].notna()]
    chart = _figure_html(charts.metric_deltas(paired, c.catalogue)) if len(paired) else ""
    return "".join(out), chart


# ---------------------------------------------------------------------------- the report


def build_report(
    store: query.ResultsStore,
    run: str | RunInfo,
    baseline: str | RunInfo | None = None,
    limits: ReportLimits = ReportLimits(),
) -> str:
    """The HTML text of the report; ResultsError / ConfigError for bad ids."""
    # a clear error for a missing or unreadable run; their declarations join the catalogue
    infos = [argument_run(store, r) for r in ([baseline, run] if baseline else [run])]
    run_ids = [i.run_id for i in infos]
    own, run_id = infos[-1], run_ids[-1]
    cat = run_catalogue(*infos)[0]
    overview = query.runs_overview(store)
    found = {r["run_id"]: r for r in overview.to_dict("records") if r["run_id"] in run_ids}
    rows = {r: found.get(r, {}) for r in run_ids}
    runs = overview.set_index("run_id").reindex(run_ids).reset_index()

    counts = _in_table_order(query.failure_counts(store, run_ids), run_ids)
    curve = query.recall_curve(store, run_ids)
    dists = pd.concat(
        [
            query.metric_distribution(store, i, "answer_correctness").assign(run_id=i.run_id)
            for i in infos
        ],
        ignore_index=True,
    )
    tail = query.bottom_questions(store, own, "answer_correctness")
    worst = query.question_rows(
        store, own, query.QuestionFilter(failure_types=NOT_OK), limit=limits.worst
    )
    details = [query.question_detail(store, own, q) for q in worst.rows["question_id"]]

    sections: list[tuple[str, str]] = [
        ("Run", _about(rows[run_id]) + _summary_section(run_ids, rows, cat)),
        (
            "Failures",
            _figure_html(charts.failure_breakdown(counts[counts["run_id"] == run_id]))
            + _figure_html(charts.failure_shares(counts))
            + _table(
                ["run", "failure type", "questions", "share"],
                [
                    [
                        esc(r.run_id),
                        esc(failure_label(r.failure_type)),
                        esc(numbers.count(r.n)),
                        esc(numbers.percent(r.share)),
                    ]
                    for r in counts.itertuples()
                ],
                "num",
            ),
        ),
        (
            "Tails",
            _figure_html(charts.mean_and_p10(runs, cat.measure_names("tails"), cat))
            + _figure_html(charts.distributions(dists, "answer_correctness", "histogram"))
            + f"<h3>Bottom {tail.pct:g}% by {CORRECTNESS}</h3>"
            + f"<p>{esc(tail.describe(CORRECTNESS))}.</p>"
            + _table(
                ["question", "failure type", CORRECTNESS],
                [
                    [
                        f"<code>{esc(r.question_id)}</code> {esc(r.question, 200)}",
                        esc(failure_label(str(r.failure_type))),
                        esc(cat.fmt("answer_correctness", r.value)),
                    ]
                    for r in tail.rows.head(30).itertuples()
                ],
            ),
        ),
        (
            "Retrieval",
            _figure_html(charts.recall_gap(runs)) + _figure_html(charts.recall_curves(curve)),
        ),
        (
            f"Worst questions ({worst.total:,} not ok; first {len(details)})",
            "".join(_question_block(d, limits) for d in details) or "<p>Every question is ok.</p>",
        ),
    ]
    base_id = run_ids[0] if baseline else None
    if base_id:
        comparison = query.compare_runs(store, infos)
        table, chart = _comparison_section(comparison, run_id, limits)
        sections.append((f"Compared with {base_id}", chart + table))
    problems = [p for p in store.problems if p.run_id in run_ids]
    if problems:
        items = "".join(f"<li>{esc(p.run_id)}: {esc(p.message, 500)}</li>" for p in problems)
        sections.append(("Problems reading the runs", f"<ul class='warn'>{items}</ul>"))
    return _page(run_id, base_id, sections)


def _in_table_order(counts: pd.DataFrame, run_ids: list[str]) -> pd.DataFrame:
    """Failure counts in the summary table's run order (baseline first), each run's types
    in `FAILURE_TYPES` order, so the chart, its table and the summary read alike."""
    rank = {ft: i for i, ft in enumerate(FAILURE_TYPES)}
    keys = counts["run_id"].map(run_ids.index) * len(rank) + counts["failure_type"].map(rank)
    return counts.iloc[keys.argsort(kind="stable")].reset_index(drop=True)


def _page(run_id: str, baseline: str | None, sections: list[tuple[str, str]]) -> str:
    title = f"rageval report: {run_id}" + (f" vs {baseline}" if baseline else "")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    nav = " · ".join(f'<a href="#s{i}">{esc(t)}</a>' for i, (t, _) in enumerate(sections))
    body = "".join(
        f'<section id="s{i}"><h2>{esc(t)}</h2>{content}</section>'
        for i, (t, content) in enumerate(sections)
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{_CSS}</style>
<script type="application/octet-stream" id="plotly-gz">{_plotly_js()}</script>
</head><body>
<header><h1>{esc(title)}</h1><p class="note">Generated {stamp} by rageval {__version__}.
Model output below is shown as text.</p><nav>{nav}</nav></header>
{body}
<script>{_LOADER}</script>
</body></html>
"""


_CSS = """
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1rem 2rem;
color:#1f2328}
h1{font-size:1.5rem}h2{border-bottom:1px solid #d0d7de;padding-bottom:.3rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.9rem;width:100%}
th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top;
word-break:break-word}
table.num td+td{text-align:right;font-variant-numeric:tabular-nums}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}
dd{margin:0;word-break:break-word}
details{border:1px solid #d0d7de;border-radius:6px;padding:.5rem 1rem;margin:.7rem 0}
summary{cursor:pointer;font-weight:600}
blockquote{margin:.3rem 0;padding:.3rem .8rem;border-left:3px solid #d0d7de;
white-space:pre-wrap;word-break:break-word}
.ft{color:#cf222e}.note{color:#57606a;font-size:.85rem}.warn li{color:#9a6700}
"""


def write_report(
    location: str,
    run_id: str,
    out: str | Path,
    baseline: str | None = None,
    limits: ReportLimits = ReportLimits(),
) -> Path:
    """Build the report of `run_id` from `location` and write it atomically to `out`."""
    with query.ResultsStore(location, read_only=True) as store:
        own = argument_run(store, run_id)
        text = build_report(store, own, baseline_run(store, own, baseline), limits)
    out = Path(out)
    atomic_write_bytes(out, text.encode("utf-8"))
    return out
