"""The derived cache's file schemas: one summary row per run, the narrow rows, the runs index.

Metrics a run declares differ from run to run, so they are not columns here: the summary
and the narrow rows hold them in one `declared MAP(VARCHAR, DOUBLE)` column
(`{name: mean, name_p10: p10}` in a summary row, `{name: value}` in a narrow row), read as
`declared[$name]` with the name a bound parameter. Every file carries CACHE_VERSION: a file
of another version reads as empty and is rebuilt.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rageval_core.models import DeclaredMetric
from rageval_core.runs.rows import QUESTION_SCHEMA
from rageval_core.runs.summary import (
    COST_COLUMNS,
    LATENCY_COLUMNS,
    QUALITY_METRICS,
    SERVED_KEYS,
    SUMMARY_KEYS,
)

CACHE_VERSION = 12  # 7: segments of at most CHUNK_RUNS runs, and the runs index; 8: span
# figures; 9: the reference-free verdicts and n_reference_free; 10: latency and cost over the
# questions with a value (NULL, not 0, when none has) with their counts, and each run's own
# failure thresholds in the shares below threshold; 11: context relevance and precision by
# characters, the reference-free failure types and `unscored`, each quality figure's count;
# 12: what served each run's judge (`SERVED_KEYS`)

NARROW_COLUMNS: tuple[str, ...] = (
    "question_id",
    "answerable",
    "tags",
    "failure_type",
    "refused",
    *QUALITY_METRICS,
    *LATENCY_COLUMNS,
    *COST_COLUMNS,
)

_MANIFEST_FIELDS: list[tuple[str, pa.DataType]] = [
    ("run_id", pa.string()),
    ("created_at", pa.string()),
    ("finished_at", pa.string()),
    ("status", pa.string()),
    ("config_name", pa.string()),
    ("params", pa.string()),  # JSON of the pipeline parameters
    ("config", pa.string()),  # JSON of the whole config
    ("dataset_name", pa.string()),
    ("dataset_version", pa.string()),
    ("dataset_sha256", pa.string()),
    ("dataset_n_questions", pa.int64()),
    ("judge_kind", pa.string()),
    ("judge_model", pa.string()),
    ("judge_version", pa.string()),
    ("git_commit", pa.string()),
    ("tags", pa.list_(pa.string())),
    ("schema_version", pa.int64()),
]
DECLARED_TYPE = pa.map_(pa.string(), pa.float64())
"""Declared metrics of a run in the cache: name -> value (figures: name and name_p10)."""

SUMMARY_SCHEMA = pa.schema(
    _MANIFEST_FIELDS
    + [(k, pa.int64() if k.startswith(("n_", "failure_")) else pa.float64()) for k in SUMMARY_KEYS]
    + [(k, pa.list_(pa.string())) for k in SERVED_KEYS]
    + [
        ("declared", DECLARED_TYPE),
        ("problems", pa.list_(pa.string())),
        ("fingerprint", pa.string()),
        ("segment", pa.string()),
    ]
)
"""One row per run in `run_summary.parquet` (and the runs overview)."""


INDEX_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("fingerprint", pa.string()),
        ("status", pa.string()),
        ("manifest", pa.string()),  # JSON of the parsed manifest (`manifest_to_dict`)
        ("parquet_files", pa.list_(pa.string())),  # names in the run folder
        ("journal_files", pa.list_(pa.string())),
        ("summary_file", pa.string()),
        ("problems", pa.list_(pa.string())),  # the folder's own (`RunInfo.problems`)
    ]
)
"""One row per cached run in `runs_index.parquet`: its `RunInfo` at that fingerprint."""

METRICS_SCHEMA = pa.schema(
    [("run_id", pa.string())]
    + [QUESTION_SCHEMA.field(c) for c in NARROW_COLUMNS]
    + [("declared", DECLARED_TYPE)]
)
"""Columns of the narrow cross-run table (`metrics/seg-*.parquet`)."""


def empty_summary() -> pa.Table:
    return SUMMARY_SCHEMA.empty_table()


def empty_metrics() -> pa.Table:
    return METRICS_SCHEMA.empty_table()


def versioned(table: pa.Table) -> pa.Table:
    return table.replace_schema_metadata({"rageval_cache_version": str(CACHE_VERSION)})


def pack_declared(table: pa.Table, declared: tuple[DeclaredMetric, ...]) -> pa.Table:
    """`table` with its declared metric columns folded into one `declared` MAP column.

    Built in Arrow (keys from the validated declarations, values from the columns) so no
    declared name is ever spliced into the SQL that reads the cache.
    """
    names = [d.name for d in declared if d.name in table.column_names]
    n = table.num_rows
    if not names:
        return table.append_column("declared", pa.nulls(n, DECLARED_TYPE))
    values = np.column_stack(
        [table.column(c).to_numpy(zero_copy_only=False).astype(float) for c in names]
    )
    column = pa.MapArray.from_arrays(
        pa.array(np.arange(0, n * len(names) + 1, len(names), dtype=np.int32)),
        pa.array(names * n, pa.string()),
        pa.array(values.ravel(), pa.float64(), from_pandas=True),
    )
    return table.drop_columns(names).append_column("declared", column)


def is_current(table: pa.Table) -> bool:
    """Whether `table` was written by this CACHE_VERSION (an older file is rebuilt)."""
    meta = table.schema.metadata or {}
    return meta.get(b"rageval_cache_version") == str(CACHE_VERSION).encode()
