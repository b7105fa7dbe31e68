"""A run's aggregates (one row of the Runs table), computed in DuckDB over its own files.

Key names double as metric names everywhere else: `<metric>` is the run-level mean,
`<metric>_p10` the continuous 10th percentile (docs/metrics.md), so a threshold file can say
`faithfulness_p10: {min: 0.5}` and mean exactly this value. Run-level figures of
`ANSWERABLE_ONLY` metrics cover answerable questions only (see `run_value_sql`).

Every figure is over the questions that have a value, NULL when none has (a pipeline that
reports no token counts has an unknown cost, not a free one); `n_<column>` counts the
questions each covers (`COVERED_BY`). The shares below threshold
use the run's own `failure_thresholds` (`FailureThresholds.recorded`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import fsspec

from rageval_core.catalogue import (
    ANSWERABLE_ONLY,
    BUILTIN,
    COST_COLUMNS,
    LATENCY_COLUMNS,
    TAIL_QUANTILE,
    TOTAL_COST_COUNT,
)
from rageval_core.errors import ConfigError
from rageval_core.models import FAILURE_TYPES, DeclaredMetric
from rageval_core.runs.reading import RunInfo
from rageval_core.runs.source import bind, open_run
from rageval_core.thresholds import DEFAULT_THRESHOLDS, FailureThresholds

QUALITY_METRICS: tuple[str, ...] = BUILTIN.measure_names("quality")
_TOTAL_COST = "cost_usd + coalesce(judge_cost_usd, 0)"
"""A question's whole cost: NULL when the pipeline's is unknown; a question no judge priced
(an import without a judge, a pipeline error) adds no judge cost."""
COVERED_BY: Mapping[str, str] = {
    **{f"{m}{s}": f"n_{m}" for m in QUALITY_METRICS for s in ("", "_p10")},
    **{f"{c}_{q}": f"n_{c}" for c in LATENCY_COLUMNS for q in ("p50", "p95")},
    **{f"{c}_{s}": f"n_{c}" for c in COST_COLUMNS for s in ("per_question", "total")},
    "total_cost_per_question": TOTAL_COST_COUNT,
}
"""The count of questions each quality, latency and cost figure covers (the rest have no
value: a refusal has no faithfulness, a judge error no verdict)."""


def run_thresholds(info: RunInfo) -> tuple[FailureThresholds, list[str]]:
    """The failure thresholds `info`'s rows were scored with (its manifest's recorded
    `failure_thresholds`), and the problem when those are invalid (then the defaults)."""
    config = info.manifest.config if info.manifest else {}
    try:
        return FailureThresholds.recorded(config), []
    except ConfigError as exc:
        return DEFAULT_THRESHOLDS, [f"{info.path}: {exc.message}: {'; '.join(exc.problems or ())}"]


def below_params(t: FailureThresholds) -> dict[str, float]:
    """The bound `$below_*` parameters of the shares below threshold under `t`."""
    return {"below_faithfulness": t.faithfulness_min, "below_correctness": t.correctness_min}


def run_value_sql(metric: str) -> str:
    """SQL of one row's `metric` as run-level figures aggregate it (`metric` is a name
    from a whitelist, never user text): NULL where the figure does not cover the row."""
    if metric in ANSWERABLE_ONLY:
        return f'CASE WHEN answerable THEN "{metric}" END'
    return f'"{metric}"'


SERVED_KEYS: Mapping[str, str] = {
    "judge_served_models": "judge_served_model",
    "judge_fingerprints": "judge_fingerprint",
}
"""What served a run's judge, beside its figures: each key the distinct values of its row
column, sorted; NULL when no question's judge said (an offline judge, an endpoint that
sends no `model`, a run written before rows recorded it). Read by query/_drift.py."""
SERVED_SELECT = ",\n  ".join(
    f'list(DISTINCT "{c}" ORDER BY "{c}") FILTER (WHERE "{c}" IS NOT NULL) AS "{k}"'
    for k, c in SERVED_KEYS.items()
)
"""The aggregate SELECT list of `SERVED_KEYS` over one run's rows."""


