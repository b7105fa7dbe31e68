"""`rageval report RUN --out FILE.html`: one self-contained HTML file to attach anywhere."""

from __future__ import annotations

import argparse

from rageval_core.commands import add_baseline_option, add_results_option
from rageval_core.runs.layout import results_location


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="write a self-contained HTML report of a run",
        description="Write one HTML file (charts included, opens with no network) with the "
        "run summary, failure breakdown, tails, retrieval gap, the worst questions with "
        "their unsupported claims and judge reasons, and the comparison with --baseline.",
    )
    p.add_argument("run", metavar="RUN", help="run id")
    add_baseline_option(p, "compare with this run")
    p.add_argument("--out", metavar="FILE.html", required=True, help="file to write")
    add_results_option(p)
    p.add_argument(
        "--worst", metavar="N", type=int, default=15, help="questions shown in full (15)"
    )
    p.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    # Imported here so `rageval --help` does not load plotly and the query layer.
    from rageval_core.errors import ConfigError
    from rageval_core.report import ReportLimits, write_report

    if not 0 <= args.worst <= 500:
        raise ConfigError(f"--worst must be between 0 and 500, got {args.worst}")
    out = write_report(
        results_location(args.results),
        args.run,
        args.out,
        baseline=args.baseline,
        limits=ReportLimits(worst=args.worst),
    )
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
    return 0
