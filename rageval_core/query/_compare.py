"""Comparison of two or more runs joined on question_id (dashboard Compare page, CLI).

The first run is the baseline. Per metric: each run's mean, the paired delta against the
baseline with a paired-bootstrap 95% interval (fixed seed: the same inputs always give the
same interval), and per question the regressions, improvements and ok↔not-ok flips,
folded to one row per question (what a lead reads first).
Rows are read by path, one run at a time; the join, the means, the changes and their fold
run in DuckDB, only the bootstrap (a resampling of a few thousand paired differences) runs
in numpy.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from rageval_core.catalogue import BUILTIN, Catalogue
from rageval_core.errors import ConfigError, shown
from rageval_core.mismatch import mismatch_warnings
from rageval_core.query import _sql as sql
from rageval_core.query._check import md_cell
from rageval_core.query._chunking import chunking_notes, uncut_first
from rageval_core.query._drift import drift_notes
from rageval_core.query._flaky import mark_flaky, named_changes
from rageval_core.query._shared import allowed_name
from rageval_core.runs.manifest import config_name, flatten
from rageval_core.runs.reading import RunInfo, run_catalogue
from rageval_core.runs.source import bind, open_run, reading_results
from rageval_core.runs.summary import run_value_sql
from rageval_core.store.results import ResultsStore, require_readable


@dataclass(frozen=True)
class Comparison:
    """Result of `compare_runs`; DataFrames are small (one row per metric/question change).

    - `config_diff`: key, one column per run id, `differs` (differing keys first)
    - `metrics`: metric, run_id, mean, n, delta, ci_low, ci_high, n_pairs, significant,
      note (baseline rows have delta 0 and no interval; a candidate row with no paired
      value has no delta or interval and `note` says why, e.g. "no questions in common")
    - `changes`: run_id, question_id, question, metric, kind (regression | improvement),
      base, value, delta, base_failure_type, failure_type — metric `failure_type` marks a
      flip between ok and not ok
    - `questions`: `changes` folded to one row per (candidate run, question), worst first
      (`QUESTION_CHANGE_COLUMNS`, described there), plus `flaky` / `flaky_note` for
      questions known to flip across runs of the same config (`flaky.mark_flaky`)
    - `warnings`: dataset mismatches, runs that cut their text differently
      (`query/_chunking.py`: the metrics then list those a chunking does not move
      first), judge drift (`query/_drift.py`), unpaired questions, unfinished runs
    - `catalogue`: the built-in metrics plus those the compared runs declare (labels and
      directions of every metric above)
    """

    run_ids: tuple[str, ...]
    baseline: str
    config_diff: pd.DataFrame
    metrics: pd.DataFrame
    changes: pd.DataFrame
    questions: pd.DataFrame
    warnings: tuple[str, ...]
    tolerance: float
    catalogue: Catalogue = BUILTIN

    @property
    def flips(self) -> pd.DataFrame:
        return self.changes[self.changes["metric"] == "failure_type"].reset_index(drop=True)

    @property
    def regressions(self) -> pd.DataFrame:
        return self.changes[self.changes["kind"] == "regression"].reset_index(drop=True)

    @property
    def improvements(self) -> pd.DataFrame:
        return self.changes[self.changes["kind"] == "improvement"].reset_index(drop=True)


def _manifest_view(info: RunInfo) -> dict[str, Any]:
    m = info.manifest
    if m is None:
        return {}
    return {
        "config": dict(m.config),
        "dataset": {
            "name": m.dataset.name,
            "version": m.dataset.version,
            "sha256": m.dataset.sha256,
        },
        "judge": {
            "kind": m.judge.kind,
            "model": m.judge.model,
            "version": m.judge.version,
            "prompt_hash": m.judge.prompt_hash,
            "metrics": None if m.judge.metrics is None else list(m.judge.metrics),
        },
        "tags": list(m.tags),
        "git_commit": m.git_commit,
    }


NOT_SET = "(not set)"
WARNING_CHARS = 2000  # a warning in markdown is cut here (settings changes run long)


def config_diff(infos: Sequence[RunInfo]) -> pd.DataFrame:
    """Flattened manifest keys side by side; a key one run lacks shows as `NOT_SET`."""
    flat = [flatten(_manifest_view(i)) for i in infos]
    keys = sorted(set().union(*flat))
    rows = []
    for k in keys:
        vals = [f.get(k, NOT_SET) for f in flat]
        rows.append(
            {
                "key": k,
                **{i.run_id: v for i, v in zip(infos, vals, strict=True)},
                "differs": len(set(vals)) > 1,
            }
        )
    df = pd.DataFrame(rows, columns=["key", *[i.run_id for i in infos], "differs"])
    return df.sort_values(["differs", "key"], ascending=[False, True], kind="stable").reset_index(
        drop=True
    )


def resample_counts(n: int, n_resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """How often each of `n` paired questions is drawn in each bootstrap resample (R × n)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    idx += (np.arange(n_resamples) * n)[:, None]
    return np.bincount(idx.ravel(), minlength=n_resamples * n).reshape(n_resamples, n).astype(float)