def _summary_select() -> str:
    # Built once from the fixed metric whitelist above; no caller-supplied identifier.
    parts = [
        "count(*) AS n_questions",
        "count(*) FILTER (WHERE answerable) AS n_answerable",
        "count(*) FILTER (WHERE answerable = false) AS n_unanswerable",
        "count(*) FILTER (WHERE answerable IS NULL) AS n_reference_free",
        "count(*) FILTER (WHERE error IS NOT NULL OR failure_type = 'error') AS n_errors",
    ]
    for m in QUALITY_METRICS:
        parts.append(f'avg({run_value_sql(m)}) AS "{m}"')
        parts.append(f'quantile_cont({run_value_sql(m)}, 0.1) AS "{m}_p10"')
        parts.append(f'count({run_value_sql(m)}) AS "n_{m}"')
    for m, param in (
        ("faithfulness", "below_faithfulness"),
        ("answer_correctness", "below_correctness"),
    ):
        v = run_value_sql(m)
        parts.append(
            f"avg(CASE WHEN {v} IS NULL THEN NULL WHEN {v} < ${param} THEN 1.0 ELSE 0.0 END) "
            f'AS "{m}_below_threshold"'
        )
    parts += [
        "avg(recall_at_5 - recall_at_20) AS recall_gap",
        "avg(CASE WHEN answerable = false AND refused IS NOT NULL "
        "THEN (NOT refused)::DOUBLE END) AS missed_refusal_rate",
        "avg(CASE WHEN answerable AND refused IS NOT NULL "
        "THEN refused::DOUBLE END) AS false_refusal_rate",
    ]
    for c in LATENCY_COLUMNS:
        parts.append(f'quantile_cont("{c}", 0.5) AS "{c}_p50"')
        parts.append(f'quantile_cont("{c}", 0.95) AS "{c}_p95"')
    for c in COST_COLUMNS:
        parts.append(f'avg("{c}") AS "{c}_per_question"')
        parts.append(f'sum("{c}") AS "{c}_total"')
    parts.append(f"avg({_TOTAL_COST}) AS total_cost_per_question")
    parts += [f'count("{c}") AS "n_{c}"' for c in (*LATENCY_COLUMNS, *COST_COLUMNS)]
    parts.append(f"count({_TOTAL_COST}) AS {TOTAL_COST_COUNT}")
    for ft in FAILURE_TYPES:
        parts.append(f"count(*) FILTER (WHERE failure_type = '{ft}') AS \"failure_{ft}\"")
    parts.append(SERVED_SELECT)
    return ",\n  ".join(parts)


def declared_select(declared: Sequence[DeclaredMetric]) -> str:
    """`, avg("x") AS "x", quantile_cont("x", 0.1) AS "x_p10"` per declared metric, to
    append to SUMMARY_SELECT (empty without declarations).

    The names were validated by `catalogue.parse_declared` (`^[a-z][a-z0-9_]{0,63}$`), and
    this SQL only ever reads rows projected onto the run's own schema.
    """
    return "".join(
        f', avg("{d.name}") AS "{d.name}", '
        f'quantile_cont("{d.name}", {TAIL_QUANTILE}) AS "{d.name}_p10"'
        for d in declared
    )


def split_declared(out: dict[str, Any], declared: Sequence[DeclaredMetric]) -> dict[str, Any]:
    """Move the declared figures of a summary row under one `declared` key, as
    `{name: mean, name_p10: p10}` (the cache keeps them in one MAP column)."""
    keys = [k for d in declared for k in (d.name, f"{d.name}_p10")]
    out["declared"] = {k: out.pop(k, None) for k in keys}
    return out


SUMMARY_EXTRA_COLUMNS: tuple[str, ...] = ("error", *SERVED_KEYS.values())
"""Row columns SUMMARY_SELECT reads beyond the narrow cache's (ids, metrics, types…)."""

