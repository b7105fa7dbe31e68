"""`rageval calibrate LABELS.yaml --run RUN`: judge verdicts against human labels."""

from __future__ import annotations

import argparse
import sys

from rageval_core import results
from rageval_core.calibration import (
    calibrate,
    check_faithful_min,
    format_calibration,
    load_labels,
)
from rageval_core.commands import add_results_option
from rageval_core.errors import ResultsError

_COLUMNS = ("question_id", "claims", "faithfulness", "judge_error")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="compare a run's judge verdicts with human labels (agreement, Cohen's kappa)",
        description="Compare a run's judge verdicts with human labels: agreement, Cohen's "
        "kappa, confusion matrix, and every disagreement. Label format: docs/judges.md.",
    )
    p.add_argument("labels", metavar="LABELS.yaml", help="human labels of claims or questions")
    p.add_argument("--run", required=True, metavar="RUN", help="run id to compare")
    add_results_option(p)
    p.add_argument(
        "--faithful-min",
        type=float,
        default=1.0,
        metavar="X",
        help="a question counts as faithful for the judge when faithfulness >= X (default 1.0)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_faithful_min(args.faithful_min, "--faithful-min")  # before any file is read
    labels = load_labels(args.labels)
    info = results.inspect_run(results.results_location(args.results), args.run)
    if not info.readable:
        raise ResultsError(f"run {args.run} has no readable rows: {'; '.join(info.problems)}")
    table, problems = results.read_run_rows(info)
    for problem in problems:
        # stderr: stdout is the report, which users redirect to a file.
        print(f"rageval calibrate: warning: {problem}", file=sys.stderr)
    rows = table.select([c for c in _COLUMNS if c in table.column_names]).to_pylist()
    print(format_calibration(calibrate(labels, rows, faithful_min=args.faithful_min)))
    return 0
