"""RAGAS results: `EvaluationResult.to_pandas()` saved as CSV, JSONL (`orient="records",
lines=True`) or Parquet; checked on ragas 0.3/0.4 (and the 0.1 column names).

Columns: `user_input` (0.1: `question`) the question, `response` (`answer`) the answer,
`reference` (`ground_truth`) the reference, `retrieved_contexts` (`contexts`) the
retrieved texts, `retrieved_context_ids` their ids, `reference_context_ids` the gold ids;
`faithfulness`, `answer_correctness`, `answer_relevancy`, `context_recall`,
`nv_context_relevance` and `context_precision` (or an `llm_context_precision_*` variant)
fill rageval's columns of those figures (`PINNED`); every other column whose values are
all numbers is a declared metric. A list cell in CSV is the Python
repr pandas wrote (`['a', 'b']`), read with `ast.literal_eval` (literals only, no code).
RAGAS keeps no question ids: an `id`/`question_id` column is used when present, else the
question text (matched to `--dataset`, or hashed into a stable id).
"""

from __future__ import annotations

import ast
import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rageval_core.bounded_json import BadJSON, read_lines
from rageval_core.errors import SourceError, shown
from rageval_core.importers.common import Imported, metric_name
from rageval_core.models import JudgeRef

ALIASES = {
    "question": ("user_input", "question"),
    "answer": ("response", "answer"),
    "reference": ("reference", "ground_truth"),
    "contexts": ("retrieved_contexts", "contexts"),
    "context_ids": ("retrieved_context_ids",),
    "gold_ids": ("reference_context_ids",),
    "question_id": ("question_id", "id"),
}
PINNED: dict[str, tuple[str, ...]] = {
    "faithfulness": ("faithfulness",),
    "answer_correctness": ("answer_correctness",),
    "answer_relevancy": ("answer_relevancy",),
    "context_relevance": ("context_relevance", "nv_context_relevance"),
    "context_precision": (
        "context_precision",
        "llm_context_precision_with_reference",
        "llm_context_precision_without_reference",
    ),
    "context_recall": ("context_recall",),
}
"""rageval column -> the RAGAS columns that fill it, first present wins; the others stay
declared metrics (docs/import.md says where the meanings differ)."""
TEXT_COLUMNS = {
    "reference_contexts",
    "multi_responses",
    "rubrics",
    "ground_truths",
    "reference_context",
}
LIST_KEYS = ("contexts", "context_ids", "gold_ids")
BATCH = 4096  # Parquet rows decoded at a time
MAX_CELL = 64 << 20  # characters of one CSV cell


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line or row number, row) pairs, streamed: memory is one row's (a Parquet batch's),
    whatever the file's size; `read` goes through them twice. CSV cells stay text, to be
    typed per column."""
    source = str(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        yield from _parquet_rows(path)
    elif suffix in (".jsonl", ".json"):
        for n, row in read_lines(path):
            if isinstance(row, BadJSON):
                raise SourceError(row.at(source))
            if not isinstance(row, dict):
                raise SourceError(f"{source}:{n}: a row must be a JSON object")
            yield n, row
    elif suffix == ".csv":
        yield from _csv_rows(path)
    else:
        raise SourceError(f"{source}: a RAGAS file is .csv, .jsonl or .parquet")


def _parquet_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        n = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH):
            for row in batch.to_pylist():
                n += 1
                yield n, row
    except (pa.ArrowException, OSError) as exc:
        raise SourceError(f"{path}: unreadable Parquet ({shown(exc, 120, bare=True)})") from None


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """CSV as pandas writes it, strictly: an unterminated quote or stray text after a
    closing quote is an error naming the line, not a run cut short."""
    source = str(path)
    csv.field_size_limit(MAX_CELL)
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, strict=True)
            header = next(reader, None)
            if header is None:
                return
            for i, name in enumerate(header, start=1):
                if not name.strip():
                    raise SourceError(
                        f"{source}:1: column {i} has no name (pandas' index column? save "
                        "with to_csv(index=False))"
                    )
            for cells in reader:
                # reader.line_num: the record's last physical line
                if len(cells) != len(header):
                    if not any(c.strip() for c in cells):
                        continue
                    raise SourceError(
                        f"{source}:{reader.line_num}: {len(cells)} cells for {len(header)} columns"
                    )
                yield reader.line_num, dict(zip(header, cells, strict=True))
    except csv.Error as exc:
        raise SourceError(f"{source}:{reader.line_num}: not valid CSV ({exc})") from None
    except UnicodeDecodeError as exc:
        raise SourceError(f"{source}: not UTF-8 text ({exc.reason})") from None


def _column(row: dict[str, Any], key: str) -> tuple[str | None, Any]:
    for name in ALIASES[key]:
        if name in row:
            return name, row[name]
    return None, None


def _empty(v: Any) -> bool:
    return v is None or v == "" or (isinstance(v, float) and math.isnan(v))


def _list(v: Any, where: str) -> list[str] | None:
    if _empty(v):
        return None
    if isinstance(v, str):
        try:
            v = ast.literal_eval(v)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise SourceError(f"{where} must be a list of text, got {shown(v, 60)}") from None
    if not isinstance(v, list | tuple) or not all(isinstance(x, str) for x in v):
        raise SourceError(f"{where} must be a list of text")
    return list(v)


def _num(v: Any) -> float | None:
    """A cell as a number; None when empty; ValueError when it is not one."""
    if _empty(v):
        return None
    if isinstance(v, bool):
        raise ValueError(v)
    f = float(v)  # a CSV cell is text: float("0.75"); ValueError otherwise
    return f if math.isfinite(f) else None


@dataclass
class _Column:
    """What the first pass learnt of one column: numbers only, text, or a mix (the first
    text cell's row and value, to name it)."""

    numbers: int = 0
    text: int = 0
    first_text: tuple[int, Any] | None = None
    unit: bool = True

    def see(self, n: int, v: Any) -> None:
        try:
            f = _num(v)
        except (TypeError, ValueError):
            self.text += 1
            self.first_text = self.first_text or (n, v)
            return
        if f is not None:
            self.numbers += 1
            self.unit = self.unit and 0.0 <= f <= 1.0


def _survey(path: Path) -> tuple[list[str], dict[str, _Column]]:
    """The first pass: the columns (the first row's) and what each holds."""
    source = str(path)
    columns: list[str] | None = None
    stats: dict[str, _Column] = {}
    known = {n for names in ALIASES.values() for n in names} | TEXT_COLUMNS
    for n, row in _rows(path):
        if columns is None:
            columns = list(row)
            if _column(row, "question")[0] is None:
                raise SourceError(
                    f"{source}: column user_input (or question) is missing: not a RAGAS "
                    f"result (columns: {shown(', '.join(columns), 200, bare=True)})"
                )
            stats = {c: _Column() for c in columns if c not in known}
        for col, st in stats.items():
            st.see(n, row.get(col))
    if columns is None:
        raise SourceError(f"{source}: no rows")
    return columns, stats


def read(path: Path) -> Imported:
    source = str(path)
    columns, stats = _survey(path)
    metric_columns, ignored = [], []
    for col, st in stats.items():
        if st.text and not st.numbers:
            ignored.append(col)  # a text column of the user's: not a metric
            continue
        if st.first_text is not None:
            n, value = st.first_text
            raise SourceError(
                f"{source}:{n}: column {shown(col, 60)} must be a number, got {shown(value, 60)}"
            )
        metric_columns.append(col)
    pinned = {
        name: next(c for c in cols if c in metric_columns)
        for name, cols in PINNED.items()
        if any(c in metric_columns for c in cols)
    }
    kept = set(pinned.values())
    labels = {metric_name(c, "ragas"): c for c in metric_columns if c not in kept}
    metrics = {
        name: {
            "label": col[:80],
            "direction": "higher",
            "range": "unit" if stats[col].unit else "number",
        }
        for name, col in labels.items()
    }
    return Imported(
        records=_records(path, labels, pinned),
        metrics=metrics,
        config={
            "pipeline": {"file_columns": columns},
            "ignored_columns": ignored,
            "pinned_columns": pinned,
        },
        judge=JudgeRef(kind="ragas"),
    )


def _records(
    path: Path, labels: dict[str, str], pinned: dict[str, str]
) -> Iterator[dict[str, Any]]:
    """The second pass: one record per row, made as the writer takes it. `pinned` maps a
    rageval column to the file's column that fills it: only the score, so the verdict
    lists (per chunk, per statement) stay NULL."""
    source = str(path)
    for n, row in _rows(path):
        where = f"{source}:{n}"
        rec: dict[str, Any] = {}
        for key in ("question", "answer", "reference", "question_id"):
            name, v = _column(row, key)
            if not _empty(v) and not isinstance(v, str | int):
                raise SourceError(f"{where}: column {name} must be text")
            rec[key] = None if _empty(v) else str(v)
        lists = {}
        for key in LIST_KEYS:
            name, v = _column(row, key)
            lists[key] = _list(v, f"{where}: column {name}")
        texts, ids = lists["contexts"], lists["context_ids"]
        if ids is not None and texts is not None and len(ids) != len(texts):
            raise SourceError(
                f"{where}: retrieved_context_ids has {len(ids)} ids for {len(texts)} contexts"
            )
        if ids is not None:
            rec["retrieved"] = [
                {"id": i, "text": t} for i, t in zip(ids, texts or [""] * len(ids), strict=True)
            ]
        elif texts is not None:
            rec["retrieved"] = [{"text": t} for t in texts]
        if lists["gold_ids"] is not None:
            rec["gold_ids"] = lists["gold_ids"]
        rec["reference"] = rec.pop("reference")
        rec["scores"] = {name: _num(row.get(col)) for name, col in labels.items()}
        for name, col in pinned.items():
            rec[name] = _num(row.get(col))
        yield rec
