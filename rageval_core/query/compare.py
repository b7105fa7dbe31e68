"""Comparison of two or more runs joined on question_id (dashboard Compare page, CLI).

The first run is the baseline. Per metric: each run's mean, the paired delta against the
baseline with a paired-bootstrap 95% interval (fixed seed: the same inputs always give the
same interval), and per question the regressions, improvements and ok↔not-ok flips.
Rows are read by path, one run at a time; the join and the means run in DuckDB, only the
bootstrap (a resampling of a few thousand paired differences) runs in numpy.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rageval_core.errors import ConfigError
from rageval_core.query import sql
from rageval_core.query.source import bind
from rageval_core.query.store import ResultsStore
from rageval_core.query.views import _LOWER_IS_BETTER, QUESTION_METRICS, _check
from rageval_core.results import RunInfo, validate_run_id

DEFAULT_COMPARE_METRICS: tuple[str, ...] = (
    "recall_at_5",
    "recall_at_20",
    "mrr",
    "ndcg_at_10",
    "faithfulness",
    "answer_correctness",
)


@dataclass(frozen=True)
class Comparison:
    """Result of `compare_runs`; DataFrames are small (one row per metric/question change).

    - `config_diff`: key, one column per run id, `differs` (differing keys first)
    - `metrics`: metric, run_id, mean, n, delta, ci_low, ci_high, n_pairs, significant
      (baseline rows have delta 0 and no interval)
    - `changes`: run_id, question_id, question, metric, kind (regression | improvement),
      base, value, delta, base_failure_type, failure_type — metric `failure_type` marks a
      flip between ok and not ok
    - `warnings`: dataset mismatches, unpaired questions, unfinished runs
    """

    run_ids: tuple[str, ...]
    baseline: str
    config_diff: pd.DataFrame
    metrics: pd.DataFrame
    changes: pd.DataFrame
    warnings: tuple[str, ...]
    tolerance: float

    @property
    def flips(self) -> pd.DataFrame:
        return self.changes[self.changes["metric"] == "failure_type"].reset_index(drop=True)

    @property
    def regressions(self) -> pd.DataFrame:
        return self.changes[self.changes["kind"] == "regression"].reset_index(drop=True)

    @property
    def improvements(self) -> pd.DataFrame:
        return self.changes[self.changes["kind"] == "improvement"].reset_index(drop=True)


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """Nested mappings as dotted keys; leaves rendered as compact JSON."""
    if isinstance(value, Mapping) and value:
        out: dict[str, str] = {}
        for k in sorted(value, key=str):
            out.update(flatten(value[k], f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: json.dumps(value, sort_keys=True, default=str)}


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
        },
        "tags": list(m.tags),
        "git_commit": m.git_commit,
    }


NOT_SET = "(not set)"


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
    flat = (idx + np.arange(n_resamples)[:, None] * n).ravel()
    return np.bincount(flat, minlength=n_resamples * n).reshape(n_resamples, n).astype(float)


def paired_bootstrap_many(
    diffs: np.ndarray, n_resamples: int = 2000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """95% percentile intervals of the mean paired difference, one per column of `diffs`.

    Rows are questions, columns metrics; a NaN (metric missing in either run) is left out
    of each resample's mean. All columns share the same resamples (one draw of indices,
    two matrix products), so the intervals of one comparison are mutually consistent.
    """
    diffs = np.asarray(diffs, dtype=float).reshape(len(diffs), -1)
    n, k = diffs.shape
    if n == 0:
        return np.full(k, np.nan), np.full(k, np.nan)
    ok = ~np.isnan(diffs)
    c = resample_counts(n, n_resamples, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (c @ np.where(ok, diffs, 0.0)) / (c @ ok.astype(float))
    lo, hi = np.full(k, np.nan), np.full(k, np.nan)
    for j in range(k):
        col = means[:, j]
        col = col[~np.isnan(col)]
        if ok[:, j].any() and len(col):
            lo[j], hi[j] = np.percentile(col, [2.5, 97.5])
    return lo, hi


def paired_bootstrap(
    diffs: np.ndarray, n_resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """95% percentile interval of the mean of one array of paired differences."""
    lo, hi = paired_bootstrap_many(np.asarray(diffs, dtype=float)[:, None], n_resamples, seed)
    return float(lo[0]), float(hi[0])


def _changes(run_id, metric, kind, mask, qid, qtext, b, c, bft, cft) -> dict[str, np.ndarray]:
    n = int(mask.sum())
    return {
        "run_id": np.full(n, run_id, dtype=object),
        "question_id": qid[mask],
        "question": qtext[mask],
        "metric": np.full(n, metric, dtype=object),
        "kind": np.full(n, kind, dtype=object),
        "base": b[mask],
        "value": c[mask],
        "delta": c[mask] - b[mask],
        "base_failure_type": bft[mask],
        "failure_type": cft[mask],
    }


def compare_runs(
    store: ResultsStore,
    run_ids: Iterable[str],
    *,
    metrics: Iterable[str] | None = None,
    tolerance: float = 0.05,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare runs against the first; see `Comparison` for what comes back.

    A question regresses on a metric when its value drops by more than `tolerance`
    (rises, for latency and cost); it flips when failure_type goes between `ok` and any
    other type. Deltas and intervals use questions present, with a value, in both runs.
    """
    ids = [validate_run_id(r) for r in run_ids]
    if len(ids) < 2 or len(set(ids)) != len(ids):
        raise ConfigError("compare needs at least two different run ids")
    mets = [_check(m, QUESTION_METRICS, "metric") for m in (metrics or DEFAULT_COMPARE_METRICS)]
    if not isinstance(tolerance, (int, float)) or tolerance < 0:
        raise ConfigError("tolerance must be a non-negative number")
    infos = [store.run_info(r) for r in ids]
    warnings: list[str] = []
    base = infos[0]
    for i in infos[1:]:
        bm, cm = base.manifest, i.manifest
        if (
            bm
            and cm
            and (bm.dataset.sha256 != cm.dataset.sha256 or bm.dataset.version != cm.dataset.version)
        ):
            warnings.append(
                f"{i.run_id} used dataset {cm.dataset.name} v{cm.dataset.version} "
                f"({cm.dataset.sha256[:12]}), baseline {base.run_id} used "
                f"{bm.dataset.name} v{bm.dataset.version} ({bm.dataset.sha256[:12]}): "
                "deltas mix question-set changes with pipeline changes"
            )
    for i in infos:
        if i.status != "complete":
            warnings.append(f"{i.run_id} is {i.status}: figures cover the questions so far")
        warnings += [f"{i.run_id}: {p}" for p in i.problems]

    cols = ", ".join(f'avg("{m}") AS "{m}", count("{m}") AS "n_{m}"' for m in mets)
    pairs = ", ".join(f'b."{m}" AS "base_{m}", c."{m}" AS "{m}"' for m in mets)
    metric_rows: list[dict[str, Any]] = []
    change_frames: list[pd.DataFrame] = []
    cur = store.cursor()
    try:
        means: dict[str, dict[str, Any]] = {}
        for info in infos:
            with store.run_source(cur, info.run_id) as src:
                q = sql.RUN_MEANS.format(cols=cols, src=src.sql)
                rel = cur.execute(q, bind(q, src.params))
                names = [d[0] for d in rel.description]
                means[info.run_id] = dict(zip(names, rel.fetchall()[0], strict=True))
        for m in mets:
            metric_rows.append(
                {
                    "metric": m,
                    "run_id": base.run_id,
                    "mean": means[base.run_id][m],
                    "n": means[base.run_id][f"n_{m}"],
                    "delta": 0.0,
                    "ci_low": None,
                    "ci_high": None,
                    "n_pairs": None,
                    "significant": False,
                }
            )
        for info in infos[1:]:
            with (
                store.run_source(cur, base.run_id, alias="base") as bsrc,
                store.run_source(cur, info.run_id, alias="cand") as csrc,
            ):
                q = sql.PAIRED_ROWS.format(pairs=pairs, base=bsrc.sql, cand=csrc.sql)
                df = cur.execute(q, bind(q, {**bsrc.params, **csrc.params})).df()
            n_base = means[base.run_id]["n_questions"]
            n_cand = means[info.run_id]["n_questions"]
            if len(df) < max(n_base, n_cand):
                warnings.append(
                    f"{info.run_id}: {len(df)} questions in common with {base.run_id} "
                    f"({n_cand} vs {n_base}); unpaired questions are left out of deltas"
                )
            qid = df["question_id"].to_numpy(dtype=object)
            qtext = df["question"].to_numpy(dtype=object)
            bft = df["base_failure_type"].to_numpy(dtype=object)
            cft = df["failure_type"].to_numpy(dtype=object)
            base_vals = {m: df[f"base_{m}"].to_numpy(dtype=float, na_value=np.nan) for m in mets}
            cand_vals = {m: df[m].to_numpy(dtype=float, na_value=np.nan) for m in mets}
            deltas = np.column_stack([cand_vals[m] - base_vals[m] for m in mets])
            ci_lo, ci_hi = paired_bootstrap_many(deltas, n_resamples, seed)
            for j, m in enumerate(mets):
                b, c, delta = base_vals[m], cand_vals[m], deltas[:, j]
                ok = ~np.isnan(delta)
                n_pairs = int(ok.sum())
                lo = float(ci_lo[j]) if n_pairs else None
                hi = float(ci_hi[j]) if n_pairs else None
                metric_rows.append(
                    {
                        "metric": m,
                        "run_id": info.run_id,
                        "mean": means[info.run_id][m],
                        "n": means[info.run_id][f"n_{m}"],
                        "delta": float(delta[ok].mean()) if n_pairs else None,
                        "ci_low": lo,
                        "ci_high": hi,
                        "n_pairs": n_pairs,
                        "significant": bool(n_pairs and (lo > 0 or hi < 0)),
                    }
                )
                with np.errstate(invalid="ignore"):
                    worse = delta > tolerance if m in _LOWER_IS_BETTER else delta < -tolerance
                    better = delta < -tolerance if m in _LOWER_IS_BETTER else delta > tolerance
                for kind, mask in (("regression", worse & ok), ("improvement", better & ok)):
                    if mask.any():
                        change_frames.append(
                            _changes(info.run_id, m, kind, mask, qid, qtext, b, c, bft, cft)
                        )
            known = pd.notna(bft) & pd.notna(cft)
            nan = np.full(len(df), np.nan)
            for kind, mask in (
                ("regression", known & (bft == "ok") & (cft != "ok")),
                ("improvement", known & (bft != "ok") & (cft == "ok")),
            ):
                if mask.any():
                    change_frames.append(
                        _changes(
                            info.run_id, "failure_type", kind, mask, qid, qtext, nan, nan, bft, cft
                        )
                    )
    finally:
        cur.close()
    change_cols = [
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
    ]
    changes = pd.DataFrame(
        {
            col: np.concatenate([f[col] for f in change_frames]) if change_frames else []
            for col in change_cols
        },
        columns=change_cols,
    )
    if not changes.empty:
        # flips first, then the largest changes
        size = changes["delta"].abs().fillna(np.inf)
        changes = (
            changes.assign(_size=size)
            .sort_values(
                ["run_id", "kind", "_size", "question_id"],
                ascending=[True, True, False, True],
                kind="stable",
            )
            .drop(columns="_size")
            .reset_index(drop=True)
        )
    return Comparison(
        run_ids=tuple(ids),
        baseline=ids[0],
        config_diff=config_diff(infos),
        metrics=pd.DataFrame(metric_rows),
        changes=changes,
        warnings=tuple(dict.fromkeys(warnings)),
        tolerance=float(tolerance),
    )