SUMMARY_SELECT = _summary_select()
"""The aggregate SELECT list of one run's rows (bound parameters: $below_*)."""

SUMMARY_KEYS: tuple[str, ...] = (
    "n_questions",
    "n_answerable",
    "n_unanswerable",
    "n_reference_free",
    "n_errors",
    *(k for m in QUALITY_METRICS for k in (m, f"{m}_p10", f"n_{m}")),
    "faithfulness_below_threshold",
    "answer_correctness_below_threshold",
    "recall_gap",
    "missed_refusal_rate",
    "false_refusal_rate",
    *(f"{c}_{q}" for c in LATENCY_COLUMNS for q in ("p50", "p95")),
    *(f"{c}_{s}" for c in COST_COLUMNS for s in ("per_question", "total")),
    "total_cost_per_question",
    *(f"n_{c}" for c in (*LATENCY_COLUMNS, *COST_COLUMNS)),
    TOTAL_COST_COUNT,
    *(f"failure_{ft}" for ft in FAILURE_TYPES),
)
"""Every figure `summarize_run` returns, in order (counts are ints, the rest float or None)."""


def summarize_run(
    info: RunInfo,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    fs: fsspec.AbstractFileSystem | None = None,
    to_url: Any = None,
) -> dict[str, Any]:
    """The run's aggregates, keyed by `SUMMARY_KEYS`, what served its judge (`SERVED_KEYS`),
    `problems` (list of str) and `declared` (the mean and p10 of each metric the run
    declares, see `split_declared`).

    Reads the run's own Parquet shard(s) by path, or its journal(s) while running.
    Retrieval and answer_correctness figures cover answerable questions only (retrieval
    metrics are NULL otherwise; see ANSWERABLE_ONLY); missed_refusal_rate is over
    unanswerable questions, false_refusal_rate over answerable ones; latency quantiles
    are continuous; latency and cost figures are over the questions with a value
    (`COVERED_BY`), NULL when none has one; the shares below threshold use the run's own
    `failure_thresholds`.
    Never raises for a damaged run: what it could not read is listed in `problems`.
    """
    thresholds, threshold_problems = run_thresholds(info)
    declared = info.manifest.metrics if info.manifest else ()
    own = con is None
    con = con or duckdb.connect()
    cur = con.cursor()
    try:
        with open_run(cur, info, fs=fs, to_url=to_url or (lambda p: p)) as src:
            sql = "SELECT\n  " + SUMMARY_SELECT + declared_select(declared) + f"\nFROM {src.sql}"
            params = {**src.params, **below_params(thresholds)}
            problems = [*src.problems, *threshold_problems]
            try:
                rel = cur.execute(sql, bind(sql, params))
                names = [d[0] for d in rel.description]
                rows_ = rel.fetchall()
                row = rows_[0] if rows_ else None
                out = dict(zip(names, row, strict=True))
            except duckdb.Error as exc:
                problems.append(f"{info.path}: unreadable rows ({type(exc).__name__}: {exc})")
                out = no_figures()
    finally:
        cur.close()
        if own:
            con.close()
    out = split_declared(finish_summary(out), declared)
    out["problems"] = problems
    return out


def no_figures() -> dict[str, Any]:
    """The aggregates of a run whose rows could not be read: counts 0, figures None."""
    return {
        **{k: (0 if k.startswith(("n_", "failure_")) else None) for k in SUMMARY_KEYS},
        **dict.fromkeys(SERVED_KEYS),
    }


def finish_summary(out: dict[str, Any]) -> dict[str, Any]:
    """A row of SUMMARY_SELECT as Python values: counts int (NULL as 0), what served the
    judge as lists of text, the rest float."""
    for k, v in out.items():
        if k in SERVED_KEYS:
            continue
        if k.startswith(("n_", "failure_")):
            out[k] = int(v or 0)
        elif v is not None:
            out[k] = float(v)
    return out
