"""`rageval check`: a run's figures against thresholds and a baseline (the CI gate).

A thresholds file is YAML: a run config with a `thresholds:` key, or a bare mapping of
metric → {min, max, max_drop, max_rise}. A metric is any run-level figure of the catalogue
(`SUMMARY_KEYS`, plus the mean and p10 of each metric the checked run declares):
`recall_at_5` is the mean, `recall_at_5_p10` the 10th percentile.
`max_drop` is how far the figure may fall below the baseline's; `max_rise` how far it may
climb (for latency and cost). Figures are computed from each run's own files. Without
any limit a check gates nothing, and says so rather than "passed".
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rageval_core import numbers
from rageval_core.catalogue import BUILTIN, Catalogue
from rageval_core.errors import ConfigError, ResultsError, shown
from rageval_core.mismatch import mismatch_warnings
from rageval_core.query._chunking import chunking_notes, counts_chunks, uncut_first
from rageval_core.query._coverage import part_of
from rageval_core.query._drift import drift_notes
from rageval_core.query._previous import previous_run, series_of
from rageval_core.runs.reading import RunInfo, inspect_run, run_catalogue
from rageval_core.runs.summary import COVERED_BY, summarize_run
from rageval_core.store.results import ResultsStore, require_readable
from rageval_core.userfiles import load_yaml

_BOUNDS = ("min", "max", "max_drop", "max_rise")


@dataclass(frozen=True)
class Threshold:
    """Limits on one run-level figure; None = not checked."""

    metric: str
    min: float | None = None
    max: float | None = None
    max_drop: float | None = None
    max_rise: float | None = None


@dataclass(frozen=True)
class CheckRow:
    """One figure of the run, its baseline value and the limits it broke (if any).

    `notes` are limits that could not be checked and are not breaches (the baseline has
    no value for the figure): shown on the row so a skipped limit is never silent.
    """

    metric: str
    value: float | None
    baseline: float | None
    threshold: Threshold | None
    breaches: tuple[str, ...]
    notes: tuple[str, ...] = ()
    label: str = ""
    """The figure as the catalogue names it (`recall@5`); set by `check_run`."""

    @property
    def delta(self) -> float | None:
        if self.value is None or self.baseline is None:
            return None
        return self.value - self.baseline

    @property
    def breached(self) -> bool:
        return bool(self.breaches)

    @property
    def limits(self) -> str:
        """The limits set on this figure (`min 0.7, max_drop 0.03`), passing or not."""
        t = self.threshold
        if t is None:
            return ""
        return ", ".join(
            f"{k} {numbers.short(getattr(t, k))}" for k in _BOUNDS if getattr(t, k) is not None
        )


@dataclass(frozen=True)
class CheckResult:
    run_id: str
    baseline: str | None
    rows: tuple[CheckRow, ...]
    notes: tuple[str, ...] = ()
    baseline_why: str = ""
    """Why that baseline (`Baseline.why`): `previous complete run of config … v2`, or
    why there is none (`no earlier complete run of …`); empty when none was asked for."""

    @property
    def passed(self) -> bool:
        return not any(r.breached for r in self.rows)

    @property
    def gated(self) -> bool:
        """Whether any limit was set: without one a check passes and vouches for nothing."""
        return any(r.threshold is not None for r in self.rows)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    @property
    def baseline_line(self) -> str | None:
        """`baseline: RUN (previous complete run of config X on dataset qa v2)`, or why
        there is none; None when no baseline was asked for."""
        if not self.baseline_why:
            return None
        return f"baseline: {self.baseline or 'none'} ({self.baseline_why})"


NOTHING_GATED = "no thresholds: nothing gated"


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def parse_thresholds(
    data: Any, source: str = "thresholds", catalogue: Catalogue = BUILTIN
) -> tuple[Threshold, ...]:
    """Thresholds from a parsed YAML value; ConfigError listing every problem.

    A metric must be a figure of `catalogue`: the built-in one, or the one of the run
    being checked (`run_catalogue`) so its declared metrics can be gated too.
    """
    if isinstance(data, Mapping) and "thresholds" in data:
        data = data["thresholds"]
    if data is None:
        return ()
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: thresholds must be a mapping of metric -> limits")
    problems, out = [], []
    for metric, limits in data.items():
        if metric not in catalogue.figures:
            problems.append(f"unknown metric {shown(metric)}")
            continue
        if not isinstance(limits, Mapping) or not limits:
            problems.append(f"{metric}: expected a mapping such as {{min: 0.7, max_drop: 0.03}}")
            continue
        bad = [shown(k) for k in limits if k not in _BOUNDS]
        if bad:
            problems.append(
                f"{metric}: unknown key(s) {', '.join(bad[:3])}; use {', '.join(_BOUNDS)}"
            )
            continue
        nonnum = [k for k, v in limits.items() if not _num(v)]
        if nonnum:
            problems.append(f"{metric}: {', '.join(nonnum)} must be numbers")
            continue
        if any(limits.get(k, 0) < 0 for k in ("max_drop", "max_rise")):
            problems.append(f"{metric}: max_drop/max_rise must not be negative")
            continue
        out.append(Threshold(metric, **{k: float(v) for k, v in limits.items()}))
    if problems:
        raise ConfigError(f"{source}: invalid thresholds", problems)
    return tuple(out)


def load_thresholds(
    path: str | os.PathLike[str], catalogue: Catalogue = BUILTIN
) -> tuple[Threshold, ...]:
    """Read a thresholds YAML file (run config or bare mapping)."""
    return parse_thresholds(load_yaml(path, "thresholds file", ConfigError), str(path), catalogue)


def argument_run(store: ResultsStore, run: str | RunInfo, role: str = "run") -> RunInfo:
    """The run a command-line argument names, its id checked once (by `inspect_run`).

    A mistake in the argument — an invalid id, or no such run — is a ConfigError (exit 2);
    a run that exists but cannot be read stays a ResultsError (exit 1, the gate fails
    closed): CI must tell a typo from a damaged or regressed run.
    """
    if isinstance(run, RunInfo):
        return require_readable(run)
    try:
        info = inspect_run(store.location, run)
    except ResultsError as exc:
        raise ConfigError(exc.message if role == "run" else f"{role}: {exc.message}") from None
    if info.status == "missing":
        raise ConfigError(f"{role} {run}: no such run in {store.location}")
    return require_readable(info)


LATEST = "latest"
"""`--baseline latest`: the checked run's previous run (`previous.previous_run`)."""
LATEST_ANY = "latest-any"
"""`--baseline latest-any`: the newest complete run of any config made before the run."""


