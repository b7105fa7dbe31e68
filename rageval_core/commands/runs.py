"""`rageval runs`: the runs of a results location, newest first, with their status."""

from __future__ import annotations

import argparse
import json
import sys

from rageval_core.commands import add_results_option, terminal_progress
from rageval_core.runs.layout import results_location


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "runs",
        help="list the runs, newest first",
        description="List the runs of a results location, newest first: status (complete, "
        "failed, running, or stale when a running run's writer has shown no sign of life), "
        "questions and the headline figures.",
    )
    add_results_option(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument(
        "--limit", type=int, default=0, metavar="N", help="only the N newest runs (0: all)"
    )
    p.set_defaults(func=_runs)


def _runs(args: argparse.Namespace) -> int:
    from rageval_core.errors import ConfigError
    from rageval_core.query import ResultsStore, format_run_lines, run_lines

    if args.limit < 0:
        raise ConfigError(f"--limit must be 0 or more, got {args.limit}")
    with ResultsStore(results_location(args.results), read_only=True, refresh=False) as store:
        with terminal_progress() as report:  # the first look at a large location builds the cache
            store.refresh(report)
        lines = run_lines(store)
        problems = store.problems
    if args.limit:
        lines = lines[: args.limit]
    if args.format == "json":
        print(json.dumps([ln.to_dict() for ln in lines], indent=2))
    else:
        print(format_run_lines(lines), end="")
    for p in problems:
        print(f"rageval runs: warning: {p.run_id or '(location)'}: {p.message}", file=sys.stderr)
    return 0
