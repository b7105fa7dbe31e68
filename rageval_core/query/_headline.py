"""The daily loop's answers in the terminal: a run's headline against the run before it
(the end of `rageval run`) and the list of runs (`rageval runs`).

"The run before" is `previous.previous_run`: the newest complete run of the same config
name and dataset version created earlier. Figures come from each run's own files
(`summarize_run`), like `rageval check`. Nothing here prints; the commands format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from rageval_core.catalogue import BUILTIN
from rageval_core.errors import RagevalError
from rageval_core.models import FAILURE_TYPES
from rageval_core.query._across_runs import runs_overview
from rageval_core.query._compare import compare_runs
from rageval_core.query._coverage import figure_covered
from rageval_core.query._flaky import same_settings
from rageval_core.query._noise import intervals, latency_spreads
from rageval_core.query._previous import previous_run
from rageval_core.runs.reading import RunInfo
from rageval_core.runs.summary import summarize_run
from rageval_core.store.results import ResultsStore

HEADLINE_FIGURES: tuple[str, ...] = (
    "recall_at_5",
    "faithfulness",
    "answer_correctness",
    "missed_refusal_rate",
    "false_refusal_rate",
    "total_ms_p95",
    "total_cost_per_question",
)
"""What a lead reads first about a run (issue 14): quality, abstention, speed, cost."""
assert all(f in BUILTIN.figures for f in HEADLINE_FIGURES)  # a rename must fail at import


@dataclass(frozen=True)
class Figure:
    """One headline figure of a run and its change from the previous run."""

    name: str
    label: str
    value: float | None
    previous: float | None
    interval: tuple[float, float] | None = None  # the delta's paired 95% interval
    noise: float | None = None  # latency: the spread of earlier runs of the series
    summary: Mapping[str, Any] | None = None  # the run's summary: the questions it covers

    @property
    def delta(self) -> float | None:
        if self.value is None or self.previous is None:
            return None
        return self.value - self.previous

    @property
    def better(self) -> bool | None:
        """True for an improvement, False for a regression, None for no delta or a
        change within its noise (`Metric.reading`)."""
        v = BUILTIN.figures[self.name].reading(self.delta, self.interval, self.noise)
        return None if v in (None, "same") else v == "better"

    def text(self) -> str:
        """The value, `–` when unknown, with the questions it covers when only some."""
        return figure_covered(BUILTIN.fmt(self.name, self.value), self.name, self.summary or {})

    def delta_text(self) -> str:
        d = self.delta
        if d is None:
            return ""
        if abs(d) < 1e-12:
            return "= same"
        if self.better is None:
            return f"{BUILTIN.fmt_delta(self.name, d)} ~ within noise"
        arrow = "▲ better" if self.better else "▼ worse"
        return f"{BUILTIN.fmt_delta(self.name, d)} {arrow}"


@dataclass(frozen=True)
class RunHeadline:
    """What `rageval run` ends with: the run's figures with deltas, its failure counts."""

    run_id: str
    status: str
    n_questions: int
    previous: str | None
    figures: tuple[Figure, ...]
    failures: tuple[tuple[str, int], ...]  # (failure type, questions), FAILURE_TYPES order
    problems: tuple[str, ...] = ()


def _figures(store: ResultsStore, info: RunInfo) -> dict[str, Any]:
    return summarize_run(info, con=store.con, fs=store.fs, to_url=store.to_url)


def run_headline(store: ResultsStore, run_id: str) -> RunHeadline:
    """The headline of `run_id` against the previous complete run of its series."""
    info = store.run_info(run_id)
    now = _figures(store, info)
    prev_info = previous_run(store, info)
    before = _figures(store, prev_info) if prev_info else {}
    paired, spreads = _noise(store, info, prev_info)
    figures = tuple(
        Figure(f, BUILTIN.label(f), now.get(f), before.get(f), paired.get(f), spreads.get(f), now)
        for f in HEADLINE_FIGURES
    )
    failures = tuple((ft, int(now.get(f"failure_{ft}") or 0)) for ft in FAILURE_TYPES)
    return RunHeadline(
        run_id=run_id,
        status=info.status,
        n_questions=int(now.get("n_questions") or 0),
        previous=prev_info.run_id if prev_info else None,
        figures=figures,
        failures=failures,
        problems=tuple(now.get("problems") or ()),
    )