@dataclass(frozen=True)
class Baseline:
    """The run a check or report compares with (None: there is none), and why that one
    or why none (printed by `check`)."""

    info: RunInfo | None
    why: str

    @property
    def run_id(self) -> str | None:
        return self.info.run_id if self.info else None


def choose_baseline(store: ResultsStore, own: RunInfo, baseline: str | None) -> Baseline:
    """`latest` → `own`'s previous run (same config name and dataset version); `latest-any`
    → the newest complete run of any config made before `own`; a run id → that run,
    checked as an argument (a typo is a ConfigError); None → no baseline.

    Both `latest` forms choose among the runs the store lists (`listed_runs`), "before"
    by the manifests' `created_at` (then run id), so checking an older run never compares
    it with a newer one.
    """
    if baseline is None:
        return Baseline(None, "")
    if baseline not in (LATEST, LATEST_ANY):
        return Baseline(argument_run(store, baseline, "--baseline"), "named by --baseline")
    if baseline == LATEST:
        series = series_of(own)
        of = series.describe() if series else "this run's config and dataset version"
        base = previous_run(store, own)
        return Baseline(base, f"{'previous' if base else 'no earlier'} complete run of {of}")
    own_key = (own.manifest.created_at, own.run_id) if own.manifest else None

    def key(r: RunInfo) -> tuple[str, str]:
        return (r.manifest.created_at if r.manifest else "", r.run_id)

    earlier = [
        r
        for r in store.listed_runs()
        if r.run_id != own.run_id
        and r.status == "complete"
        and r.manifest
        and r.readable
        and (own_key is None or key(r) < own_key)
    ]
    base = max(earlier, key=key, default=None)
    return Baseline(base, f"{'newest' if base else 'no earlier'} complete run of any config")


def baseline_run(store: ResultsStore, own: RunInfo, baseline: str | None) -> RunInfo | None:
    """The run of `choose_baseline`."""
    return choose_baseline(store, own, baseline).info


def resolve_baseline(store: ResultsStore, run: str | RunInfo, baseline: str | None) -> str | None:
    """The id of `baseline_run` for the run an argument names."""
    base = baseline_run(store, argument_run(store, run), baseline)
    return base.run_id if base else None


