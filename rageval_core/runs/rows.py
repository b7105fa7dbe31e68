"""The per-question row schema and how values are held to it (journal lines and Parquet
columns alike), so every reader and writer of a run agrees on a row's types."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rageval_core.catalogue import DEFAULT_KS, retrieval_columns, span_columns
from rageval_core.errors import shown
from rageval_core.metrics.context import CHAR_COLUMNS
from rageval_core.models import DeclaredMetric

CLAIM_TYPE = pa.struct(
    [
        ("text", pa.string()),
        ("verdict", pa.string()),
        ("evidence_chunk_id", pa.string()),
        ("evidence", pa.string()),
        ("reason", pa.string()),
    ]
)


CHUNK_VERDICT_TYPE = pa.struct(
    [
        ("chunk_id", pa.string()),
        ("rank", pa.int32()),
        ("relevant", pa.bool_()),
        ("reason", pa.string()),
    ]
)
STATEMENT_TYPE = pa.struct(
    [
        ("text", pa.string()),
        ("attributed", pa.bool_()),
        ("evidence_chunk_id", pa.string()),
        ("evidence", pa.string()),
        ("reason", pa.string()),
    ]
)
JUDGE_FIELDS: list[tuple[str, pa.DataType]] = [
    ("context_relevance", pa.float64()),
    ("context_precision", pa.float64()),
    ("chunk_verdicts", pa.list_(CHUNK_VERDICT_TYPE)),
    ("answer_relevancy", pa.float64()),
    ("answer_relevancy_reason", pa.string()),
    ("context_recall", pa.float64()),
    ("recall_statements", pa.list_(STATEMENT_TYPE)),
]
"""The reference-free verdicts (docs/metrics.md): added after the pinned columns, so files
written before them read these as NULL without a problem."""


SPAN_TYPE = pa.struct([("doc_id", pa.string()), ("start", pa.int64()), ("end", pa.int64())])
SPAN_FIELDS: list[tuple[str, pa.DataType]] = [
    # each retrieved chunk's place in a document (NULL where not placed); NULL lists on a
    # dataset without documents
    ("retrieved_doc_ids", pa.list_(pa.string())),
    ("retrieved_starts", pa.list_(pa.int64())),
    ("retrieved_ends", pa.list_(pa.int64())),
    ("gold_spans", pa.list_(SPAN_TYPE)),
    # retrieved chunks not placed in a document / ids not in the corpus (NULL: not checked)
    ("n_unplaced", pa.int64()),
    ("n_unknown_ids", pa.int64()),
]
"""Columns of spans and chunk placement (docs/metrics.md), after the id retrieval columns."""
PLACEMENT_FIELDS: list[tuple[str, pa.DataType]] = [
    # chunks whose offsets did not hold their text (placed by text instead); document ids
    # the dataset does not have, and the chunks naming one placed by text anyway
    ("n_offsets_mismatched", pa.int64()),
    ("unknown_doc_ids", pa.list_(pa.string())),
    ("n_unknown_doc_placed", pa.int64()),
]
"""What placement did not match (docs/metrics.md, "Span metrics"): added after the pinned
columns, so files written before them read these as NULL without a problem."""


BOUND_FIELDS: list[tuple[str, pa.DataType]] = [
    # characters of the question, answer and chunk texts beyond models.MAX_TEXT_CHARS, cut
    ("n_chars_cut", pa.int64()),
]
"""What a row's size limit cut (docs/pipeline.md, "Size limits"): after the pinned
columns, so files written before it read it as NULL."""
CHAR_FIELDS: list[tuple[str, pa.DataType]] = [(c, pa.float64()) for c in CHAR_COLUMNS]
"""Context relevance and precision weighed by characters (`metrics/context.py`): after
the pinned columns, so files written before them read these as NULL."""


SERVED_FIELDS: list[tuple[str, pa.DataType]] = [
    # what an HTTP judge's endpoint said answered (judges/reply_cache.py `Served`); NULL: not said
    ("judge_served_model", pa.string()),
    ("judge_fingerprint", pa.string()),
]
"""What served the judge's verdicts (docs/judges.md, "Judge drift"): after the pinned
columns, so files written before them read them as NULL."""


def question_schema(
    ks: Iterable[int] = DEFAULT_KS, declared: Iterable[DeclaredMetric] = ()
) -> pa.Schema:
    """The per-question row schema. Pinned names are a public contract: add, never rename.

    A run's declared metrics (validated names, see `catalogue.parse_declared`) are one
    float64 column each, after the pinned ones.
    """
    ks = sorted(set(DEFAULT_KS) | set(ks))
    fields: list[tuple[str, pa.DataType]] = [
        ("run_id", pa.string()),
        ("question_id", pa.string()),
        ("question", pa.string()),
        ("reference_answer", pa.string()),
        ("answerable", pa.bool_()),
        ("tags", pa.list_(pa.string())),
        ("answer", pa.string()),
        ("retrieved_ids", pa.list_(pa.string())),
        ("retrieved_texts", pa.list_(pa.string())),
        ("retrieved_scores", pa.list_(pa.float64())),
        ("gold_ids", pa.list_(pa.string())),
        ("gold_ranks", pa.list_(pa.int32())),
    ]
    fields += [(c, pa.float64()) for c in retrieval_columns(ks)]
    fields += SPAN_FIELDS
    fields += [(c, pa.float64()) for c in span_columns(ks)]
    fields += [
        ("faithfulness", pa.float64()),
        ("claims", pa.list_(CLAIM_TYPE)),
        ("unsupported_claims", pa.list_(pa.string())),
        ("answer_correctness", pa.float64()),
        ("refused", pa.bool_()),
        ("failure_type", pa.string()),
        ("retrieval_ms", pa.float64()),
        ("generation_ms", pa.float64()),
        ("ttft_ms", pa.float64()),
        ("total_ms", pa.float64()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("judge_cost_usd", pa.float64()),
        ("error", pa.string()),
        ("judge_error", pa.string()),
    ]
    fields += JUDGE_FIELDS
    fields += PLACEMENT_FIELDS
    fields += BOUND_FIELDS
    fields += CHAR_FIELDS
    fields += SERVED_FIELDS
    fields += [(d.name, pa.float64()) for d in declared]
    return pa.schema(fields)


QUESTION_SCHEMA = question_schema()


PINNED_COLUMNS: tuple[str, ...] = tuple(
    n
    for n in QUESTION_SCHEMA.names
    if n not in ("retrieved_scores", "total_ms", "judge_error")
    and n not in dict(JUDGE_FIELDS + PLACEMENT_FIELDS + BOUND_FIELDS + CHAR_FIELDS + SERVED_FIELDS)
)
"""The per-question columns docs/pipeline.md names as a public contract; every writer fills them."""


_COLUMN_TYPES = {f.name: f.type for f in QUESTION_SCHEMA}


_K_COLUMN = re.compile(r"^(?:recall|precision|hit|span_recall|span_precision|span_iou)_at_\d+$")


def column_type(name: str, declared: Collection[str] = ()) -> pa.DataType | None:
    """The Arrow type a row column must have: schema columns, any `*_at_K` and the run's
    `declared` metric names (float64, like a pinned score); None for a column rageval does
    not know (kept as the file has it)."""
    t = _COLUMN_TYPES.get(name)
    if t is None and (_K_COLUMN.match(name) or name in declared):
        return pa.float64()
    return t


def declared_names(declared: Iterable[DeclaredMetric]) -> frozenset[str]:
    return frozenset(d.name for d in declared)


def _wrong_type(name: str, have: str, want: str, declared: Collection[str]) -> str:
    """How a column of the wrong type is named in a problem (`where` inside it appended)."""
    if name in declared:
        return f"declared metric {shown(name, 60)} is {have}, not numeric"
    return f"column {name} is {have}, expected {want}"


def missing_declared(
    present: Collection[str], declared: Iterable[DeclaredMetric], source: str
) -> list[str]:
    """A problem per declared metric a file (Parquet schema or journal rows) lacks."""
    return [
        f"{source}: declared metric {d.name!r} is missing (read as NULL)"
        for d in declared
        if d.name not in present
    ]


class _WrongType(Exception):
    """A JSON value that does not fit a column: `where` (e.g. `[0].verdict`) and what it is."""

    def __init__(self, what: str, expected: str, where: str = ""):
        super().__init__(what)
        self.what, self.expected, self.where = what, expected, where


_JSON_TYPES = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "string",
    list: "list",
    dict: "object",
}


def _type_label(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return "list"
    return "object" if pa.types.is_struct(t) else str(t)


def _spec(t: pa.DataType) -> tuple:
    """The JSON shape of Arrow type `t` as plain tuples, so checking a value makes no
    Arrow call: (kind, label, detail) with detail the item spec of a list, the field
    specs of an object, or the bit width of an int."""
    label = _type_label(t)
    if pa.types.is_list(t):
        return ("list", label, _spec(t.value_type))
    if pa.types.is_struct(t):
        return ("object", label, tuple((f.name, _spec(f.type)) for f in t))
    for kind, test in (
        ("string", pa.types.is_string),
        ("bool", pa.types.is_boolean),
        ("float", pa.types.is_floating),
        ("int", pa.types.is_integer),
    ):
        if test(t):
            return (kind, label, t.bit_width if kind == "int" else None)
    raise TypeError(f"no JSON shape for {t}")


def _conform(value: Any, spec: tuple) -> Any:
    """`value` (parsed JSON) as a value of the column `spec` describes, or _WrongType.

    Lossless changes only: an int where a double belongs (up to 2**53, beyond which a
    double cannot hold it exactly), an integral float where an int belongs.
    """
    if value is None:
        return None
    kind, label, detail = spec
    what = _JSON_TYPES.get(type(value), type(value).__name__)
    if kind == what == "string":
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _WrongType("text that is not valid Unicode", label) from None
        return value
    if kind == what and kind in ("bool", "float"):
        return value
    if kind == "float" and what == "int":
        if abs(value) <= 2**53:
            return float(value)
        what = "an int too large for a double"
    if kind == "int" and what in ("int", "float"):
        if what == "float" and value.is_integer():
            value = int(value)
        if isinstance(value, int):
            if -(2 ** (detail - 1)) <= value < 2 ** (detail - 1):
                return value
            what = "an int out of range"
    if kind == what == "list":
        out = []
        for i, item in enumerate(value):
            try:
                out.append(_conform(item, detail))
            except _WrongType as exc:
                exc.where = f"[{i}]{exc.where}"
                raise
        return out
    if kind == what == "object":
        fields = {}
        for name, field_spec in detail:
            try:
                fields[name] = _conform(value.get(name), field_spec)
            except _WrongType as exc:
                exc.where = f".{name}{exc.where}"
                raise
        return fields
    raise _WrongType(what, label)


_COLUMN_SPECS = {f.name: _spec(f.type) for f in QUESTION_SCHEMA}


_K_SPEC = _spec(pa.float64())


def conform_row(row: Mapping[str, Any], declared: Collection[str] = ()) -> dict[str, Any]:
    """A journal row with every known column checked against its type; ValueError naming
    the question and the column when one does not fit (a missing question id included).

    `declared` names the run's declared metrics: float64 columns, checked like `*_at_K`.
    """
    qid = row.get("question_id")
    out = dict(row)
    for name in ["question_id", *(n for n in row if n != "question_id")]:
        spec = _COLUMN_SPECS.get(name) or (
            _K_SPEC if _K_COLUMN.match(name) or name in declared else None
        )
        if spec is None:
            continue
        try:
            if name == "question_id" and qid is None:
                raise _WrongType("null", "string")
            out[name] = _conform(row.get(name), spec)
        except _WrongType as exc:
            who = "" if name == "question_id" else f"question {shown(qid)}: "
            column = f"{name}{shown(exc.where, 40, bare=True)}"
            raise ValueError(
                f"{who}{_wrong_type(column, exc.what, exc.expected, declared)}"
            ) from None
    return out


def rows_to_table(
    rows: Iterable[Mapping[str, Any]],
    schema: pa.Schema | None = None,
    declared: Iterable[DeclaredMetric] = (),
) -> pa.Table:
    """Build a typed table; columns a row lacks (older schemas) become NULL.

    Keys that are neither pinned columns nor `declared` metrics are dropped.
    """
    rows = list(rows)
    if schema is None:
        extra_ks = {
            int(k.removeprefix("recall_at_"))
            for r in rows
            for k in r
            if k.startswith("recall_at_") and k.removeprefix("recall_at_").isdigit()
        }
        schema = question_schema(extra_ks, declared)
    cols = {name: [r.get(name) for r in rows] for name in schema.names}
    return pa.Table.from_pydict(cols, schema=schema)


def _compatible(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether a file column of type `have` reads as `want` without losing its meaning."""
    if have == want or pa.types.is_null(have):
        return True
    if pa.types.is_dictionary(have):
        return _compatible(have.value_type, want)
    if pa.types.is_string(want):
        return pa.types.is_string(have) or pa.types.is_large_string(have)
    if pa.types.is_floating(want) or pa.types.is_integer(want):
        return pa.types.is_floating(have) or pa.types.is_integer(have)
    if pa.types.is_list(want):
        lists = pa.types.is_list(have) or pa.types.is_large_list(have)
        return lists and _compatible(have.value_type, want.value_type)
    if pa.types.is_struct(want) and pa.types.is_struct(have):
        names = {f.name for f in have}
        return all(_compatible(have.field(f.name).type, f.type) for f in want if f.name in names)
    return False