def _noise(
    store: ResultsStore, info: RunInfo, prev: RunInfo | None
) -> tuple[dict[str, tuple[float, float]], dict[str, float]]:
    """The paired intervals of the means against `prev`, the latency spreads of the
    series (`query.noise`); nothing without a previous run."""
    if prev is None:
        return {}, {}
    wanted = [f for f in HEADLINE_FIGURES if f in BUILTIN.measure_names("compare")]
    same = same_settings(store, info)
    spreads = latency_spreads(runs_overview(store), info.run_id, HEADLINE_FIGURES, same)
    try:
        cmp = compare_runs(store, [prev, info], metrics=wanted)
    except RagevalError:  # a previous run that cannot be paired: deltas judged by sign
        return {}, spreads
    return intervals(cmp.metrics, info.run_id), spreads


def format_headline(h: RunHeadline, link: str | None = None) -> str:
    """The terminal block: one line per figure (`recall@5  0.78  +0.07 ▲ better`), the
    failure types that occurred, and the Diagnose link."""
    width = max(len(f.label) for f in h.figures)
    was = (
        f"vs {h.previous}"
        if h.previous
        else "no earlier complete run of this config and dataset version"
    )
    lines = [f"{h.run_id}: {h.n_questions} questions ({was})"]
    for f in h.figures:
        lines.append(f"  {f.label:<{width}}  {f.text():>8}  {f.delta_text()}".rstrip())
    seen = [f"{ft.replace('_', ' ')} {n}" for ft, n in h.failures if n]
    lines.append("  failures: " + (", ".join(seen) if seen else "none"))
    lines += [f"  problem: {p}" for p in h.problems]
    if link:
        lines.append(f"  open: {link}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- rageval runs


@dataclass(frozen=True)
class RunLine:
    """One row of `rageval runs`: a run's status (running turns stale when its writer has
    shown no sign of life), size and headline figures."""

    run_id: str
    status: str
    created_at: str | None
    config_name: str | None
    dataset: str | None
    n_questions: int
    figures: Mapping[str, float | None]
    texts: Mapping[str, str]  # each figure as printed: `–` when unknown, coverage when partial

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "figures": dict(self.figures), "texts": dict(self.texts)}


def run_lines(store: ResultsStore) -> tuple[RunLine, ...]:
    """Every run of the location, newest first (`runs_overview` order)."""
    stale = {r.run_id for r in store.runs() if r.stale}
    df = runs_overview(store)
    out = []
    for r in df.to_dict("records"):
        status = "stale" if r["run_id"] in stale else str(r.get("status") or "corrupt")
        version = r.get("dataset_version")
        out.append(
            RunLine(
                run_id=r["run_id"],
                status=status,
                created_at=_str(r.get("created_at")),
                config_name=_str(r.get("config_name")),
                dataset=f"{r['dataset_name']} v{version}" if _str(r.get("dataset_name")) else None,
                n_questions=int(r.get("n_questions") or 0),
                figures={f: _num(r.get(f)) for f in HEADLINE_FIGURES},
                texts={f: figure_covered(BUILTIN.fmt(f, r.get(f)), f, r) for f in HEADLINE_FIGURES},
            )
        )
    return tuple(out)


def _str(v: Any) -> str | None:
    return None if v is None or v != v else str(v)


def _num(v: Any) -> float | None:
    return None if v is None or v != v else float(v)


def format_run_lines(lines: tuple[RunLine, ...]) -> str:
    """A fixed-width table, newest first."""
    if not lines:
        return "no runs\n"
    short = {
        "recall_at_5": "recall@5",
        "faithfulness": "faithful",
        "answer_correctness": "correct",
        "missed_refusal_rate": "missed-ref",
        "false_refusal_rate": "false-ref",
        "total_ms_p95": "p95 latency",
        "total_cost_per_question": "$/question",
    }
    head = ["run", "status", "created", "questions", *short.values()]
    rows = [
        [
            ln.run_id,
            ln.status,
            (ln.created_at or "")[:16].replace("T", " "),
            str(ln.n_questions),
            *(ln.texts[f] for f in short),
        ]
        for ln in lines
    ]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    out = []
    for r in [head, *rows]:
        cells = [
            c.ljust(w) if i < 3 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out) + "\n"