def check_run(
    store: ResultsStore,
    run: str | RunInfo,
    *,
    baseline: str | None = None,
    thresholds: Sequence[Threshold] = (),
) -> CheckResult:
    """Compare the run's figures with `thresholds` and, for drops, with `baseline`.

    `baseline` may be a run id, `latest`, `latest-any` (`choose_baseline`) or None.
    Without thresholds the result lists a default set of figures and passes without
    gating anything (`CheckResult.gated` is False, and the output says so). A limit on a
    figure the run lacks (e.g. no faithfulness because every answer was a refusal) is a
    breach: the gate cannot vouch for it. A drop/rise limit on a figure the baseline
    lacks is not a breach (the run itself is not at fault) but is noted on its row.
    """
    info = argument_run(store, run)
    run_id = info.run_id
    if info.manifest is None:  # fail closed: a gate cannot vouch for a run it cannot identify
        raise ResultsError(f"run {run_id!r} cannot be checked: {'; '.join(info.problems)}")
    notes: list[str] = []
    chosen = choose_baseline(store, info, baseline)
    base, base_id = chosen.info, chosen.run_id
    values = summarize_run(info, con=store.con, fs=store.fs, to_url=store.to_url)
    notes += values.pop("problems")
    mismatch = mismatch_warnings(info.manifest.totals)
    notes += [f"warning: {w}" for w in mismatch]
    values.update(values.pop("declared"))
    if info.status != "complete":
        notes.append(f"run {run_id} is {info.status}")
    base_values: dict[str, Any] = {}
    if base is not None:
        if base_id == run_id:
            raise ConfigError("baseline is the run being checked")
        base_values = summarize_run(base, con=store.con, fs=store.fs, to_url=store.to_url)
        base_values.update(base_values.pop("declared"))
    catalogue, conflicts = run_catalogue(info)
    unknown = [t.metric for t in thresholds if t.metric not in catalogue.figures]
    if unknown:
        raise ConfigError(
            f"thresholds name metric(s) run {run_id} does not have: "
            + ", ".join(shown(m) for m in unknown[:5])
        )
    notes += conflicts
    by_metric = {t.metric: t for t in thresholds}
    # without thresholds: the default figures, the run's declared metrics among them, less
    # those neither run can have (span figures without documents, recall without gold)
    metrics = list(by_metric) or [
        m
        for m in catalogue.figure_names("check")
        if values.get(m) is not None or base_values.get(m) is not None
    ]
    if values.get("n_questions", 0) == 0:
        raise ResultsError(f"run {run_id!r} has no readable question rows")
    cut = chunking_notes(store, [base, info]) if base is not None else []
    if cut:  # lead with the figures a chunking does not move
        notes += cut
        metrics = uncut_first(metrics, catalogue)
    if base is not None:
        notes += drift_notes(store, [base, info])
    if unscored := values.get("failure_unscored"):
        notes.append(
            f"{unscored} of {values['n_questions']} questions unscored (the judge could not "
            "score them): the judge's figures cover the rest"
        )
    rows = []
    for m in metrics:
        t = by_metric.get(m)
        v, b = values.get(m), base_values.get(m)
        breaches: list[str] = []
        row_notes: list[str] = []
        if t is not None:
            baseline_limit = b is not None and (t.max_drop is not None or t.max_rise is not None)
            if v is None and (t.min is not None or t.max is not None or baseline_limit):
                breaches.append("no value")  # the gate cannot vouch for what it cannot see
            if v is not None and t.min is not None and v < t.min - 1e-12:
                breaches.append(f"below min {numbers.short(t.min)}")
            if v is not None and t.max is not None and v > t.max + 1e-12:
                breaches.append(f"above max {numbers.short(t.max)}")
            if v is not None and b is not None:
                if t.max_drop is not None and b - v > t.max_drop + 1e-12:
                    drop, limit = numbers.short(b - v), numbers.short(t.max_drop)
                    breaches.append(f"dropped {drop} > max_drop {limit}")
                if t.max_rise is not None and v - b > t.max_rise + 1e-12:
                    rise, limit = numbers.short(v - b), numbers.short(t.max_rise)
                    breaches.append(f"rose {rise} > max_rise {limit}")
            elif base_id is not None and b is None:
                skipped = [k for k in ("max_drop", "max_rise") if getattr(t, k) is not None]
                if skipped:
                    row_notes.append(f"baseline has no value: {'/'.join(skipped)} not checked")
            elif base_id is None and (t.max_drop is not None or t.max_rise is not None):
                named = f"`{baseline}` " if baseline in (LATEST, LATEST_ANY) else ""
                note = f"no {named}baseline: max_drop and max_rise limits not checked"
                if note not in notes:  # once, however many limits it skips
                    notes.append(note)
        if part := part_of(values.get(COVERED_BY.get(m, "")), values.get("n_questions")):
            row_notes.append(f"covers {part}")  # a cost or latency some questions lack
        if breaches and mismatch and _is_retrieval(catalogue, m):
            row_notes += mismatch  # the likely cause, beside the breach it causes
        if cut and counts_chunks(m, catalogue):
            row_notes.append("counts chunks: the runs cut text differently")
        rows.append(CheckRow(m, v, b, t, tuple(breaches), tuple(row_notes), catalogue.label(m)))
    return CheckResult(run_id, base_id, tuple(rows), tuple(notes), chosen.why)


