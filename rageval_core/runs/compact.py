"""The rows of a run written in batches (part files), as one ordered table: each question's
last write, in the dataset's order (else the order questions were first added), read by
DuckDB so a million-row run is never held in memory (docs/import.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import pyarrow as pa

SEQ = "_seq"
"""The column a part file adds to the run's schema: the order rows were added in."""

MEMORY_LIMIT = "256MB"  # DuckDB spills its sort to disk past this

_COMPACT = f"""
SELECT r.* EXCLUDE ({SEQ}, _first, _rank)
FROM (
  SELECT *,
    min({SEQ}) OVER (PARTITION BY question_id) AS _first,
    row_number() OVER (PARTITION BY question_id ORDER BY {SEQ} DESC) AS _rank
  FROM read_parquet($files)
) r
LEFT JOIN dataset_order o ON o.question_id = r.question_id
WHERE r._rank = 1
ORDER BY coalesce(o.position, $unlisted), r._first
"""


def compacted_batches(
    files: Sequence[str], order: Sequence[str], spill_dir: str, batch_rows: int
) -> tuple[duckdb.DuckDBPyConnection, pa.RecordBatchReader]:
    """The compacted rows of the part `files` as Arrow batches of `batch_rows`; `order`
    lists question ids in the dataset's order (empty: the order they were added). The
    caller closes the connection once the reader is drained."""
    con = duckdb.connect(
        ":memory:",
        config={"memory_limit": MEMORY_LIMIT, "threads": 1, "temp_directory": spill_dir},
    )
    try:
        con.execute("SET preserve_insertion_order = false")
        positions = pa.table(
            {
                "question_id": pa.array(order, pa.string()),
                "position": pa.array(range(len(order)), pa.int64()),
            }
        )
        con.register("dataset_order", positions)
        rel = con.sql(_COMPACT, params={"files": list(files), "unlisted": len(order)})
        return con, rel.to_arrow_reader(batch_rows)
    except BaseException:
        con.close()
        raise
