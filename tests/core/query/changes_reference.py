"""The per-question fold of a comparison as it was written in pandas (one loop per
question), kept here only as the reference the SQL fold (`Comparison.questions`) is checked
against, row for row and character for character. Not used by the library.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rageval_core.catalogue import BUILTIN
from rageval_core.query import QUESTION_CHANGE_COLUMNS, QUESTION_KINDS, Comparison


def _num(metric: str, v: float, sign: bool = False) -> str:
    """Scores with two decimals, latency and cost with four significant digits; − for minus."""
    spec = ".2f" if BUILTIN.is_score(metric) else ".4g"
    return format(v, ("+" if sign else "") + spec).replace("-", "−")


def _failure_change(base: Any, now: Any) -> str:
    b = "—" if base is None or pd.isna(base) else str(base)
    n = "—" if now is None or pd.isna(now) else str(now)
    return "unchanged" if b == n else f"{b} → {n}"


def pandas_question_changes(c: Comparison) -> pd.DataFrame:
    """`c.changes` folded to one row per (candidate run, question): how that question moved.

    Columns (`QUESTION_CHANGE_COLUMNS`):
    - kind: `regression` when every change is for the worse (a drop beyond tolerance, a
      rise for latency and cost, a flip from ok to a failure), `improvement` when every
      change is for the better, `mixed` otherwise
    - failure_change: `ok → unfaithful` (any change of failure type, not only flips), or
      `unchanged`
    - changes: the metrics that moved beyond tolerance, worse ones first, each group
      largest first: `faithfulness 1.00→0.50 (−0.50); answer_correctness 1.00→0.62 (−0.38)`
    - to_failure / to_ok: the question flipped from ok to a failure / back to ok
    - worst_drop / best_gain: the largest move of a score (0–1 metric) for the worse /
      better, 0 when none; latency and cost, in their own units, are listed but not ranked
    - n_worse / n_better: how many metrics moved for the worse / better

    Order, worst first: regressions, mixed, improvements; regressions and mixed by flip to a
    failure then largest drop, improvements by flip to ok then largest gain; then run (in
    `c.run_ids` order) and question id.
    """
    ch = c.changes
    if ch.empty:
        return pd.DataFrame({col: pd.Series(dtype="object") for col in QUESTION_CHANGE_COLUMNS})
    run_order = {r: i for i, r in enumerate(c.run_ids)}
    rows: list[dict[str, Any]] = []
    for (run_id, qid), g in ch.groupby(["run_id", "question_id"], sort=False):
        first = g.iloc[0]
        worse = g[g["kind"] == "regression"]
        better = g[g["kind"] == "improvement"]
        flip = g[g["metric"] == "failure_type"]
        to_failure = bool((flip["kind"] == "regression").any())
        to_ok = bool((flip["kind"] == "improvement").any())
        parts = []
        for part in (worse, better):
            m = part[part["metric"] != "failure_type"]
            m = m.iloc[np.argsort(-m["delta"].abs().to_numpy(), kind="stable")]
            parts += [
                f"{r.metric} {_num(r.metric, r.base)}→{_num(r.metric, r.value)} "
                f"({_num(r.metric, r.delta, sign=True)})"
                for r in m.itertuples(index=False)
            ]

        def largest(part: pd.DataFrame) -> float:
            scores = [m != "failure_type" and BUILTIN.is_score(m) for m in part["metric"]]
            score = part[scores]
            return float(score["delta"].abs().max()) if len(score) else 0.0

        kind = (
            "mixed" if len(worse) and len(better) else "regression" if len(worse) else "improvement"
        )
        rows.append(
            {
                "run_id": run_id,
                "question_id": qid,
                "question": first["question"],
                "kind": kind,
                "failure_change": _failure_change(
                    first["base_failure_type"], first["failure_type"]
                ),
                "changes": "; ".join(parts),
                "base_failure_type": first["base_failure_type"],
                "failure_type": first["failure_type"],
                "to_failure": to_failure,
                "to_ok": to_ok,
                "worst_drop": largest(worse),
                "best_gain": largest(better),
                "n_worse": int((worse["metric"] != "failure_type").sum()),
                "n_better": int((better["metric"] != "failure_type").sum()),
            }
        )
    out = pd.DataFrame(rows, columns=list(QUESTION_CHANGE_COLUMNS))
    good = out["kind"] == "improvement"
    keys = pd.DataFrame(
        {
            "kind": out["kind"].map(QUESTION_KINDS.index),
            "flip": ~out["to_ok"].where(good, out["to_failure"]),
            "size": -out["best_gain"].where(good, out["worst_drop"]),
            "run": out["run_id"].map(run_order),
            "question_id": out["question_id"].astype(str),
        }
    )
    order = keys.sort_values(list(keys.columns), kind="stable").index
    return out.loc[order].reset_index(drop=True)
