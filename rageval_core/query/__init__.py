"""The questions pages and commands ask of a results location: its one public face.

The dashboard, the commands, the report and rescore import from here only
(tests/layering/test_imports.py); the modules behind it are private by name (`_compare.py`,
`_review.py`…). How runs become queryable is `rageval_core.store`, re-exported here where
a caller needs it (`ResultsStore`).

Open a `ResultsStore` once (it holds the DuckDB connection and the derived cache), then call
one typed function per question. Per-run views read that run's own files by path; cross-run
views read the derived cache (`run_summary.parquet`, a narrow `metrics.parquet`) which is
updated run by run. Nothing here writes into a run folder, and nothing imports streamlit.

    store = ResultsStore("results/")              # or "s3://bucket/prefix", read_only=True
    runs_overview(store, tags=["nightly"])        # DataFrame, newest first
    question_rows(store, run_id, QuestionFilter(failure_types=("unfaithful",)), limit=50)
    compare_runs(store, [baseline, candidate])    # Comparison

Public API (all functions take the store first; identifiers are checked against whitelists
and raise `ConfigError`, run ids raise `ResultsError`):

- ResultsStore(location=None, *, read_only=False, cache_dir=None); .refresh(), .runs(),
  .run_info(run_id), .problems -> list[RunProblem], .fingerprint(), .close(),
  .catalogue() -> Catalogue (built-in metrics + every run's declared ones)
- run_catalogue(*infos) -> (Catalogue, conflicts)   the metrics those runs' files hold
- summarize_run(info) -> dict            the run's aggregates (keys: SUMMARY_KEYS)
- runs_overview(store, *, tags, config, dataset, dataset_version, status) -> DataFrame
  (with `previous_run`: each run's previous run, the one rule of `previous.py`)
- previous_run(store, info) -> RunInfo | None; previous_runs(infos) -> {run id: RunInfo}
  the newest complete run created before, same config name and dataset version
- metric_trend(store, metric, *, config, dataset, dataset_version, tags) -> DataFrame
- question_rows(store, run_id, filters, *, sort, descending, limit, offset) -> QuestionPage
- bottom_questions(store, run_id, metric, *, pct=TAIL_PCT) -> Tail (the worst tenth)
- rerank_candidates(store, run_id, *, lo=6, hi=20) -> DataFrame
- recall_curve(store, run_ids=None) -> DataFrame            (run_id, k, recall)
- cost_quality(store, *, quality, run_ids) -> DataFrame      Pareto flags included
- cost_quality_metrics(store) -> tuple[str, ...]             its accepted qualities
- question_detail(store, run_id, question_id) -> QuestionDetail  (its `verdicts`: the
  judge's chunk relevance, answer relevancy and context recall statements)
- question_history(store, question_id, *, dataset) -> DataFrame
- flaky_questions(store, *, dataset, dataset_version, correctness_threshold) -> DataFrame
- failure_counts(store, run_ids=None) -> DataFrame           (run_id, failure_type, n, share)
- metric_distribution(store, run_id, metric) -> DataFrame    (question_id, value)
- question_tags(store, run_id) -> list[str]                  distinct question tags, sorted
- compare_runs(store, run_ids, *, metrics, tolerance, n_resamples, seed) -> Comparison
- unavailable(store, run_id, question_id=None) -> tuple[Unavailable, ...]  what a run (or
  one question) cannot show, grouped by the one reason each (no gold, no reference, judge
  not asked, older run, none given); unavailable_metrics(store, run_ids): what none can
- load_thresholds(path) / check_run(store, run_id, *, baseline, thresholds) -> CheckResult
  (`baseline`: a run id, `latest` = the previous run, `latest-any`; `choose_baseline`)
- judge_drift(store, *, limit) -> list[JudgeDrift]   a judge served by another model (or
  fingerprint) between consecutive runs of one config; `compare_runs` and `check_run`
  say it of the runs they read
"""

