"""`rageval import squad FILE.json --out DIR`: build a golden dataset from SQuAD v2 JSON."""

from __future__ import annotations

import argparse

from rageval_core.commands import import_formats
from rageval_core.dataset import load_dataset


def register(subparsers: argparse._SubParsersAction) -> None:
    squad = import_formats(subparsers).add_parser(
        "squad",
        help="SQuAD v2 JSON: paragraphs become chunks, impossible questions unanswerable",
        description="Import a SQuAD v2 (or v1.1) JSON file. Each paragraph becomes a chunk "
        "<title-slug>#<index>; each question keeps its SQuAD id.",
    )
    squad.add_argument("file", metavar="FILE.json", help="the SQuAD JSON file")
    squad.add_argument("--out", required=True, metavar="DIR", help="folder to write into")
    squad.add_argument("--name", help="dataset name (default: the file name)")
    squad.add_argument("--force", action="store_true", help="replace an existing dataset.yaml")
    squad.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # here, not at the top: the importers package loads the run writer, which `--help` skips
    from rageval_core.importers.squad import import_squad

    done = import_squad(args.file, args.out, name=args.name, overwrite=args.force)
    ds = load_dataset(done.path)  # the import must produce a dataset that validates
    unanswerable = sum(not q.answerable for q in ds.questions)
    print(
        f"wrote {done.path}: {len(ds.questions)} questions ({unanswerable} unanswerable), "
        f"{len(ds.corpus)} chunks; answers at their answer_start: {done.at_start:,}"
    )
    for ids, what in (
        (done.moved, "not at their answer_start, placed at the nearest whole-word match"),
        (done.unplaced, "found nowhere on word boundaries: gold is their paragraph only"),
    ):
        if ids:
            print(f"  {len(ids):,} {what}: {_some(ids)}")
    return 0


def _some(ids: tuple[str, ...], n: int = 5) -> str:
    more = f" and {len(ids) - n:,} more" if len(ids) > n else ""
    return ", ".join(ids[:n]) + more