def check_columns(
    schema: pa.Schema, source: str, declared: Iterable[DeclaredMetric] = ()
) -> tuple[set[str], list[str]]:
    """The columns of a Parquet file that read as the row schema says, and the problems.

    A known column of another type (`faithfulness` stored as strings) is ignored (read as
    NULL) rather than cast, since what its values mean is unknown; a pinned column the
    file lacks is read as NULL. Both are reported, naming the file and the column. The
    run's `declared` metrics are float64 columns checked the same way.
    """
    declared = tuple(declared)
    names = declared_names(declared)
    usable, problems = set(), []
    for f in schema:
        want = column_type(f.name, names)
        if want is None or _compatible(f.type, want):
            usable.add(f.name)
        else:
            have, name = shown(_type_label(f.type), 60, bare=True), shown(f.name, 60, bare=True)
            problems.append(
                f"{source}: {_wrong_type(name, have, _type_label(want), names)}: values ignored"
            )
    missing = [c for c in PINNED_COLUMNS if c not in schema.names]
    if missing:
        more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        problems.append(
            f"{source}: missing pinned column(s) {', '.join(missing[:8])}{more}: shown as empty"
        )
    problems += missing_declared(schema.names, declared, source)
    return usable, problems


def stray_run_ids(found: Iterable[object], run_id: str, source: str) -> list[str]:
    """A problem when rows of `source` name a run other than the folder they are in (a
    shard copied between runs, a hand edit). Rows are shown under the folder's run id,
    since the folder is what every link and listing names."""
    other = sorted({str(v) for v in found if v is not None and v != run_id})
    if not other:
        return []
    names = ", ".join(shown(v) for v in other[:3]) + (" …" if len(other) > 3 else "")
    return [f"{source}: rows name run(s) {names}, not {run_id}: shown under {run_id}"]


