"""`rageval dataset refresh DATASET.yaml --documents NEW [--out DIR]`: every gold span
found again in new documents; questions whose span was lost listed and marked stale."""

from __future__ import annotations

import argparse

from rageval_core.commands import dataset_actions
from rageval_core.dataset import load_dataset
from rageval_core.dataset.refresh import (
    QUOTED,
    RefreshPlan,
    plan_refresh,
    read_new_documents,
    write_refresh,
)
from rageval_core.errors import ConfigError, shown
from rageval_core.labels.gold import next_version


def register(subparsers: argparse._SubParsersAction) -> None:
    p = dataset_actions(subparsers).add_parser(
        "refresh",
        help="find every gold span again in new documents; mark lost ones stale",
        description="Re-locate each gold span of DATASET in the documents NEW (moved spans "
        "get new offsets) and list every question whose span vanished, changed or became "
        "ambiguous, with its text before and after. With --out, write the next version "
        "there: the new documents, the moved offsets, those questions marked stale (left "
        "out of runs) and the documents' sha256, and queue the stale questions for review in "
        "DIR/stale-review (a candidates folder `dataset accept` mends them from). Exit 0: "
        "every span found; 1: some questions are stale; 2: bad input. "
        "See docs/datasets.md#refreshing-gold.",
    )
    p.add_argument("dataset", metavar="DATASET.yaml", help="the golden dataset file")
    p.add_argument(
        "--documents",
        required=True,
        metavar="NEW",
        help="the new documents file (JSONL or a YAML list of {id, text, title?, version?})",
    )
    p.add_argument("--out", metavar="DIR", help="write the new version into this new folder")
    p.add_argument("--version", help="the new version (default: the next after the dataset's)")
    p.set_defaults(func=run)


def _report(plan: RefreshPlan) -> list[str]:
    """The summary line, then each lost span with its text before and after."""
    n_lost = len(plan.lost)
    lines = [
        f"{plan.source.path}: {plan.n_spans} gold spans: "
        f"{plan.n_spans - n_lost - len(plan.moved)} in place, {len(plan.moved)} re-anchored, "
        f"{n_lost} lost; {len(plan.stale_ids)} question(s) stale"
    ]
    for s in plan.lost:
        after = "–" if s.after is None else shown(s.after, QUOTED)
        lines += [
            f"{plan.source.path}:{s.line}: question {s.question_id}: {s.reason}",
            f"  before: {shown(s.before, QUOTED)}",
            f"  after:  {after}",
        ]
    return lines


def run(args: argparse.Namespace) -> int:
    from rageval_core.candidates.stale import write_review

    ds = load_dataset(args.dataset)
    plan = plan_refresh(ds, read_new_documents(args.documents))
    print("\n".join(_report(plan)))
    version = args.version or next_version(ds.version)
    if args.out is None:
        print(f"nothing written: give --out DIR to write version {version}")
    else:
        if version == ds.version:
            raise ConfigError(f"the new version must differ from the dataset's ({ds.version})")
        path = write_refresh(plan, args.documents, version, args.out)
        stale = ", ".join(plan.stale_ids) or "none"
        print(f"wrote {path} (version {version}): stale questions: {stale}")
        batch = write_review(plan, path.parent)
        if batch is not None:
            print(
                f"queued {len(plan.stale_ids)} stale question(s) for review in {batch}: mend "
                f"them on the Candidates page (`rageval dashboard --candidates {batch}`), "
                "then `rageval dataset accept "
                f"{batch} --dataset {path} --out DIR`"
            )
    return 1 if plan.lost else 0
