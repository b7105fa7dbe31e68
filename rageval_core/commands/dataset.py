"""`rageval dataset to-spans DATASET.yaml --out DIR`: id gold rewritten as document spans."""

from __future__ import annotations

import argparse

from rageval_core.dataset import load_dataset, write_spans


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dataset", help="rewrite a golden dataset (to-spans)", description="Rewrite a dataset."
    )
    sub = parser.add_subparsers(dest="dataset_command", metavar="ACTION", required=True)
    spans = sub.add_parser(
        "to-spans",
        help="documents and gold spans from an id dataset whose chunks are in-order pieces",
        description="Rebuild each document from its chunks (corpus order, joined by a blank "
        "line) and give every gold chunk as a span of it too, so the dataset scores any "
        "chunking. Chunk ids and the corpus are kept.",
    )
    spans.add_argument("dataset", metavar="DATASET.yaml", help="the golden dataset file")
    spans.add_argument("--out", required=True, metavar="DIR", help="folder to write into")
    spans.add_argument("--force", action="store_true", help="replace an existing dataset.yaml")
    spans.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = write_spans(args.dataset, args.out, overwrite=args.force)
    ds = load_dataset(path)  # what was written must validate
    n_spans = sum(len(q.gold_spans) for q in ds.questions)
    print(
        f"wrote {path}: {len(ds.documents)} documents, {n_spans} gold spans, "
        f"sha256 {ds.sha256[:12]}"
    )
    return 0