from rageval_core.catalogue import QUESTION_METRICS, SORT_KEYS
from rageval_core.query._across_runs import (
    TREND_METRICS,
    cost_quality,
    cost_quality_metrics,
    failure_counts,
    metric_trend,
    recall_curve,
    runs_overview,
)
from rageval_core.query._answer_diff import AnswerDiff, ClaimChange, DiffToken, answer_diff
from rageval_core.query._check import (
    CheckResult,
    CheckRow,
    Threshold,
    argument_run,
    baseline_run,
    check_run,
    format_check,
    load_thresholds,
    parse_thresholds,
    resolve_baseline,
)
from rageval_core.query._compare import (
    NOT_SET,
    QUESTION_CHANGE_COLUMNS,
    QUESTION_KINDS,
    Comparison,
    compare_runs,
    fold_changes,
    format_comparison,
    question_headline,
)
from rageval_core.query._coverage import (
    NO_GOLD,
    Unavailable,
    covered,
    figure_covered,
    unavailable,
    unavailable_metrics,
)
from rageval_core.query._drift import JudgeDrift, judge_drift
from rageval_core.query._flaky import (
    flaky_questions,
    run_flaky,
    run_same_settings,
    run_settings_change,
)
from rageval_core.query._headline import (
    format_headline,
    format_run_lines,
    run_headline,
    run_lines,
)
from rageval_core.query._label_join import JudgeId, judge_of, label_pairs
from rageval_core.query._noise import intervals, latency_spreads
from rageval_core.query._previous import previous_run, previous_runs
from rageval_core.query._question import (
    QuestionDetail,
    RetrievedRow,
    question_detail,
    question_history,
)
from rageval_core.query._review import (
    Disagreement,
    JudgeReport,
    QueueItem,
    RunCoverage,
    judge_reasons,
    judge_reports,
    relevance_agreement,
    review_queue,
    run_coverage,
)
from rageval_core.query._run_questions import (
    TAIL_PCT,
    QuestionFilter,
    QuestionPage,
    Tail,
    bottom_questions,
    metric_distribution,
    question_rows,
    question_tags,
    rerank_candidates,
)
from rageval_core.query._shared import CHART_RUNS
from rageval_core.query._spans import (
    CutSpans,
    DocumentView,
    cut_gold_spans,
    no_retrieval_gold,
    question_documents,
    span_curve,
)
from rageval_core.query._verdicts import QuestionVerdicts
from rageval_core.runs.layout import BACKGROUND_BUILD_RUNS
from rageval_core.runs.reading import run_catalogue
from rageval_core.runs.summary import COVERED_BY, QUALITY_METRICS, SUMMARY_KEYS, summarize_run
from rageval_core.store.claims import ClaimsCache
from rageval_core.store.results import ResultsStore, RunProblem, require_readable
from rageval_core.store.summarising import SUMMARISING

__all__ = [
    "BACKGROUND_BUILD_RUNS",
    "CHART_RUNS",
    "COVERED_BY",
    "NOT_SET",
    "NO_GOLD",
    "QUALITY_METRICS",
    "QUESTION_CHANGE_COLUMNS",
    "QUESTION_KINDS",
    "QUESTION_METRICS",
    "SORT_KEYS",
    "SUMMARISING",
    "SUMMARY_KEYS",
    "TAIL_PCT",
    "TREND_METRICS",
    "AnswerDiff",
    "CheckResult",
    "CheckRow",
    "ClaimChange",
    "ClaimsCache",
    "Comparison",
    "CutSpans",
    "DiffToken",
    "Disagreement",
    "DocumentView",
    "JudgeDrift",
    "JudgeId",
    "JudgeReport",
    "QuestionDetail",
    "QuestionFilter",
    "QuestionPage",
    "QuestionVerdicts",
    "QueueItem",
    "ResultsStore",
    "RetrievedRow",
    "RunCoverage",
    "RunProblem",
    "Tail",
    "Threshold",
    "Unavailable",
    "answer_diff",
    "argument_run",
    "baseline_run",
    "bottom_questions",
    "check_run",
    "compare_runs",
    "cost_quality",
    "cost_quality_metrics",
    "covered",
    "cut_gold_spans",
    "failure_counts",
    "figure_covered",
    "flaky_questions",
    "fold_changes",
    "format_check",
    "format_comparison",
    "format_headline",
    "format_run_lines",
    "intervals",
    "judge_drift",
    "judge_of",
    "judge_reasons",
    "judge_reports",
    "label_pairs",
    "latency_spreads",
    "load_thresholds",
    "metric_distribution",
    "metric_trend",
    "no_retrieval_gold",
    "parse_thresholds",
    "previous_run",
    "previous_runs",
    "question_detail",
    "question_documents",
    "question_headline",
    "question_history",
    "question_rows",
    "question_tags",
    "recall_curve",
    "relevance_agreement",
    "require_readable",
    "rerank_candidates",
    "resolve_baseline",
    "review_queue",
    "run_catalogue",
    "run_coverage",
    "run_flaky",
    "run_headline",
    "run_lines",
    "run_same_settings",
    "run_settings_change",
    "runs_overview",
    "span_curve",
    "summarize_run",
    "unavailable",
    "unavailable_metrics",
]
