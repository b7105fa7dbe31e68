"""`rageval calibrate --run RUN [LABELS.yaml] [--labels DIR|URL]`: the run's judge against
human labels, the figures of the dashboard's Judge page as text."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from rageval_core.commands import add_labels_option, add_results_option
from rageval_core.errors import ResultsError
from rageval_core.labels.verdict import FAITHFUL_MIN, check_faithful_min


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="compare a run's judge with human labels (agreement, Cohen's kappa)",
        description="Compare a judge's verdicts with human labels: Cohen's kappa with a 95% "
        "interval, agreement, confusion matrix, precision/recall of 'unsupported' and every "
        "disagreement, the figures of the dashboard's Judge page. Reads the labels location "
        "and every run of RUN's judge; given only an older LABELS.yaml, that file against "
        "RUN alone. Formats: docs/review.md.",
    )
    p.add_argument(
        "labels_file",
        nargs="?",
        metavar="LABELS.yaml",
        help="an older labels file written for RUN (docs/judges.md)",
    )
    p.add_argument("--run", required=True, metavar="RUN", help="run whose judge to calibrate")
    add_labels_option(p)
    add_results_option(p)
    p.add_argument(
        "--faithful-min",
        type=float,
        default=FAITHFUL_MIN,
        metavar="X",
        help=f"a question passes for the judge when faithfulness >= X (default {FAITHFUL_MIN})",
    )
    p.set_defaults(func=run)


def warn_all(command: str, problems: Iterable[str]) -> None:
    """Problems as warnings on stderr: stdout is the report, which users redirect."""
    for problem in problems:
        print(f"rageval {command}: warning: {problem}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    # imported here: `rageval --help` should not pay for DuckDB and pandas (0.5 s)
    from rageval_core.calibration import format_report
    from rageval_core.labels import LabelSet, LabelStore, labels_location
    from rageval_core.labels.older_yaml import labels_from_yaml
    from rageval_core.query import (
        ResultsStore,
        judge_of,
        judge_reasons,
        judge_reports,
        relevance_agreement,
        require_readable,
    )
    from rageval_core.runs.reading import inspect_run

    check_faithful_min(args.faithful_min, "--faithful-min")  # before any file is read
    with ResultsStore(args.results) as store:
        info = require_readable(inspect_run(store.location, args.run))
        if info.manifest is None:  # labels belong to a dataset version, named there
            detail = "; ".join(info.problems) or "no manifest"
            raise ResultsError(
                f"run {info.run_id!r} has no readable manifest ({detail}): calibrate needs "
                "its dataset version and judge"
            )
        labels = LabelSet()
        if args.labels_file:
            labels = labels_from_yaml(args.labels_file, info)
        if args.labels or not args.labels_file:
            location = labels_location(store.location, args.labels)
            labels = labels.merged(LabelStore(location).load())
            scope = [r for r in store.runs() if r.readable and judge_of(r) == judge_of(info)]
        else:
            scope = [info]
        in_scope = {r.run_id for r in scope}
        warn_all("calibrate", labels.problems)
        warn_all(
            "calibrate",
            (f"{p.run_id}: {p.message}" for p in store.problems if p.run_id in in_scope),
        )
        shas = {r.manifest.dataset.sha256 for r in scope if r.manifest}
        labels = LabelSet(tuple(lab for lab in labels.labels if lab.dataset_sha256 in shas))
        (report,) = judge_reports(store, labels, scope, faithful_min=args.faithful_min)
        reasons = judge_reasons(store, report.disagreements)
        relevance = relevance_agreement(store, labels, scope)
    print(format_report(report, labels, reasons, relevance))
    return 0