# A count matrix depends only on (n, R, seed), and the dashboard asks for the same pair of
# runs again and again: keep the last few, as uint16 (4 MB at 2,000 × 1,000, not 16 MB).
_COUNTS_CACHE: dict[tuple[int, int, int], np.ndarray] = {}
_COUNTS_CACHE_MAX = 4
_COUNTS_CACHE_CELLS = 25_000_000  # larger matrices are drawn each time, not kept
_counts_lock = threading.Lock()


def _counts(n: int, n_resamples: int, seed: int) -> np.ndarray:
    key = (n, n_resamples, seed)
    with _counts_lock:
        hit = _COUNTS_CACHE.get(key)
    if hit is not None:
        return hit.astype(float)
    c = resample_counts(n, n_resamples, seed)
    if n * n_resamples <= _COUNTS_CACHE_CELLS and n < 2**16:
        with _counts_lock:
            if len(_COUNTS_CACHE) >= _COUNTS_CACHE_MAX:
                _COUNTS_CACHE.pop(next(iter(_COUNTS_CACHE)))
            _COUNTS_CACHE[key] = c.astype(np.uint16)
    return c


def paired_bootstrap_many(
    diffs: np.ndarray, n_resamples: int = 2000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """95% percentile intervals of the mean paired difference, one per column of `diffs`.

    Rows are questions, columns metrics (a 1-D array is one metric); a NaN (metric missing
    in either run) is left out of each resample's mean. A column with no value, or no rows
    at all, has a NaN interval. All columns share the same resamples (one draw of indices,
    one matrix product over values and presence), so the intervals of one comparison are
    mutually consistent.
    """
    diffs = np.asarray(diffs, dtype=float)
    if diffs.ndim == 1:
        diffs = diffs[:, None]
    n, k = diffs.shape
    if n == 0 or k == 0:  # nothing paired: no interval, not an error
        return np.full(k, np.nan), np.full(k, np.nan)
    ok = ~np.isnan(diffs)
    c = _counts(n, n_resamples, seed)
    sums = c @ np.hstack([np.where(ok, diffs, 0.0), ok.astype(float)])
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums[:, :k] / sums[:, k:]
    lo, hi = np.full(k, np.nan), np.full(k, np.nan)
    for j in range(k):
        col = means[:, j]
        col = col[~np.isnan(col)]
        if ok[:, j].any() and len(col):
            lo[j], hi[j] = np.percentile(col, [2.5, 97.5])
    return lo, hi


CHANGE_COLUMNS: tuple[str, ...] = (
    "run_id",
    "question_id",
    "question",
    "metric",
    "kind",
    "base",
    "value",
    "delta",
    "base_failure_type",
    "failure_type",
)


def _changes_sql(mets: Sequence[str], paired: str, catalogue: Catalogue) -> str:
    """Per-question changes over the paired rows `paired` (every candidate), in SQL.

    One branch per metric (names from the whitelist) plus one for ok <-> not-ok flips.
    Order: run, kind, flips then the largest |delta|, question, metric order.
    """
    branches = []
    for j, m in enumerate(mets):
        worse = ">" if catalogue.lower_is_better(m) else "<"
        branches.append(
            sql.CHANGES_METRIC.format(
                metric=m, order=j, worse=worse, delta=f'("{m}" - "base_{m}")', paired=paired
            )
        )
    branches.append(sql.CHANGES_FLIPS.format(order=len(mets), paired=paired))
    return sql.CHANGES.format(branches="\nUNION ALL\n".join(branches))


def _run_rows(
    store: ResultsStore, cur: duckdb.DuckDBPyConnection, info: RunInfo, mets: Sequence[str]
) -> pa.Table:
    """question_id, question, failure_type and each metric as run-level figures count it
    (`run_value_sql`: correctness NULL on unanswerable questions), read by path. A
    metric another compared run declares and this one does not is NULL here."""
    cols = ("question_id", "question", "failure_type", "answerable", *mets)
    own = run_catalogue(info)[0].measures
    with open_run(cur, info, fs=store.fs, to_url=store.to_url, columns=cols) as src:
        values = ", ".join(
            f'{run_value_sql(m) if m in own else "CAST(NULL AS DOUBLE)"} AS "{m}"' for m in mets
        )
        q = f"SELECT question_id, question, failure_type, {values} FROM {src.sql}"
        with reading_results(info.run_id):
            return cur.sql(q, params=bind(q, src.params)).to_arrow_table()


def compare_runs(
    store: ResultsStore,
    run_ids: Iterable[str | RunInfo],
    *,
    metrics: Iterable[str] | None = None,
    tolerance: float = 0.05,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare runs against the first; see `Comparison` for what comes back.

    A question regresses on a metric when its value drops by more than `tolerance`
    (rises, for latency and cost); it flips when failure_type goes between `ok` and any
    other type. Deltas and intervals use questions present, with a value, in both runs;
    answer_correctness counts on answerable questions only, as in the run summary (an
    unanswerable question that changes its refusal shows as a flip). A run is an id (as
    the store last saw it, `store.run`) or the `RunInfo` a caller holds; one that is gone
    or has nothing to read is a ResultsError.

    The steps: the runs and metrics asked for (checked), what to warn about, each run's
    rows read once and averaged, each candidate paired with the baseline and its deltas
    bootstrapped, then the per-question changes and their fold (all in DuckDB over the
    small Arrow tables read), and the known-flaky marks.
    """
    infos = _compared_runs(store, run_ids, tolerance)
    base, candidates = infos[0], infos[1:]
    catalogue, conflicts = run_catalogue(*infos)
    mets = _compared_metrics(metrics, catalogue)
    cut = chunking_notes(store, infos)
    if cut:  # lead with the figures a chunking does not move
        mets = uncut_first(mets, catalogue)
    warnings = [
        *conflicts,
        *_dataset_warnings(base, candidates),
        *_settings_warnings(base, candidates),
        *cut,
        *drift_notes(store, infos),
        *_run_warnings(infos),
    ]
    with store.cursor() as cur:  # tables registered on the cursor go with it
        read = {i.run_id: _read_run(store, cur, i, mets) for i in infos}
        metric_rows = _baseline_metric_rows(base.run_id, read[base.run_id].means, mets)
        paired_names = []
        for cand in candidates:
            pairing = _pair_with_baseline(
                cur, read[base.run_id], read[cand.run_id], mets, n_resamples, seed
            )
            paired_names.append(pairing.table)
            metric_rows += pairing.metric_rows
            warnings += pairing.warnings
        union = " UNION ALL ".join(f"SELECT * FROM {p}" for p in paired_names)
        q = _changes_sql(mets, f"({union})", catalogue)
        changes = cur.execute(q, {"tolerance": float(tolerance)}).df()
        ids = [i.run_id for i in infos]
        questions = fold_changes(cur, changes, ids, mets, catalogue)
    if metrics is None:
        metric_rows = _without_absent_spans(metric_rows)
    return Comparison(
        run_ids=tuple(ids),
        baseline=base.run_id,
        config_diff=config_diff(infos),
        metrics=pd.DataFrame(metric_rows),
        changes=changes,
        questions=mark_flaky(store, infos, questions),
        warnings=tuple(dict.fromkeys(warnings)),
        tolerance=float(tolerance),
        catalogue=catalogue,
    )


def _without_absent_spans(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The default metrics' rows without the span figures no compared run has (runs of an
    id dataset: three rows of "no value" would hide the figures that are there)."""
    absent = {r["metric"] for r in rows if r["metric"].startswith("span_")}
    absent -= {r["metric"] for r in rows if r["n"]}
    return [r for r in rows if r["metric"] not in absent]


def _compared_runs(
    store: ResultsStore, run_ids: Iterable[str | RunInfo], tolerance: float
) -> list[RunInfo]:
    """The runs to compare, baseline first: two or more different ones, each readable;
    ConfigError for a wrong request (ids or tolerance), ResultsError for a damaged run."""
    runs = list(run_ids)
    named = [r.run_id if isinstance(r, RunInfo) else r for r in runs]
    if len(named) < 2 or len(set(named)) != len(named):
        raise ConfigError("compare needs at least two different run ids")
    if not isinstance(tolerance, (int, float)) or tolerance < 0:
        raise ConfigError("tolerance must be a non-negative number")
    return [require_readable(store.run(r)) for r in runs]


def _compared_metrics(metrics: Iterable[str] | None, catalogue: Catalogue) -> list[str]:
    """The metrics asked for (else the catalogue's `compare` set), each checked against
    the whitelist: built-in measures plus what the compared runs declare."""
    names = catalogue.measure_names()
    wanted = metrics or catalogue.measure_names("compare")
    return list(dict.fromkeys(allowed_name(m, names, "metric") for m in wanted))


def _dataset_warnings(base: RunInfo, candidates: Sequence[RunInfo]) -> list[str]:
    """A warning per candidate run on another dataset (version or content) than the
    baseline: its deltas mix question-set changes with pipeline changes."""
    out = []
    for i in candidates:
        bm, cm = base.manifest, i.manifest
        if (
            bm
            and cm
            and (bm.dataset.sha256 != cm.dataset.sha256 or bm.dataset.version != cm.dataset.version)
        ):
            out.append(
                f"{i.run_id} used dataset {cm.dataset.name} v{cm.dataset.version} "
                f"({cm.dataset.sha256[:12]}), baseline {base.run_id} used "
                f"{bm.dataset.name} v{bm.dataset.version} ({bm.dataset.sha256[:12]}): "
                "deltas mix question-set changes with pipeline changes"
            )
    return out


def _settings_warnings(base: RunInfo, candidates: Sequence[RunInfo]) -> list[str]:
    """A warning per candidate run of the baseline's config name with other settings (a
    parameter changed under the same name): its changes follow the settings, not noise."""
    out = []
    for i in candidates:
        bm, cm = base.manifest, i.manifest
        if bm is None or cm is None or config_name(bm) != config_name(cm):
            continue
        changes = named_changes(bm, cm)
        if changes:
            out.append(
                f"{i.run_id} and baseline {base.run_id} are both config "
                f"{shown(config_name(cm), 80)} with other settings "
                f"({shown('; '.join(changes), 400, bare=True)}): "
                "their changes follow the settings, not noise"
            )
    return out


def _run_warnings(infos: Sequence[RunInfo]) -> list[str]:
    """Unfinished runs (figures so far), retrieved chunks a run's dataset does not know
    (`mismatch.py`) and each run's own problems."""
    out = []
    for i in infos:
        if i.status != "complete":
            out.append(f"{i.run_id} is {i.status}: figures cover the questions so far")
        if i.manifest is not None:
            out += [f"{i.run_id}: {w}" for w in mismatch_warnings(i.manifest.totals)]
        out += [f"{i.run_id}: {p}" for p in i.problems]
    return out


@dataclass(frozen=True)
class _ReadRun:
    """One compared run's rows, registered on the cursor as `table`, and their means."""

    run_id: str
    table: str
    means: Mapping[str, Any]  # n_questions, and per metric its mean and `n_<metric>`


def _read_run(
    store: ResultsStore, cur: duckdb.DuckDBPyConnection, info: RunInfo, mets: Sequence[str]
) -> _ReadRun:
    """Read the run once, by path, with only the columns a comparison uses; register the
    rows on `cur` and average them there."""
    name = f"cmp_{uuid.uuid4().hex}"
    cur.register(name, _run_rows(store, cur, info, mets))
    agg = ", ".join(f'avg("{m}") AS "{m}", count("{m}") AS "n_{m}"' for m in mets)
    rel = cur.execute(sql.RUN_MEANS.format(cols=agg, src=name))
    means = dict(zip([d[0] for d in rel.description], rel.fetchall()[0], strict=True))
    return _ReadRun(info.run_id, name, means)


def _baseline_metric_rows(
    run_id: str, means: Mapping[str, Any], mets: Sequence[str]
) -> list[dict[str, Any]]:
    """The baseline's `Comparison.metrics` rows: its means, delta 0 and no interval."""
    return [
        _metric_row(m, run_id, means, delta=0.0, n_pairs=None, interval=(None, None)) for m in mets
    ]


def _metric_row(
    metric: str,
    run_id: str,
    means: Mapping[str, Any],
    *,
    delta: float | None,
    n_pairs: int | None,
    interval: tuple[float | None, float | None],
    note: str | None = None,
) -> dict[str, Any]:
    lo, hi = interval
    return {
        "metric": metric,
        "run_id": run_id,
        "mean": means[metric],
        "n": means[f"n_{metric}"],
        "delta": delta,
        "ci_low": lo,
        "ci_high": hi,
        "n_pairs": n_pairs,
        "significant": bool(n_pairs and (lo > 0 or hi < 0)),
        "note": note,
    }


@dataclass(frozen=True)
class _Pairing:
    """A candidate paired with the baseline: its paired rows (registered as `table`), its
    `Comparison.metrics` rows and the warning about unpaired questions, if any."""

    table: str
    metric_rows: list[dict[str, Any]]
    warnings: list[str]


def _pair_with_baseline(
    cur: duckdb.DuckDBPyConnection,
    base: _ReadRun,
    cand: _ReadRun,
    mets: Sequence[str],
    n_resamples: int,
    seed: int,
) -> _Pairing:
    """Join the candidate's rows with the baseline's on question_id, and per metric the
    mean paired delta with its bootstrap interval (one draw for every metric)."""
    pairs = ", ".join(f'b."{m}" AS "base_{m}", c."{m}" AS "{m}"' for m in mets)
    q = sql.PAIRED_ROWS.format(pairs=pairs, base=base.table, cand=cand.table)
    paired = cur.sql(q, params={"run_id": cand.run_id}).to_arrow_table()
    name = f"paired_{uuid.uuid4().hex}"
    cur.register(name, paired)
    counts = (base.run_id, base.means["n_questions"], cand.run_id, cand.means["n_questions"])
    unpaired = _unpaired(*counts, paired.num_rows)
    warnings = [f"{cand.run_id} vs baseline {base.run_id}: {unpaired}"] if unpaired else []
    deltas = np.column_stack([_floats(paired, m) - _floats(paired, f"base_{m}") for m in mets])
    ci_lo, ci_hi = paired_bootstrap_many(deltas, n_resamples, seed)
    rows = []
    for j, m in enumerate(mets):
        delta = deltas[:, j]
        ok = ~np.isnan(delta)
        n_pairs = int(ok.sum())
        if n_pairs:
            row = _metric_row(
                m,
                cand.run_id,
                cand.means,
                delta=float(delta[ok].mean()),
                n_pairs=n_pairs,
                interval=(float(ci_lo[j]), float(ci_hi[j])),
            )
        else:
            note = _no_pairs(*counts, paired.num_rows)
            row = _metric_row(
                m, cand.run_id, cand.means, delta=None, n_pairs=0, interval=(None, None), note=note
            )
        rows.append(row)
    return _Pairing(name, rows, warnings)


def _no_pairs(base: str, n_base: int, cand: str, n_cand: int, n_common: int) -> str:
    """Why a metric of `cand` has no delta against `base` (no question paired with a value)."""
    if not n_base:
        return f"baseline {base} has no questions"
    if not n_cand:
        return f"{cand} has no questions"
    if not n_common:
        return "no questions in common"
    return "no question has a value in both runs"


def _unpaired(base: str, n_base: int, cand: str, n_cand: int, n_common: int) -> str | None:
    """The warning when some questions of either run have no partner, else None."""
    if not n_common:
        return f"{_no_pairs(base, n_base, cand, n_cand, n_common)}: no deltas or intervals"
    if n_common < max(n_base, n_cand):
        return (
            f"{n_common} questions in common ({n_cand} vs {n_base}); unpaired questions are "
            "left out of deltas"
        )
    return None


def _floats(t: pa.Table, col: str) -> np.ndarray:
    """A float column as numpy, NULL as NaN."""
    return t.column(col).to_numpy().astype(float, copy=False)


def _cell(text: Any, width: int, md: bool) -> str:
    """Untrusted text on one line, cut to `width`; in Markdown, `|` cannot end the cell."""
    t = " ".join(str(text).split())
    t = t if len(t) <= width else t[: width - 1] + "…"
    return t.replace("\\", "\\\\").replace("|", "\\|") if md else t


def format_comparison(c: Comparison, fmt: str = "table", max_questions: int = 20) -> str:
    """The comparison as a terminal table or Markdown (for a pull-request comment)."""
    md = fmt == "markdown"
    out: list[str] = []

    def table(header: list[str], rows: list[list[str]]) -> None:
        if md:
            out.append("| " + " | ".join(header) + " |")
            out.append("|" + "|".join("---" for _ in header) + "|")
            out.extend("| " + " | ".join(r) + " |" for r in rows)
        else:
            widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=True)]
            for r in [header, *rows]:
                out.append("  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)).rstrip())
        out.append("")

    title = f"Comparison against baseline {c.baseline}"
    out += [f"### {title}" if md else title, ""]
    for w in c.warnings:
        # a warning may quote a server's text (judge drift): inert in markdown
        out.append(f"- ⚠ {md_cell(w, WARNING_CHARS)}" if md else f"warning: {w}")
    if c.warnings:
        out.append("")
    others = [r for r in c.run_ids if r != c.baseline]
    m = c.metrics
    header = ["metric", c.baseline, *[x for r in others for x in (r, "delta", "95% CI")]]
    rows = []
    for metric in dict.fromkeys(m["metric"]):
        sub = m[m["metric"] == metric].set_index("run_id")
        m_ = c.catalogue.entry(metric)
        row = [metric, m_.fmt(sub.loc[c.baseline, "mean"])]
        for r in others:
            d, lo, hi = sub.loc[r, "delta"], sub.loc[r, "ci_low"], sub.loc[r, "ci_high"]
            mark = " *" if sub.loc[r, "significant"] else ""
            note = sub.loc[r, "note"]
            row += [
                m_.fmt(sub.loc[r, "mean"]),
                m_.fmt_delta(d) + mark,
                _cell(note, 60, md) if isinstance(note, str) else f"[{m_.fmt(lo)}, {m_.fmt(hi)}]",
            ]
        rows.append(row)
    table(header, rows)
    diff = c.config_diff[c.config_diff["differs"]]
    if not diff.empty:
        out += ["Config differences:" if not md else "**Config differences**", ""]
        table(
            ["key", *c.run_ids],
            [
                [k, *[str(v) for v in vals]]
                for k, *vals in diff[["key", *c.run_ids]].itertuples(index=False)
            ],
        )
    # One row per question (and candidate run): which questions got worse, and how.
    qc = c.questions
    for r in others:
        sub = qc[qc["run_id"] == r]
        label = f"{question_headline(sub)} (tolerance {c.tolerance:g})"
        if len(others) > 1:
            label = f"{r}: {label}"
        out += [f"**{label}**" if md else label, ""]
        if sub.empty:
            continue
        rows = [
            [
                f"{x.kind} (flaky)" if x.flaky else x.kind,
                _cell(x.question_id, 40, md),
                _cell(x.question, 50, md),
                x.failure_change,
                _cell(x.changes, 500, md),
            ]
            for x in sub.head(max_questions).itertuples(index=False)
        ]
        table(["kind", "question_id", "question", "failure type", "changes"], rows)
        if len(sub) > max_questions:
            out += [f"… and {len(sub) - max_questions} more", ""]
    return "\n".join(out).rstrip() + "\n"


# ---------------------------------------------------------------------------- per question

QUESTION_CHANGE_COLUMNS: tuple[str, ...] = (
    "run_id",
    "question_id",
    "question",
    "kind",
    "failure_change",
    "changes",
    "base_failure_type",
    "failure_type",
    "to_failure",
    "to_ok",
    "worst_drop",
    "best_gain",
    "n_worse",
    "n_better",
)
QUESTION_KINDS: tuple[str, ...] = ("regression", "mixed", "improvement")


def fold_changes(
    cur: duckdb.DuckDBPyConnection,
    changes: pd.DataFrame,
    run_ids: Sequence[str],
    metrics: Sequence[str],
    catalogue: Catalogue = BUILTIN,
) -> pd.DataFrame:
    """`changes` (rows of `CHANGE_COLUMNS`, metrics compared in `metrics` order, runs in
    `run_ids` order) folded to one row per (candidate run, question), in SQL; directions
    from `catalogue` (the runs' declared metrics included).

    Columns (`QUESTION_CHANGE_COLUMNS`):
    - kind: `regression` when every change is for the worse (a drop beyond tolerance, a
      rise for latency and cost, a flip from ok to a failure), `improvement` when every
      change is for the better, `mixed` otherwise
    - failure_change: `ok → unfaithful` (any change of failure type, not only flips), or
      `unchanged`
    - changes: the metrics that moved beyond tolerance, worse ones first, each group
      largest first: `faithfulness 1.00→0.50 (−0.50); answer_correctness 1.00→0.62 (−0.38)`
      (scores with two decimals, latency and cost with four significant digits, − for minus)
    - to_failure / to_ok: the question flipped from ok to a failure / back to ok
    - worst_drop / best_gain: the largest move of a score (0–1 metric) for the worse /
      better, 0 when none; latency and cost, in their own units, are listed but not ranked
    - n_worse / n_better: how many metrics moved for the worse / better

    Order, worst first: regressions, mixed, improvements; regressions and mixed by flip to a
    failure then largest drop, improvements by flip to ok then largest gain; then run (in
    `run_ids` order) and question id. A per-group pandas loop took seconds for two runs of
    1,000 questions; one GROUP BY takes milliseconds.
    """
    name = f"chg_{uuid.uuid4().hex}"
    cur.register(name, changes)
    try:
        return cur.execute(
            sql.QUESTION_CHANGES.format(changes=name),
            {
                "metrics": [*metrics, "failure_type"],
                "raw": [m for m in metrics if not catalogue.is_score(m)],
                "kinds": list(QUESTION_KINDS),
                "run_ids": list(run_ids),
            },
        ).df()
    finally:
        cur.unregister(name)


def question_headline(qc: pd.DataFrame) -> str:
    """`Regressed: 12 questions, improved: 3, mixed: 1` over `Comparison.questions` rows."""
    n = qc["kind"].value_counts()
    reg = int(n.get("regression", 0))
    flaky = int((qc["kind"] == "regression").mul(qc["flaky"]).sum()) if "flaky" in qc else 0
    return (
        f"Regressed: {reg} question{'' if reg == 1 else 's'}"
        + (f" ({flaky} known flaky)" if flaky else "")
        + f", improved: {int(n.get('improvement', 0))}, mixed: {int(n.get('mixed', 0))}"
    )
