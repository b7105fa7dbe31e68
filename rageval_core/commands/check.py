"""`rageval check RUN`: the CI gate — thresholds and drops vs a baseline; exit 1 on a breach."""

from __future__ import annotations

import argparse
import sys

from rageval_core.commands import add_baseline_option, add_results_option
from rageval_core.runs.layout import MANIFEST, results_location


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "check",
        help="gate a run on thresholds (exit 1 on a breach)",
        description="Check a run's figures against thresholds ({min, max, max_drop, "
        "max_rise} per metric; `<metric>_p10` is the 10th percentile) and against a "
        "baseline run. Prints `recall@5  0.78  (was 0.71)  +0.07` rows, ✗ on a breach. "
        "Without thresholds nothing is gated, and the output says so. "
        "Exit 0 = pass, 1 = breach, 2 = bad arguments or thresholds (or none, with "
        "--require-thresholds).",
    )
    p.add_argument("run", metavar="RUN", help="run id to check")
    add_baseline_option(p, "run to compare with")
    p.add_argument(
        "--thresholds",
        metavar="FILE",
        help="YAML: a run config with `thresholds:` or a bare mapping (default: the run "
        "config's thresholds recorded in the manifest, if any)",
    )
    p.add_argument(
        "--require-thresholds",
        action="store_true",
        help="exit 2 when no threshold is set (none in --thresholds or the manifest): a "
        "CI gate that gates nothing is a mistake",
    )
    p.add_argument("--format", choices=("text", "markdown"), default="text")
    add_results_option(p)
    p.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    from rageval_core.query import (
        ResultsStore,
        argument_run,
        check_run,
        format_check,
        load_thresholds,
        parse_thresholds,
        run_catalogue,
    )

    with ResultsStore(results_location(args.results), read_only=True, refresh=False) as store:
        info = argument_run(store, args.run)
        # thresholds may name the metrics this run declares
        catalogue = run_catalogue(info)[0]
        if args.thresholds:
            thresholds = load_thresholds(args.thresholds, catalogue)
        else:
            m = info.manifest
            recorded = (m.config.get("thresholds") if m else None) or None
            thresholds = (
                parse_thresholds(recorded, f"{args.run}/{MANIFEST}", catalogue) if recorded else ()
            )
        result = check_run(store, info, baseline=args.baseline, thresholds=thresholds)
    print(format_check(result, args.format), end="")
    if args.require_thresholds and not result.gated:
        print(
            f"rageval check: error: --require-thresholds: no thresholds for {result.run_id} "
            "(give --thresholds FILE, or a `thresholds:` key in the run config)",
            file=sys.stderr,
        )
        return 2
    return result.exit_code
