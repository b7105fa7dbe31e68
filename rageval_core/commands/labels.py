"""`rageval labels export --format csv|yaml`: the labels location as one file to share."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rageval_core.commands import add_labels_option, add_results_option
from rageval_core.commands.calibrate import warn_all
from rageval_core.labels import LabelStore, labels_location
from rageval_core.labels.export import to_csv, to_yaml
from rageval_core.runs.atomic import atomic_write_bytes


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "labels",
        help="human labels: export them to share",
        description="Human labels of claims and answers (docs/review.md).",
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    e = sub.add_parser(
        "export",
        help="write the labels (newest per reviewer and claim) as CSV or YAML",
        description="Write the labels of the labels location, newest per reviewer and "
        "claim, as CSV (every field) or as the labels YAML `rageval calibrate` reads.",
    )
    e.add_argument("--format", choices=("csv", "yaml"), default="csv", help="default: csv")
    add_labels_option(e)
    add_results_option(e)
    e.add_argument("--dataset", metavar="NAME", help="only this dataset's labels")
    e.add_argument("--reviewer", metavar="NAME", help="only this reviewer's labels")
    e.add_argument("--out", metavar="FILE", help="write here instead of to stdout")
    e.set_defaults(func=export)


def export(args: argparse.Namespace) -> int:
    location = labels_location(args.results, args.labels)
    found = LabelStore(location).load(args.dataset)
    warn_all("labels export", found.problems)
    labels = [lab for lab in found.labels if args.reviewer in (None, lab.reviewer)]
    text = (to_csv if args.format == "csv" else to_yaml)(labels)
    if args.out:
        atomic_write_bytes(Path(args.out), text.encode())
        print(f"{len(labels)} label(s) → {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
