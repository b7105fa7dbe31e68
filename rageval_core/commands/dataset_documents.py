"""`rageval dataset documents --from-llamaindex|--from-langchain MODULE:FUNCTION --out FILE`:
the documents file of a span dataset, from the documents the app itself loads, so gold
spans stay valid for every chunk size the app's splitter is run with."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path

from rageval_core.commands import dataset_actions
from rageval_core.engines import import_factory
from rageval_core.errors import ConfigError, PipelineError
from rageval_core.runs.atomic import atomic_write_bytes

FRAMEWORKS = {"llamaindex": "LlamaIndex", "langchain": "LangChain"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = dataset_actions(subparsers).add_parser(
        "documents",
        help="write a dataset's documents file from a LlamaIndex or LangChain loader",
        description="Call MODULE:FUNCTION (no arguments; the working directory is "
        "importable), which returns the app's loaded documents, and write them as the "
        "documents JSONL ({id, text} per line) of a span dataset: ids as the framework's "
        "chunks name their source document. See docs/pipeline.md.",
    )
    source = p.add_mutually_exclusive_group(required=True)
    for key, label in FRAMEWORKS.items():
        source.add_argument(
            f"--from-{key}",
            metavar="MODULE:FUNCTION",
            dest=key,
            help=f"a function returning {label} Documents",
        )
    p.add_argument("--out", required=True, metavar="FILE.jsonl", help="the file to write")
    p.add_argument("--force", action="store_true", help="replace an existing file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    key = next(k for k in FRAMEWORKS if getattr(args, k))
    out = Path(args.out)
    if out.exists() and not args.force:
        raise ConfigError(f"{out} exists; pass --force to replace it")
    loader = import_factory(getattr(args, key), Path.cwd())
    try:
        loaded = list(loader())
    except Exception as exc:  # the user's loader: its failure is one line, not a traceback
        raise PipelineError(f"{getattr(args, key)}() failed: {type(exc).__name__}: {exc}") from exc
    adapter = importlib.import_module(f"rageval_core.adapters.{key}")
    rows = adapter.documents(loaded)
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    atomic_write_bytes(out, data)
    print(f"wrote {out}: {len(rows)} documents, {sum(len(r['text']) for r in rows)} characters")
    return 0
