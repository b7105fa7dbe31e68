"""The query layer: every question the dashboard and the CLI ask of a results location.

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
"""

from rageval_core.query.check import (
    CheckResult,
    CheckRow,
    Threshold,
    check_run,
    load_thresholds,
    parse_thresholds,
    resolve_baseline,
)
from rageval_core.query.compare import Comparison, compare_runs
from rageval_core.query.coverage import Unavailable, unavailable, unavailable_metrics
from rageval_core.query.previous import previous_run, previous_runs
from rageval_core.query.verdicts import QuestionVerdicts
from rageval_core.query.views import (
    CHART_RUNS,
    QUESTION_METRICS,
    SORT_KEYS,
    TAIL_PCT,
    TREND_METRICS,
    QuestionDetail,
    QuestionFilter,
    QuestionPage,
    RetrievedRow,
    Tail,
    bottom_questions,
    cost_quality,
    cost_quality_metrics,
    failure_counts,
    flaky_questions,
    metric_distribution,
    metric_trend,
    question_detail,
    question_history,
    question_rows,
    question_tags,
    recall_curve,
    rerank_candidates,
    runs_overview,
)
from rageval_core.runs.summary import QUALITY_METRICS, SUMMARY_KEYS, summarize_run
from rageval_core.store.results import ResultsStore, RunProblem, run_catalogue

__all__ = [
    "CHART_RUNS",
    "QUALITY_METRICS",
    "QUESTION_METRICS",
    "SORT_KEYS",
    "SUMMARY_KEYS",
    "TAIL_PCT",
    "TREND_METRICS",
    "CheckResult",
    "CheckRow",
    "Comparison",
    "QuestionDetail",
    "QuestionFilter",
    "QuestionPage",
    "QuestionVerdicts",
    "ResultsStore",
    "RetrievedRow",
    "RunProblem",
    "Tail",
    "Threshold",
    "Unavailable",
    "bottom_questions",
    "check_run",
    "compare_runs",
    "cost_quality",
    "cost_quality_metrics",
    "failure_counts",
    "flaky_questions",
    "load_thresholds",
    "metric_distribution",
    "metric_trend",
    "parse_thresholds",
    "previous_run",
    "previous_runs",
    "question_detail",
    "question_history",
    "question_rows",
    "question_tags",
    "recall_curve",
    "rerank_candidates",
    "resolve_baseline",
    "run_catalogue",
    "runs_overview",
    "summarize_run",
    "unavailable",
    "unavailable_metrics",
]
