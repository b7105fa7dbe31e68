"""`rageval import ragas|deepeval|promptfoo|inspect|otel FILE`: another tool's results (or
traces) as a run."""

from __future__ import annotations

import argparse
import tempfile

from rageval_core.commands import add_results_option, import_formats
from rageval_core.errors import ConfigError
from rageval_core.runs.layout import (
    MANIFEST,
    filesystem,
    is_remote,
    results_location,
    validate_run_id,
)

HELP = {
    "ragas": "RAGAS EvaluationResult.to_pandas() saved as .csv, .jsonl or .parquet",
    "deepeval": "DeepEval test run JSON (.deepeval/.latest_test_run.json)",
    "promptfoo": "promptfoo `eval --output results.json`",
    "inspect": "Inspect eval log (.eval or .json)",
    "otel": "OpenTelemetry traces as OTLP JSON lines (OpenInference or GenAI attributes)",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    formats = import_formats(subparsers)
    for tool, help_ in HELP.items():
        p = formats.add_parser(
            tool,
            help=help_,
            description=f"Write a run from a results file of {tool} ({help_}). The whole file "
            "is checked first: a field that does not fit is one error naming the file and the "
            "field, and no run is written. Field mapping: docs/import.md.",
        )
        p.add_argument("file", metavar="FILE", help="the tool's results file")
        add_results_option(p)
        p.add_argument("--run-id", metavar="ID", help="run id (default: <UTC time>-<tool>-<name>)")
        p.add_argument(
            "--dataset",
            metavar="DATASET.yaml",
            help=(
                "golden dataset the traces asked: its questions are kept (matched by text; "
                "the others are listed), gold ids come from it"
                if tool == "otel"
                else "golden dataset the file evaluated: questions are matched by id, then by "
                "text; gold ids come from it and retrieval metrics are computed"
            ),
        )
        p.add_argument("--name", help="config name shown on Runs (default: from the file)")
        if tool == "promptfoo":
            p.add_argument(
                "--provider",
                metavar="ID",
                help="the provider whose results to import, when the file holds several",
            )
        p.set_defaults(func=_run, tool=tool)


def _run(args: argparse.Namespace) -> int:
    from rageval_core.importers import import_run

    location = results_location(args.results)
    if args.run_id:
        validate_run_id(args.run_id)
    kw = dict(
        run_id=args.run_id,
        dataset=args.dataset,
        name=args.name,
        provider=getattr(args, "provider", None),
    )
    if is_remote(location):
        # Written whole in a local folder, then uploaded manifest last (storage.upload_run).
        from rageval_core.runs.remote import upload_run

        with tempfile.TemporaryDirectory(prefix="rageval-import-") as local:
            result = import_run(args.tool, args.file, results_dir=local, **kw)
            fs, root = filesystem(location)
            if fs.exists(f"{root}/{result.run_id}/{MANIFEST}"):
                raise ConfigError(f"run {result.run_id} already exists in {location}")
            where = upload_run(result.path, location, result.run_id)
    else:
        result = import_run(args.tool, args.file, results_dir=location, **kw)
        where = str(result.path)
    t = result.totals
    print(f"imported {args.file} from {args.tool}: {t['n_questions']} questions → {where}")
    return 0
