"""RAGAS results: `EvaluationResult.to_pandas()` saved as CSV, JSONL (`orient="records",
lines=True`) or Parquet; checked on ragas 0.3/0.4 (and the 0.1 column names).

Columns: `user_input` (0.1: `question`) the question, `response` (`answer`) the answer,
`reference` (`ground_truth`) the reference, `retrieved_contexts` (`contexts`) the
retrieved texts, `retrieved_context_ids` their ids, `reference_context_ids` the gold ids;
`faithfulness` and `answer_correctness` map onto the pinned columns; every other column
whose values are all numbers is a declared metric. A list cell in CSV is the Python
repr pandas wrote (`['a', 'b']`), read with `ast.literal_eval` (literals only, no code).
RAGAS keeps no question ids: an `id`/`question_id` column is used when present, else the
question text (matched to `--dataset`, or hashed into a stable id).
"""

from __future__ import annotations

import ast
import csv
import json
import math
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rageval_core.errors import SourceError, one_line
from rageval_core.importers.common import Imported, declare, metric_name
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
PINNED = {"faithfulness": "faithfulness", "answer_correctness": "answer_correctness"}
TEXT_COLUMNS = {
    "reference_contexts",
    "multi_responses",
    "rubrics",
    "ground_truths",
    "reference_context",
}
LIST_KEYS = ("contexts", "context_ids", "gold_ids")


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line or row number, row) pairs; CSV cells stay text, to be typed per column."""
    source = str(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            try:
                table = pq.read_table(path)
            except (pa.ArrowException, OSError) as exc:
                raise SourceError(f"{source}: unreadable Parquet ({one_line(exc, 120)})") from None
            return list(enumerate(table.to_pylist(), start=1))
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if suffix in (".jsonl", ".json"):
        rows = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise SourceError(f"{source}:{n}: not valid JSON ({one_line(exc, 120)})") from None
            if not isinstance(row, dict):
                raise SourceError(f"{source}:{n}: a row must be a JSON object")
            rows.append((n, row))
        return rows
    if suffix != ".csv":
        raise SourceError(f"{source}: a RAGAS file is .csv, .jsonl or .parquet")
    csv.field_size_limit(sys.maxsize)
    reader = csv.DictReader(text.splitlines(keepends=True))
    # DictReader counts physical lines: a header line, then each record's last line.
    return [(reader.line_num, row) for row in reader]


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
            raise SourceError(f"{where} must be a list of text, got {one_line(v, 60)!r}") from None
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


def read(path: Path) -> Imported:
    source = str(path)
    rows = _rows(path)
    if not rows:
        raise SourceError(f"{source}: no rows")
    columns = list(rows[0][1])
    if _column(rows[0][1], "question")[0] is None:
        raise SourceError(
            f"{source}: column user_input (or question) is missing: not a RAGAS result "
            f"(columns: {one_line(', '.join(columns), 200)})"
        )
    known = {n for names in ALIASES.values() for n in names} | TEXT_COLUMNS
    metric_columns, ignored = [], []
    for col in columns:
        if col in known:
            continue
        values = [r.get(col) for _, r in rows]
        parsed = []
        for v in values:
            try:
                parsed.append(_num(v))
            except (TypeError, ValueError):
                parsed.append(...)
        if all(p is ... for p in parsed if p is not None) and any(p is ... for p in parsed):
            ignored.append(col)  # a text column of the user's: not a metric
            continue
        bad = next((i for i, p in enumerate(parsed) if p is ...), None)
        if bad is not None:
            n = rows[bad][0]
            raise SourceError(
                f"{source}:{n}: column {one_line(col, 60)!r} must be a number, "
                f"got {one_line(values[bad], 60)!r}"
            )
        metric_columns.append(col)
    labels = {metric_name(c, "ragas"): c for c in metric_columns if c not in PINNED}
    records, scores = [], []
    for n, row in rows:
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
        row_scores = {name: _num(row.get(col)) for name, col in labels.items()}
        for col, pinned in PINNED.items():
            if col in metric_columns:
                rec[pinned] = _num(row.get(col))
        rec["scores"] = row_scores
        scores.append(row_scores)
        records.append(rec)
    return Imported(
        records=records,
        metrics=declare(labels, scores),
        config={"pipeline": {"file_columns": columns}, "ignored_columns": ignored},
        judge=JudgeRef(kind="ragas"),
    )
