"""`rageval dataset accept CANDIDATES_DIR --out DIR`: the candidates reviewers accepted
(or every one that passed its checks) written as the dataset's next version
(docs/generate.md, "Accepting")."""

from __future__ import annotations

import argparse
import sys

from rageval_core.commands import add_labels_option, dataset_actions
from rageval_core.errors import shown


def register(subparsers: argparse._SubParsersAction) -> None:
    p = dataset_actions(subparsers).add_parser(
        "accept",
        help="write the candidates reviewers accepted as the dataset's next version",
        description="Take the reviewers' decisions on the candidates in CANDIDATES_DIR "
        "(the newest per candidate, from the labels location), or with --all-passing every "
        "candidate whose checks passed, and write the next version of DATASET into DIR: "
        "accepted and edited candidates appended as questions with their quotes, the "
        "documents they quote added when missing, their document versions recorded, the "
        "rest of the file as it was; a stale question `dataset refresh` queued gets its "
        "accepted candidate's quotes as gold and is no longer stale. Without --dataset, "
        "a new dataset. Exit 0: written; 1: nothing to add; 2: bad input (nothing written). "
        "See docs/generate.md.",
    )
    p.add_argument("candidates", metavar="CANDIDATES_DIR", help="a `dataset generate` folder")
    p.add_argument("--dataset", metavar="DATASET.yaml", help="the dataset to add them to")
    p.add_argument("--out", required=True, metavar="DIR", help="a new folder for the version")
    p.add_argument(
        "--all-passing",
        action="store_true",
        help="accept every candidate whose checks passed instead of reading decisions",
    )
    p.add_argument("--version", help="the new version (default: the next after the dataset's)")
    p.add_argument(
        "--name", help="the new dataset's name, without --dataset (default: CANDIDATES_DIR's name)"
    )
    add_labels_option(p)
    p.set_defaults(func=run, results=None)


def run(args: argparse.Namespace) -> int:
    from rageval_core.candidates.accepting import accept, passing_decisions
    from rageval_core.candidates.decisions import DecisionStore, batch_name
    from rageval_core.candidates.files import CANDIDATES_FILE, read_candidates
    from rageval_core.labels import labels_location

    if args.all_passing:
        decisions = passing_decisions(read_candidates(f"{args.candidates}/{CANDIDATES_FILE}"))
        print(f"{len(decisions)} candidate(s) passed their checks")
    else:
        location = labels_location(args.results, args.labels)
        store = DecisionStore(location, batch_name(args.candidates), read_only=True)
        decisions = store.latest()
        for problem in store.problems:
            print(f"warning: {problem}", file=sys.stderr)
        n_ok = sum(d.accepts for d in decisions.values())
        print(
            f"{location}: {len(decisions)} decision(s) on {batch_name(args.candidates)}: "
            f"{n_ok} accept or edit, {len(decisions) - n_ok} reject"
        )
    done = accept(
        args.candidates, decisions, args.dataset, args.out, name=args.name, version=args.version
    )
    for cid in done.unknown:
        print(f"warning: a decision names {shown(cid)}, not a candidate of {args.candidates}")
    for cid in done.already:
        print(f"already in the dataset: {cid}")
    for cid, qid in done.added:
        print(f"added {qid}" + ("" if qid == cid else f" (candidate {cid})"))
    for cid, qid in done.mended:
        print(f"mended {qid}: its gold is candidate {cid}'s quotes, no longer stale")
    for doc_id in done.documents:
        print(f"added document {shown(doc_id)}")
    if done.path is None:
        print("nothing to add: nothing written")
        return 1
    print(
        f"wrote {done.path} (version {done.version}): {len(done.added)} question(s) added, "
        f"{len(done.mended)} stale question(s) mended"
    )
    return 0
