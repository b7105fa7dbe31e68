"""`rageval demo`: write the example runs of the bundled dataset into the results directory."""

from __future__ import annotations

import argparse

from rageval_core.results import results_location


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="write the example runs (bundled dataset and pipeline)",
        description="Evaluate the example pipeline in several configurations on the bundled "
        "example dataset and write the runs, dated as a few weeks of history. Existing runs "
        "with the same ids are left alone.",
    )
    p.add_argument(
        "--results", metavar="DIR", help="results directory (default: $RAGEVAL_RESULTS or results/)"
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    # Imported here so `rageval --help` does not load the pipeline, judges and query layer.
    from rageval_core.demo import write_demo

    location = results_location(args.results)
    for r in write_demo(location, progress=not args.no_progress):
        print(f"{r.status}: {r.run_id} ({r.totals['n_questions']} questions) → {r.path}")
    return 0
