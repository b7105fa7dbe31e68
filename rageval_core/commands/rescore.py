"""`rageval rescore RUN --judge JUDGE.yaml`: judge a stored run's answers again, no pipeline."""

from __future__ import annotations

import argparse
from pathlib import Path

from rageval_core.commands import (
    add_results_option,
    add_run_flags,
    run_options,
    totals_cost,
    write_run_to,
)
from rageval_core.runs.layout import results_location


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "rescore",
        help="judge a stored run's answers again with another judge",
        description="Judge the answers of run RUN again with the judge of JUDGE.yaml, without "
        "calling its pipeline, and write a new run whose manifest names its source run and "
        "judge: to compare two judges on the same answers, or to upgrade a cheap offline run "
        "to an LLM judge. Retrieval metrics, latency and pipeline cost are the source's. "
        "Crash-safe and resumable like `rageval run`; replies come from the user's judge "
        "cache, so a second rescore with the same judge makes no calls.",
    )
    p.add_argument("run", metavar="RUN", help="id of the run whose answers are judged")
    p.add_argument(
        "--judge",
        metavar="JUDGE.yaml",
        required=True,
        help="the judge: a `judge:` mapping as in a run config (kind: offline | openai, …), "
        "or a run config holding one",
    )
    add_results_option(p)
    p.add_argument(
        "--out",
        metavar="DIR|URL",
        help="results location the new run is written to (default: where RUN is)",
    )
    add_run_flags(p, "rescore", ("<UTC time>-<config name>-rescore", "default: the run's"))
    p.set_defaults(func=_rescore)


def _rescore(args: argparse.Namespace) -> int:
    # Imported here so `rageval --help` does not load the judges and the query layer.
    from rageval_core.rescore import Rescorer, load_judge_config, read_source

    judge = load_judge_config(args.judge)
    source_location = results_location(args.results)
    source = read_source(source_location, args.run)

    def _go(folder: str, remote):
        return Rescorer(source, judge, Path(args.judge), run_options(args, folder, remote)).run()

    result, where = write_run_to(args.out or source_location, _go)
    t = result.totals
    print(
        f"{result.status}: {result.run_id} (rescore of {source.run_id}) — "
        f"{t['n_questions']} questions, {t['n_judge_errors']} judge errors, "
        f"judge {totals_cost(t, 'judge_cost_usd')}, {t['duration_s']:.1f} s → {where}"
    )
    return 0
