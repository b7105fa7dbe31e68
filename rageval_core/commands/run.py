"""`rageval run CONFIG.yaml`: evaluate a pipeline on a golden dataset and write the run."""

from __future__ import annotations

import argparse
import math
from dataclasses import replace

from rageval_core.commands import (
    add_results_option,
    add_run_flags,
    run_options,
    totals_cost,
    write_run_to,
)
from rageval_core.errors import ConfigError
from rageval_core.runs.layout import results_location


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run",
        help="evaluate a pipeline on a golden dataset",
        description="Run the pipeline of CONFIG over its golden dataset, judge every answer "
        "and write the run to the results directory (crash-safe; resumable with --resume). "
        "A run (or shard) has one writer: a second one is refused with exit 1.",
    )
    p.add_argument("config", metavar="CONFIG.yaml", help="run config (docs/pipeline.md)")
    add_results_option(p)
    add_run_flags(p, "run", ("<UTC time>-<config name>", "overrides the config"))
    p.add_argument(
        "--shard",
        metavar="K/N",
        help="run only shard K of N, numbered 1..N as in a CI matrix (`--shard 1/3` … "
        "`3/3`; stable split by question id); needs --run-id or --resume",
    )
    p.add_argument(
        "--question-timeout",
        metavar="S",
        type=float,
        help="seconds one question's pipeline call may take before it is that question's "
        "error and the run goes on (overrides pipeline.timeout_s; default: no limit)",
    )
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="where the pipeline runs: this process's threads (default) or a Ray cluster, "
        "one worker per --concurrency slot, each building the pipeline once",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="Ray cluster to join (as `ray.init` takes it, e.g. 10.0.0.5:6379 or auto); "
        "default: $RAY_ADDRESS, else a new local cluster. Needs --engine ray",
    )
    p.add_argument(
        "--ray-worker-cpus",
        metavar="N",
        type=float,
        help="CPUs each Ray worker reserves (default: Ray's, none held once placed)",
    )
    p.add_argument(
        "--ray-worker-gpus", metavar="N", type=float, help="GPUs each Ray worker reserves"
    )
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    # Imported here so `rageval --help` does not load the judges and the query layer.
    from rageval_core.config import load_config
    from rageval_core.mismatch import mismatch_warnings
    from rageval_core.runner import run
    from rageval_core.runs.layout import Shard

    config = load_config(args.config)
    if args.question_timeout is not None:
        if not 0 < args.question_timeout < math.inf:
            raise ConfigError(
                f"--question-timeout must be a number of seconds > 0, got {args.question_timeout:g}"
            )
        config = replace(config, pipeline=replace(config.pipeline, timeout_s=args.question_timeout))
    location = results_location(args.results)
    engine = _engine(args)

    def _go(folder: str, remote):
        shard = Shard.parse(args.shard) if args.shard else None
        return run(config, run_options(args, folder, remote, shard=shard, engine=engine))

    result, where = write_run_to(location, _go)
    t = result.totals
    part = f"shard {result.shard.label} of " if result.shard else ""
    counts = (
        f"{t['n_questions']} questions, {t['n_errors']} errors, "
        f"{t['n_judge_errors']} judge errors, cost {totals_cost(t, 'cost_usd')} "
        f"(+ judge {totals_cost(t, 'judge_cost_usd')}), {t['duration_s']:.1f} s → {where}"
    )
    if result.missing_shards:
        # This worker's part is done, the run is not: say what is still missing.
        n = len(result.missing_shards)
        print(
            f"{part}{result.run_id} finished: {counts}\n"
            f"{n} of {result.shard.count} shards still missing "
            f"({', '.join(result.missing_shards[:10])}{', …' if n > 10 else ''}); "
            "the run is complete when the last one finishes"
        )
        return 0
    print(f"{result.status}: {part}{result.run_id} — {counts}")
    for warning in mismatch_warnings(t):
        print(f"warning: {warning}")
    if result.status == "complete":
        _print_headline(location, result.run_id)
    return 0


def _engine(args: argparse.Namespace):
    from rageval_core.engines import LocalEngine, RayEngine, import_ray

    ray_flags = {
        "--ray-address": args.ray_address,
        "--ray-worker-cpus": args.ray_worker_cpus,
        "--ray-worker-gpus": args.ray_worker_gpus,
    }
    if args.engine == "local":
        given = [flag for flag, value in ray_flags.items() if value is not None]
        if given:
            raise ConfigError(f"{given[0]} needs --engine ray")
        return LocalEngine()
    for flag in ("--ray-worker-cpus", "--ray-worker-gpus"):
        value = ray_flags[flag]
        if value is not None and not 0 <= value <= 1024:
            raise ConfigError(f"{flag} must be between 0 and 1024, got {value:g}")
    import_ray()  # before anything is written: an optional extra that may be missing
    return RayEngine(args.ray_address, args.ray_worker_cpus, args.ray_worker_gpus)


def _print_headline(location: str, run_id: str) -> None:
    """The run's headline figures against the previous run of its series, and the link."""
    from rageval_core.links import dashboard_link
    from rageval_core.query import ResultsStore, format_headline, run_headline

    with ResultsStore(location, read_only=True, refresh=False) as store:
        headline = run_headline(store, run_id)
    print(format_headline(headline, dashboard_link("diagnose", run_id)), end="")
