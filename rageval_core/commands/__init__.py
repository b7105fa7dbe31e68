"""Subcommands of `rageval`, one module each, discovered by `rageval_core.cli`.

Modules here define `register(subparsers)`; anything else (like the helper below) is shared
argument wiring, so every command spells a common option the same way.
"""

from __future__ import annotations

import argparse
import os

from rageval_core.errors import ConfigError, ResultsError
from rageval_core.results import validate_run_id


def add_results_option(parser: argparse.ArgumentParser) -> None:
    """The `--results DIR|URL` option every command that reads or writes runs takes."""
    parser.add_argument(
        "--results",
        metavar="DIR|URL",
        help="results folder or object-store URL such as s3://bucket/prefix "
        "(default: $RAGEVAL_RESULTS, else results/)",
    )


def add_baseline_option(parser: argparse.ArgumentParser, help: str) -> None:
    """`--baseline RUN|latest`, shared by the commands that compare a run with another."""
    parser.add_argument(
        "--baseline",
        metavar="RUN|latest",
        help=f"{help}; `latest` = newest complete run made before RUN",
    )


def validate_run_args(run: str, baseline: str | None) -> None:
    """Reject unsafe run ids (from a CI script or a pasted URL) before anything is read:
    a mistake in the arguments, so a ConfigError (exit 2), never mistaken for a breach."""
    try:
        validate_run_id(run)
        if baseline and baseline != "latest":
            validate_run_id(baseline)
    except ResultsError as exc:
        raise ConfigError(exc.message) from None


DASHBOARD_URL_ENV = "RAGEVAL_DASHBOARD_URL"
DEFAULT_DASHBOARD_URL = "http://127.0.0.1:8501"


def dashboard_link(page: str, run_id: str | None = None, base: str | None = None) -> str:
    """The dashboard address of `page` (for `run_id`), as `rageval run`, `rageval runs`
    and `rageval dashboard` print it: under `base`, else $RAGEVAL_DASHBOARD_URL (a hosted
    dashboard), else where `rageval dashboard` listens by default."""
    from dashboard.links import ViewState, absolute_url

    base = base or os.environ.get(DASHBOARD_URL_ENV) or DEFAULT_DASHBOARD_URL
    return absolute_url(base, page, ViewState(run=run_id))