def _f(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "—"
    return f"{v:.{digits}f}"


def format_comparison(c: Comparison, fmt: str = "table", max_questions: int = 10) -> str:
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
        out.append(f"- ⚠ {w}" if md else f"warning: {w}")
    if c.warnings:
        out.append("")
    others = [r for r in c.run_ids if r != c.baseline]
    m = c.metrics
    header = ["metric", c.baseline, *[x for r in others for x in (r, "delta", "95% CI")]]
    rows = []
    for metric in dict.fromkeys(m["metric"]):
        sub = m[m["metric"] == metric].set_index("run_id")
        row = [metric, _f(sub.loc[c.baseline, "mean"])]
        for r in others:
            d, lo, hi = sub.loc[r, "delta"], sub.loc[r, "ci_low"], sub.loc[r, "ci_high"]
            mark = " *" if sub.loc[r, "significant"] else ""
            row += [
                _f(sub.loc[r, "mean"]),
                ("—" if d is None or np.isnan(d) else f"{d:+.3f}") + mark,
                f"[{_f(lo)}, {_f(hi)}]",
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
    for kind in ("regression", "improvement"):
        ch = c.changes[c.changes["kind"] == kind]
        label = f"{kind.capitalize()}s ({len(ch)} question-metric pairs, tolerance {c.tolerance:g})"
        out += [f"**{label}**" if md else label, ""]
        if ch.empty:
            continue
        rows = [
            [
                r.run_id,
                str(r.question_id),
                r.metric,
                f"{r.base_failure_type} → {r.failure_type}"
                if r.metric == "failure_type"
                else f"{_f(r.base)} → {_f(r.value)} ({r.delta:+.3f})",
            ]
            for r in ch.head(max_questions).itertuples(index=False)
        ]
        table(["run", "question", "metric", "change"], rows)
    return "\n".join(out).rstrip() + "\n"
