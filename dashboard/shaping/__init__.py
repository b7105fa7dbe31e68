"""Pure helpers that shape query results for display: no Streamlit, no I/O, no SQL.

One module per thing shaped (docs/architecture.md); pages import from this face. The
HTML builders (`dashboard/shaping/marks.py`) are the only place the dashboard makes HTML
from untrusted text.
"""

from __future__ import annotations

from dashboard.shaping.agreement import (
    KAPPA,
    agreement_table,
    coverage_columns,
    disagreement_rows,
    labelled_agreements,
    too_few_note,
)
from dashboard.shaping.compare import (
    QUESTION_CHANGE_TABS,
    metric_changes,
    paired_deltas,
    shorten,
    split_config_diff,
    split_question_changes,
)
from dashboard.shaping.labels import (
    CLAIM_CHOICES,
    JUDGE_IS_RIGHT,
    QUESTION_CHOICES,
    RELEVANCE_CHOICES,
    TOO_FEW,
    answer_labels,
    chosen_verdict,
    chunk_labels,
    first_unreviewed,
    human_summary,
    label_lines,
    label_value,
    queue_rows,
    reviewed_count,
)
from dashboard.shaping.links import question_links, run_links
from dashboard.shaping.marks import (
    MAX_TEXT,
    Mark,
    answer_marks,
    document_block,
    evidence_marks,
    mark_text,
    marked_block,
)
from dashboard.shaping.runs import (
    default_columns,
    default_compare,
    distinct,
    failure_headline,
    key_metrics,
    newest_with,
    problems_markdown,
    quality_metrics,
    run_label,
    run_tags,
    slider_range,
    stale_note,
    widest_gap_run,
    with_deltas,
)

__all__ = [
    "agreement_table",
    "answer_labels",
    "answer_marks",
    "chosen_verdict",
    "chunk_labels",
    "coverage_columns",
    "default_columns",
    "default_compare",
    "disagreement_rows",
    "distinct",
    "document_block",
    "evidence_marks",
    "failure_headline",
    "first_unreviewed",
    "human_summary",
    "key_metrics",
    "newest_with",
    "label_lines",
    "label_value",
    "labelled_agreements",
    "mark_text",
    "marked_block",
    "metric_changes",
    "paired_deltas",
    "problems_markdown",
    "quality_metrics",
    "question_links",
    "queue_rows",
    "reviewed_count",
    "run_label",
    "run_links",
    "run_tags",
    "shorten",
    "slider_range",
    "split_config_diff",
    "split_question_changes",
    "stale_note",
    "too_few_note",
    "widest_gap_run",
    "with_deltas",
    "CLAIM_CHOICES",
    "JUDGE_IS_RIGHT",
    "KAPPA",
    "MAX_TEXT",
    "Mark",
    "QUESTION_CHANGE_TABS",
    "QUESTION_CHOICES",
    "RELEVANCE_CHOICES",
    "TOO_FEW",
]
