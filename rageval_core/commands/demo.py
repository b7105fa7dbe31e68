"""`rageval demo`: write the example runs of the bundled dataset into the results directory."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rageval_core.commands import add_results_option
from rageval_core.runs.layout import is_remote, results_location

if TYPE_CHECKING:
    from rageval_core.runner import RunResult


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="write the example runs (bundled dataset and pipeline)",
        description="Evaluate the example pipeline in several configurations on the bundled "
        "example dataset and write the runs, dated as a few weeks of history, and the "
        "example human labels into labels/ beside a local results folder. Existing runs "
        "with the same ids, and an existing example labels file, are left alone.",
    )
    add_results_option(p)
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    # Imported here so `rageval --help` does not load the pipeline, judges and query layer.
    from rageval_core.demo import write_demo

    location = results_location(args.results)
    if not is_remote(location):
        from rageval_core.labels.example import write_example_labels

        _report(write_demo(location, progress=not args.no_progress))
        labels = write_example_labels(location)
        if labels is not None:
            print(f"example labels → {labels}")
        return 0
    from rageval_core.runs.remote import staged

    # Runs are written locally (journals need appends), then uploaded manifest-last.
    with staged(location) as stage:
        _report(write_demo(str(stage.local_root), progress=not args.no_progress))
        stage.upload()
    print(f"uploaded to {location}")
    return 0


def _report(written: Iterable[RunResult]) -> None:
    for r in written:
        print(f"{r.status}: {r.run_id} ({r.totals['n_questions']} questions) → {r.path}")
