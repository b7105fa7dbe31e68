"""`rageval compare A B [C …]`: the dashboard's Compare page in the terminal."""

from __future__ import annotations

import argparse

from rageval_core.commands import add_results_option
from rageval_core.runs.layout import results_location


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help="compare runs against the first (baseline)",
        description="Compare two or more runs question by question: config diff, metric "
        "means with paired deltas and bootstrap 95% intervals, then one line per question "
        "that changed (regressed, improved or mixed), worst first: its failure-type change "
        "and the metrics that moved beyond the tolerance. The first run is the baseline.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="run ids; the first is the baseline")
    add_results_option(p)
    p.add_argument("--format", choices=("table", "markdown"), default="table")
    p.add_argument("--metrics", metavar="M,M", help="comma-separated per-question metrics")
    p.add_argument(
        "--tolerance", type=float, default=0.05, help="per-question change counted (default 0.05)"
    )
    p.add_argument(
        "--max-questions",
        type=int,
        default=20,
        help="changed questions listed per candidate run, worst first (default 20)",
    )
    p.set_defaults(func=_compare)


def _compare(args: argparse.Namespace) -> int:
    from rageval_core.errors import ConfigError
    from rageval_core.query import ResultsStore, argument_run, compare_runs, format_comparison

    if len(args.runs) < 2:
        raise ConfigError("compare needs at least two run ids")
    if args.max_questions < 0:
        raise ConfigError("--max-questions must be 0 or more")
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    # refreshed: which questions are known to be flaky comes from the runs' history
    with ResultsStore(results_location(args.results), read_only=True) as store:
        runs = [argument_run(store, r) for r in args.runs]
        c = compare_runs(store, runs, metrics=metrics, tolerance=args.tolerance)
    print(format_comparison(c, args.format, args.max_questions), end="")
    return 0
