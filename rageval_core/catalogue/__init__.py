"""The metric catalogue (docs/metrics.md): every figure rageval shows, described once.

Two kinds of entry, both `Metric`:

- a **measure** is a per-question numeric column (`recall_at_5`, `faithfulness`,
  `total_ms`, `cost_usd`, or a column a run declares in its manifest);
- a **figure** is a run-level number computed from those rows: a measure's mean
  (`faithfulness`), its 10th percentile (`faithfulness_p10`), a latency quantile
  (`total_ms_p95`), a rate (`missed_refusal_rate`), a count (`failure_error`).

Pages, `check`, `compare`, the report and the CLI take labels, directions, units and the
groups a figure belongs to from here; nobody keeps a label table or a "lower is better"
set of their own. Every SQL identifier built from a metric name comes from a catalogue:
the built-in one, or the built-in one plus a run's validated declarations.

Pure: imports nothing that does I/O, so the metric maths and the results schema can build
on it without pulling in Arrow or a filesystem. This is the package's public face; its
modules hold one idea each (docs/architecture.md).
"""

from rageval_core.catalogue.builtin import (
    BUILTIN,
    QUESTION_METRICS,
    SORT_KEYS,
    TABLE_COLUMNS,
    TABLE_FIRST,
    Catalogue,
)
from rageval_core.catalogue.declared import (
    DECLARED_NAME_RE,
    declared_to_spec,
    parse_declared,
)
from rageval_core.catalogue.failures import (
    FAILURE_GROUPS,
    GROUP_ORDER,
    failure_label,
    failure_rank,
)
from rageval_core.catalogue.measures import (
    COST_COLUMNS,
    DEFAULT_KS,
    GROUPS,
    LATENCY_COLUMNS,
    NDCG_K,
    SPAN_DEFINITIONS,
    TAIL_QUANTILE,
    TOTAL_COST_COUNT,
    retrieval_columns,
    span_columns,
)
from rageval_core.catalogue.metric import ANSWERABLE_ONLY, Metric
from rageval_core.catalogue.sections import DEFINITIONS_PATH, READING_A_CHANGE, SECTIONS
from rageval_core.models import DeclaredMetric

__all__ = [
    "ANSWERABLE_ONLY",
    "BUILTIN",
    "COST_COLUMNS",
    "DECLARED_NAME_RE",
    "DEFAULT_KS",
    "DEFINITIONS_PATH",
    "FAILURE_GROUPS",
    "GROUPS",
    "GROUP_ORDER",
    "LATENCY_COLUMNS",
    "NDCG_K",
    "QUESTION_METRICS",
    "READING_A_CHANGE",
    "SECTIONS",
    "SORT_KEYS",
    "TABLE_COLUMNS",
    "TABLE_FIRST",
    "SPAN_DEFINITIONS",
    "TAIL_QUANTILE",
    "TOTAL_COST_COUNT",
    "Catalogue",
    "DeclaredMetric",
    "Metric",
    "declared_to_spec",
    "failure_label",
    "failure_rank",
    "parse_declared",
    "retrieval_columns",
    "span_columns",
]
