"""`rageval dataset generate --documents DOCS --out DIR`: candidate golden questions,
generated and checked (docs/generate.md)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from rageval_core.commands import dataset_actions
from rageval_core.errors import ConfigError, DatasetError, JudgeError

MAX_N = 10_000


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_N:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_N}")
    return n


def register(subparsers: argparse._SubParsersAction) -> None:
    p = dataset_actions(subparsers).add_parser(
        "generate",
        help="generate candidate questions from documents, each checked automatically",
        description="Write candidate golden questions about DOCS into DIR: each with a "
        "reference answer, gold quotes located exactly once and the document versions it "
        "was written from, checked automatically (quotes, support, specificity, "
        "near-duplicates, unanswerable near misses) and marked accepted-by-checks or "
        "rejected with reasons. Without --judge (or with an offline one) the questions are "
        "templated, offline and deterministic; with an openai judge they are asked of its "
        "endpoint. DIR gets candidates.jsonl, documents.jsonl, report.json and accepted.yaml "
        "(a dataset `rageval validate` reads). See docs/generate.md.",
    )
    p.add_argument(
        "--documents",
        required=True,
        metavar="DOCS",
        help="a documents file (JSONL or YAML list of {id, text, title?, version?}) or a "
        "folder of text files (.txt .md .rst)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="folder to write into")
    p.add_argument(
        "--n", type=_count, default=50, metavar="N", help="candidates to generate (default 50)"
    )
    p.add_argument(
        "--judge",
        metavar="JUDGE.yaml",
        help="a judge mapping (kind: offline | openai, …) or a file with `judge:` and an "
        "optional `generate: {mix: {single-fact: 4, multi-hop: 2, user-vocabulary: 2, "
        "unanswerable: 2}}`",
    )
    p.add_argument(
        "--seed-questions",
        metavar="FILE",
        help="real user questions, one a line, shown to the LLM as examples of style",
    )
    p.add_argument(
        "--dataset",
        metavar="DATASET.yaml",
        help="the existing dataset: candidates near one of its questions are rejected",
    )
    p.add_argument("--name", default="candidates", help="name of accepted.yaml's dataset")
    p.add_argument("--force", action="store_true", help="replace an earlier generation in DIR")
    p.set_defaults(func=run)


def _judge_and_mix(path: str | None) -> tuple[dict | None, dict | None]:
    if path is None:
        return None, None
    from rageval_core.candidates.llm import read_mix
    from rageval_core.rescore import load_judge_config
    from rageval_core.userfiles import load_yaml

    judge = load_judge_config(path)
    raw = load_yaml(path, "judge config", ConfigError)
    generate = raw.get("generate") if isinstance(raw, Mapping) else None
    return judge, read_mix(generate, path) if generate is not None else None


def _seeds(path: str | None) -> list[str]:
    if path is None:
        return []
    from rageval_core.userfiles import read_text

    text = read_text(path, "seed questions", ConfigError)
    return [line.strip() for line in text.splitlines() if line.strip()]


def _existing(path: str | None) -> list[tuple[str, str]]:
    if path is None:
        return []
    from rageval_core.dataset import load_dataset

    return [(q.id, q.question) for q in load_dataset(path).questions]


def run(args: argparse.Namespace) -> int:
    from rageval_core.candidates import write_outputs
    from rageval_core.candidates.documents import read_documents
    from rageval_core.candidates.generation import generate

    judge, mix = _judge_and_mix(args.judge)
    seeds = _seeds(args.seed_questions)
    existing = _existing(args.dataset)
    documents = read_documents(args.documents)
    made = generate(documents, args.n, judge=judge, mix=mix, seeds=seeds, existing=existing)
    if not made.candidates and made.report["errors"]:
        first = made.report["errors"][0]
        raise JudgeError(
            f"the endpoint gave no candidate ({len(made.report['errors'])} calls; {first})"
        )
    if not made.candidates:
        raise DatasetError(
            f'{args.documents}: no sentence fits a template (docs/generate.md, "Templated")'
        )
    out = Path(args.out)
    written = write_outputs(
        out, args.name, made.candidates, documents, made.report, overwrite=args.force
    )
    r = made.report
    print(
        f"wrote {out}: {r['candidates']} candidates ({r['accepted_by_checks']} accepted by "
        f"checks, {r['rejected']} rejected) from {r['documents']} documents "
        f"in {r['seconds']['generation'] + r['seconds']['verification']:.1f} s"
    )
    for name, count in r["failed_checks"].items():
        print(f"  failed {name}: {count}")
    print(f"  {made.coverage.line()}")
    if r["errors"]:
        print(f"  {len(r['errors'])} call(s) gave no candidate; first: {r['errors'][0]}")
    if seeds and r["generator"].startswith("templated"):
        print("  seed questions steer the LLM generator only; these are templated")
    if r["cost_usd"]:
        print(f"  judge endpoint cost ${r['cost_usd']:.4f}")
    if not any(p.name == "accepted.yaml" for p in written):
        print("  no candidate passed its checks: no accepted.yaml written")
    return 0