def _is_retrieval(catalogue: Catalogue, name: str) -> bool:
    """Whether figure `name` is made of a ranked-list measure (recall@5, MRR, …)."""
    figure = catalogue.metric(name)
    measure = catalogue.measures.get((figure.of or figure.name) if figure else name)
    return measure is not None and "retrieval" in measure.groups


def _fmt(r: CheckRow, v: float | None) -> str:
    return BUILTIN.fmt(r.metric, v)


def _fmt_delta(r: CheckRow) -> str:
    return "" if r.delta is None else BUILTIN.fmt_delta(r.metric, r.delta)


def md_cell(text: object, width: int = 300) -> str:
    """`text` as inert Markdown on one table cell (or one line), cut to `width`: HTML
    escaped, `|` and link brackets escaped, line breaks flattened (a declared metric's
    label is the user's free text, a served model a server's, and the table is posted as
    a pull-request comment)."""
    flat = html.escape(shown(text, width, bare=True), quote=False)
    for c in ("\\", "|", "[", "]"):
        flat = flat.replace(c, "\\" + c)
    return flat


def format_check(result: CheckResult, fmt: str = "text") -> str:
    """The delta table: `recall@5  0.78  (was 0.71)  +0.07`, ✗ on a breach."""
    if fmt == "markdown":
        head = f"### rageval check: `{result.run_id}`"
        head += f" vs `{result.baseline}`" if result.baseline else ""
        lines = [
            head,
            "",
            "| | metric | value | baseline | delta | limits | breaches and notes |",
            "|---|---|---:|---:|---:|---|---|",
        ]
        for r in result.rows:
            mark = "✗" if r.breached else "✓"
            why = md_cell("; ".join((*r.breaches, *r.notes)))
            lines.append(
                f"| {mark} | {md_cell(r.label)} | {_fmt(r, r.value)} | {_fmt(r, r.baseline)} | "
                f"{_fmt_delta(r)} | {md_cell(r.limits)} | {why} |"
            )
        if result.baseline_line:
            lines[1:1] = ["", result.baseline_line]
        lines.append("")
        if not result.passed:
            lines.append(f"**failed**: {_breaches(result)}")
        else:
            lines.append("**passed**" if result.gated else f"**{NOTHING_GATED}**")
        lines += [f"- {md_cell(n)}" for n in result.notes]
        return "\n".join(lines) + "\n"
    width = max([len(r.label) for r in result.rows] + [6])
    lines = [
        f"rageval check {result.run_id}"
        + (f" (baseline {result.baseline})" if result.baseline else "")
    ]
    if result.baseline_line:
        lines.append(result.baseline_line)
    for r in result.rows:
        was = f"(was {_fmt(r, r.baseline)})" if r.baseline is not None else ""
        mark = "✗" if r.breached else " "
        value, delta = _fmt(r, r.value), _fmt_delta(r)
        line = f"{mark} {r.label:<{width}}  {value:>8}  {was:<14}  {delta:>8}"
        if r.breaches or r.notes:
            line += "  " + "; ".join((*r.breaches, *r.notes))
        lines.append(line.rstrip())
    lines += [f"note: {n}" for n in result.notes]
    if not result.passed:
        lines.append(f"FAILED: {_breaches(result)}")
    else:
        lines.append("PASSED" if result.gated else NOTHING_GATED)
    return "\n".join(lines) + "\n"


def _breaches(result: CheckResult) -> str:
    return f"{sum(r.breached for r in result.rows)} breach(es)"
