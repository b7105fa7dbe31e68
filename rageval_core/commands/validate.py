"""`rageval validate DATASET.yaml`: check a golden dataset and list every problem."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from rageval_core.dataset import load_dataset
from rageval_core.errors import DatasetError
from rageval_core.models import GoldenDataset
from rageval_core.placement import Placer


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check a golden dataset; list every problem",
        description="Check a golden dataset and its corpus. Prints a one-line summary, or "
        "every problem as FILE:LINE: ... on stderr and exits 2. Documents that changed since "
        "the versions the dataset records are warnings (stderr, exit 0).",
    )
    parser.add_argument("dataset", metavar="DATASET.yaml", help="the golden dataset file")
    parser.set_defaults(func=run)


def _spans(ds: GoldenDataset) -> str:
    """`40 gold spans (3 with twins: their text stands elsewhere too, and a chunk holding
    a copy covers them)`: twins change what a chunk covers, so the author should know."""
    spans = [s for q in ds.questions for s in q.gold_spans]
    placer = Placer(ds.documents)
    twinned, n = sum(bool(placer.twins([s])) for s in spans), len(spans)
    if not twinned:
        return f"{n} gold spans"
    return (
        f"{n} gold spans ({twinned} with twins: their text stands elsewhere too, and a chunk "
        "holding a copy covers them)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        ds = load_dataset(args.dataset)
    except DatasetError as exc:
        # Compiler-style lines (FILE:LINE: ...) so editors and CI annotations can jump to them.
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(
            f"rageval validate: error: {exc.message} ({len(exc.problems)} problem(s))",
            file=sys.stderr,
        )
        return exc.exit_code
    for warning in ds.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    kinds = Counter(q.answerability for q in ds.questions)
    free = kinds["reference_free"]
    # a questions-only dataset says what its questions are: not unanswerable, unscored
    kind = f"{kinds['unanswerable']} unanswerable" + (f", {free} reference-free" if free else "")
    docs = f", {len(ds.documents)} documents, {_spans(ds)}" if ds.documents else ""
    n_stale = sum(q.stale is not None for q in ds.questions)
    stale = f", {n_stale} stale (left out of runs)" if n_stale else ""
    print(
        f"ok: {ds.name} version {ds.version}: {len(ds.questions)} questions "
        f"({kind}{stale}), {len(ds.corpus)} chunks{docs}, sha256 {ds.sha256[:12]}"
    )
    return 0
