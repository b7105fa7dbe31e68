"""Subcommands of `rageval`, one module each, discovered by `rageval_core.cli`.

Modules here define `register(subparsers)`; anything else (like the helpers below) is shared
argument wiring, so every command spells a common option the same way.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any


def add_results_option(parser: argparse.ArgumentParser) -> None:
    """The `--results DIR|URL` option every command that reads or writes runs takes."""
    _location_option(
        parser,
        "--results",
        "results folder or object-store URL such as s3://bucket/prefix "
        "(default: $RAGEVAL_RESULTS, else results/)",
    )


def add_labels_option(parser: argparse.ArgumentParser) -> None:
    """The `--labels DIR|URL` option of every command that reads human labels."""
    _location_option(
        parser,
        "--labels",
        "labels location, a folder or s3://bucket/prefix "
        "(default: $RAGEVAL_LABELS, else labels/ beside the results)",
    )


def _location_option(parser: argparse.ArgumentParser, flag: str, help: str) -> None:
    parser.add_argument(flag, metavar="DIR|URL", help=help)


def import_formats(subparsers: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """The formats of `rageval import` (`squad`, `ragas`, …), made by whichever of the
    modules that add one registers first, so each format lives in its own module."""
    parser = subparsers.choices.get("import")
    if parser is None:
        parser = subparsers.add_parser(
            "import",
            help="build a golden dataset, or a run from another tool's results",
            description="Build a golden dataset from another format (squad), or a run from "
            "the results file of another evaluation tool (ragas, deepeval, promptfoo, inspect).",
        )
        return parser.add_subparsers(dest="format", metavar="FORMAT", required=True)
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def dataset_actions(subparsers: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """The actions of `rageval dataset` (`documents`, …), made by whichever module that
    adds one registers first, as `import_formats` does for `rageval import`."""
    parser = subparsers.choices.get("dataset")
    if parser is None:
        parser = subparsers.add_parser(
            "dataset",
            help="build parts of a golden dataset",
            description="Build parts of a golden dataset (docs/datasets.md).",
        )
        return parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def add_baseline_option(parser: argparse.ArgumentParser, help: str) -> None:
    """`--baseline RUN|latest|latest-any`, shared by the commands that compare a run with
    another (`query._check.choose_baseline`)."""
    parser.add_argument(
        "--baseline",
        metavar="RUN|latest|latest-any",
        help=f"{help}; `latest` = the previous run: the newest complete run of the same "
        "config name and dataset version made before RUN; `latest-any` = the newest "
        "complete run of any config made before RUN",
    )


def add_run_flags(parser: argparse.ArgumentParser, what: str, defaults: tuple[str, str]) -> None:
    """`--run-id`, `--concurrency`, `--resume` and `--no-progress`, which `run_options`
    reads; `what` names the work (`run`), `defaults` say the id's and the concurrency's."""
    parser.add_argument("--run-id", metavar="ID", help=f"run id (default: {defaults[0]})")
    parser.add_argument(
        "--concurrency", metavar="N", type=int, help=f"questions in flight ({defaults[1]})"
    )
    parser.add_argument(
        "--resume", metavar="ID", help=f"finish an interrupted {what}: skip questions already done"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def run_options(args: argparse.Namespace, folder: str, remote: Any, **more: Any) -> Any:
    """The `RunOptions` of the flags `run` and `rescore` share (`--run-id`, `--resume`,
    `--concurrency`, `--no-progress`) for a run written into `folder` (`write_run_to`)."""
    from rageval_core.runner import RunOptions

    return RunOptions(
        results=folder,
        run_id=args.run_id,
        resume=args.resume,
        concurrency=args.concurrency,
        progress=not args.no_progress,
        remote=remote,
        **more,
    )


def write_run_to(location: str, write: Callable[[str, Any], Any]) -> tuple[Any, str]:
    """`write(folder, remote)` a run into a results location; its `RunResult` and where the
    run now is. Object stores cannot append a journal, so for an `s3://…` location the
    runner writes a local staging folder that is uploaded at the end (`runner.Remote`)."""
    from rageval_core.runs.layout import is_remote

    if not is_remote(location):
        result = write(location, None)
        return result, str(result.path)
    from rageval_core.runs.remote import staged

    with staged(location) as stage:
        result = write(str(stage.local_root), stage)
    return result, f"{location.rstrip('/')}/{result.run_id}"


@contextmanager
def terminal_progress() -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar on a terminal's stderr for `ResultsStore.refresh`, one per phase."""
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}

    def report(what: str, done: int, total: int) -> None:
        if what not in bars:
            for old in bars.values():
                old.close()
            bars[what] = tqdm(
                total=total,
                desc=what,
                file=sys.stderr,
                leave=False,
                disable=not sys.stderr.isatty(),
            )
        bars[what].n = done
        bars[what].refresh()

    try:
        yield report
    finally:
        for bar in bars.values():
            bar.close()


def totals_cost(totals: Mapping[str, Any], key: str) -> str:
    """A run's recorded cost `key` (`cost_usd`, `judge_cost_usd`) as the end of a run
    prints it: `$0.0060`, `–` when no question had one, `$0.0060 (2 of 6 questions)`."""
    from rageval_core.catalogue import BUILTIN
    from rageval_core.query import covered
    from rageval_core.runs.folder import known_cost

    text = BUILTIN.fmt(key, known_cost(totals, key))
    return covered(text, totals.get(f"n_{key}"), totals.get("n_questions"))
