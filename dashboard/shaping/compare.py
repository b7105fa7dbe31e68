"""The Compare page's tables: config differences, paired metric changes, question changes."""

from __future__ import annotations

import pandas as pd

from rageval_core.catalogue import Catalogue


def split_config_diff(diff: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(keys that differ, keys that are the same), without the `differs` column."""
    differs = diff["differs"].astype(bool)
    return (
        diff[differs].drop(columns="differs").reset_index(drop=True),
        diff[~differs].drop(columns="differs").reset_index(drop=True),
    )


QUESTION_CHANGE_TABS: dict[str, str] = {
    "regression": "Regressed questions",
    "improvement": "Improved questions",
    "mixed": "Mixed",
}


def paired_deltas(metrics: pd.DataFrame, baseline: str) -> tuple[pd.DataFrame, list[str]]:
    """(candidate rows of `Comparison.metrics` that have a delta, and for each candidate
    run with no delta at all a line saying why) — an empty chart explains nothing."""
    cand = metrics[metrics["run_id"] != baseline]
    has = cand["delta"].notna()
    reasons = [
        f"No change to show for {run_id}: {'; '.join(dict.fromkeys(part['note'].dropna()))}."
        for run_id, part in cand[~has].groupby("run_id", sort=False)
        if not has[part.index].any()
    ]
    return cand[has], reasons


CHANGE_TABLE = (
    "metric",
    "change",
    "run_id",
    "baseline",
    "mean",
    "delta",
    "ci_low",
    "ci_high",
    "significant",
    "n_pairs",
    "note",
    "definition",
)


def metric_changes(metrics: pd.DataFrame, baseline: str, cat: Catalogue) -> pd.DataFrame:
    """`Comparison.metrics` as Compare's table, what changed first: one row per candidate
    run and metric, with the baseline's mean beside it; significant changes first, then
    by the size of the change (as a share of the metric's range, so a declared metric on
    another scale sorts fairly), then changes with no delta; a metric no run has a value
    for is left out. `change` is the catalogue's reading (`same` within the interval),
    `metric` its label and `definition` its one line."""
    base = metrics[metrics["run_id"] == baseline].set_index("metric")["mean"]
    cand = metrics[metrics["run_id"] != baseline].copy()
    cand["baseline"] = cand["metric"].map(base)
    cand = cand[cand["mean"].notna() | cand["baseline"].notna()]
    width = cand["metric"].map(lambda m: (lambda b: (b[1] - b[0]) or 1.0)(cat.bounds(m)))
    size = (cand["delta"].abs() / width).fillna(-1.0)
    order = pd.DataFrame(
        {"sig": ~cand["significant"].fillna(False).astype(bool), "size": -size},
        index=cand.index,
    )
    ranked = cand.loc[order.sort_values(["sig", "size"], kind="stable").index].copy()
    entries = [cat.entry(m) for m in ranked["metric"]]
    ranked["change"] = [
        e.reading(d, (lo, hi)) or "no delta"
        for e, d, lo, hi in zip(
            entries, ranked["delta"], ranked["ci_low"], ranked["ci_high"], strict=True
        )
    ]
    ranked["definition"] = [e.definition for e in entries]
    ranked["note"] = ranked["note"].fillna("")  # a text column: no "None" in the grid
    ranked["metric"] = [e.label for e in entries]
    return ranked[list(CHANGE_TABLE)].reset_index(drop=True)


def shorten(text: object, width: int = 80) -> str:
    """`text` on one line, cut to `width` characters with an ellipsis."""
    t = " ".join(str(text).split()) if text is not None and not pd.isna(text) else ""
    return t if len(t) <= width else t[: width - 1] + "…"


def split_question_changes(qc: pd.DataFrame, width: int = 80) -> dict[str, pd.DataFrame]:
    """`Comparison.questions` rows by kind (tab order), order kept, question text shortened."""
    out = qc.copy()
    # Once per distinct text: 20 runs compared repeat each question up to 19 times.
    short = {q: shorten(q, width) for q in out["question"].unique()}
    out["question"] = out["question"].map(short)
    return {kind: out[out["kind"] == kind].reset_index(drop=True) for kind in QUESTION_CHANGE_TABS}
