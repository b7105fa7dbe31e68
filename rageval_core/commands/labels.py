"""`rageval labels export --format csv|yaml`: the labels location as one file to share;
`rageval labels to-gold`: a new dataset version whose gold comes from chunk labels."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rageval_core.commands import add_labels_option, add_results_option
from rageval_core.commands.calibrate import warn_all
from rageval_core.dataset import load_dataset
from rageval_core.errors import ConfigError, shown
from rageval_core.labels import LabelStore, labels_location
from rageval_core.labels.export import to_csv, to_yaml
from rageval_core.labels.gold import GoldPlan, chunks_from_runs, plan_gold, write_gold
from rageval_core.runs.atomic import atomic_write_bytes
from rageval_core.runs.layout import results_location


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "labels",
        help="human labels: export them to share, or turn chunk labels into gold",
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
    g = sub.add_parser(
        "to-gold",
        help="write a new dataset version whose gold comes from the chunks marked relevant",
        description="Write a new version of DATASET into DIR (dataset file, corpus, documents) "
        "whose gold adds the chunks reviewers marked relevant: chunk ids, or spans of the "
        "documents when the dataset has documents. Questions without chunk labels keep their "
        "gold; unanswerable ones stay unanswerable; superseded, unknown, unplaceable and "
        "disputed chunks are reported, not applied (docs/review.md).",
    )
    g.add_argument("--dataset", required=True, metavar="D.yaml", help="the dataset to start from")
    g.add_argument("--out", required=True, metavar="DIR", help="folder for the new version")
    add_labels_option(g)
    add_results_option(g)
    g.add_argument(
        "--replace",
        action="store_true",
        help="a labelled question's gold becomes the chunks marked relevant (default: added "
        "to its gold)",
    )
    g.add_argument("--version", metavar="V", help="the new version (default: the next number)")
    g.set_defaults(func=to_gold)


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


def to_gold(args: argparse.Namespace) -> int:
    ds = load_dataset(args.dataset)
    location = labels_location(args.results, args.labels)
    found = LabelStore(location).load(ds.name)
    if found.problems:  # gold from a partly read location would be silently incomplete
        raise ConfigError(f"labels in {location} cannot all be read", list(found.problems))
    if not any(lab.kind == "chunk" for lab in found.labels):
        raise ConfigError(f"{location} holds no chunk labels of dataset {ds.name}")
    retrieved = chunks_from_runs(results_location(args.results), found.labels, ds)
    plan = plan_gold(
        ds, found.labels, replace_gold=args.replace, version=args.version, retrieved=retrieved
    )
    path = write_gold(plan, args.out)
    written = load_dataset(path)  # what was written must validate, and be what was planned
    if written.sha256 != plan.sha256:
        raise ConfigError(f"{path}: written content differs from the plan (a bug in rageval)")
    print(summary(plan, path))
    return 0


def summary(plan: GoldPlan, path: Path) -> str:
    """Per labelled question what changed and what was skipped, then the new version."""
    lines = []
    quiet = 0
    for c in plan.changes:
        if not c.changed and not c.skipped:
            quiet += 1  # labelled, nothing to say: counted, not listed
            continue
        parts = [f"+{g}" for g in c.added] + [f"-{g}" for g in c.removed]
        head = " ".join(parts) if parts else "gold unchanged"
        if c.kept:
            head += f" ({len(c.kept)} relevant already gold)"
        lines.append(f"{c.question_id}: {head}")
        lines += [f"  skipped {shown(s.chunk_id, 120, bare=True)}: {s.why}" for s in c.skipped]
    if quiet:
        lines.append(f"{quiet} other labelled question(s): gold unchanged, nothing skipped")
    lines += [
        f"labels on question {shown(q, 120, bare=True)}: not in this dataset, ignored"
        for q in plan.unknown_questions
    ]
    mode = "replaced" if plan.replace_gold else "extended"
    ds = plan.source
    lines.append(
        f"wrote {path}: {ds.name} version {plan.version} (from {ds.version}), gold {mode} on "
        f"{plan.changed} of {len(plan.changes)} labelled question(s), sha256 {plan.sha256}"
    )
    return "\n".join(lines)