PARQUET_MAGIC = b"PAR1"


def damaged_header(head: bytes, source: str) -> list[str]:
    """A problem when a Parquet file's first bytes are not its magic number. Readers go by
    the footer and never look there, so the rows still read; but the file was written over
    and may be damaged where no reader notices."""
    if head == PARQUET_MAGIC:
        return []
    return [f"{source}: starts with {head!r}, not the Parquet magic {PARQUET_MAGIC!r}: damaged"]


def parquet_run_ids(pf: pq.ParquetFile) -> list[object]:
    """The distinct `run_id` values of a Parquet file, from its row-group statistics when
    every group has them (a footer read), else from the column itself."""
    field_ = pf.schema_arrow.field("run_id") if "run_id" in pf.schema_arrow.names else None
    if field_ is None or not _compatible(field_.type, pa.string()):
        return []  # absent or of the wrong type: `check_columns` reports it
    col = pf.schema_arrow.get_field_index("run_id")
    seen: list[object] = []
    for g in range(pf.metadata.num_row_groups):
        stats = pf.metadata.row_group(g).column(col).statistics
        if stats is None or not (stats.has_min_max or stats.null_count == stats.num_values):
            return pc.unique(pf.read(columns=["run_id"]).column(0)).to_pylist()
        if stats.has_min_max:
            seen += [stats.min, stats.max]
    return seen
