"""`rageval dashboard`: start the Streamlit app on a results location.

The app reads its locations from the environment: RAGEVAL_RESULTS (runs), RAGEVAL_LABELS
(human labels, docs/review.md), RAGEVAL_READ_ONLY (labels shown, never written) and
RAGEVAL_CANDIDATES (candidate batches, docs/dashboard.md). This command
sets them and replaces itself with `python -m dashboard.serve <installed
dashboard/streamlit_app.py>` (Streamlit's `run`, plus the first page's imports made while
the first browser connects), so signals and the exit code are Streamlit's own.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rageval_core.commands import add_results_option, terminal_progress
from rageval_core.errors import ConfigError, RagevalError
from rageval_core.links import dashboard_link
from rageval_core.runs.layout import (
    BACKGROUND_BUILD_RUNS,
    CANDIDATES_ENV,
    LABELS_ENV,
    READ_ONLY_ENV,
    RESULTS_ENV,
    RUNS_INDEX,
    is_remote,
    labels_location,
    read_only_env,
    results_location,
    shared_cache_dir,
)
from rageval_core.runs.listing import run_folders

if TYPE_CHECKING:
    from rageval_core.runs.reading import RunInfo


def app_path() -> Path:
    """The installed `dashboard/streamlit_app.py`, located without importing the app: the
    library never imports `dashboard` (tests/layering/test_imports.py)."""
    spec = importlib.util.find_spec("dashboard")
    if spec is None or spec.origin is None:
        raise ConfigError("the dashboard is not installed beside rageval_core (dashboard/)")
    return Path(spec.origin).resolve().parent / "streamlit_app.py"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dashboard",
        help="explore results in the Streamlit dashboard",
        description="Start the dashboard on a results location (a folder or an fsspec URL "
        "such as s3://bucket/prefix). Open the printed address in a browser.",
    )
    add_results_option(parser)
    parser.add_argument(
        "--labels",
        metavar="DIR|URL",
        help="where human labels are read and saved (default: $RAGEVAL_LABELS, else "
        "labels/ beside the results location)",
    )
    parser.add_argument(
        "--candidates",
        metavar="DIR",
        help="candidate batches for the Candidates page: a folder `rageval dataset generate` "
        "wrote, or a folder of them (default: $RAGEVAL_CANDIDATES, else candidates/ in the "
        "results location)",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="show labels but offer no way to write one (also: RAGEVAL_READ_ONLY=1)",
    )
    parser.add_argument("--port", type=int, default=8501, help="port to listen on (8501)")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (127.0.0.1; 0.0.0.0 to share on the network)",
    )
    parser.set_defaults(func=run)


STREAMLIT_SETTINGS: tuple[tuple[str, str], ...] = (
    ("server.headless", "true"),
    ("browser.gatherUsageStats", "false"),
    # a product's toolbar: no Deploy button, no developer menu (rerun, settings, cache)
    ("client.toolbarMode", "minimal"),
    # an exception box names its type only: a traceback shows server file paths to
    # whoever holds the link (the full one is in the server's log)
    ("client.showErrorDetails", "type"),
)
"""Passed as flags, so they hold wherever the command runs: a `.streamlit/config.toml`
only applies in the folder Streamlit starts in (the repository's did not reach a user's
own folder, who then saw Streamlit's Deploy button)."""


def streamlit_command(port: int, host: str) -> list[str]:
    flags = [x for key, value in STREAMLIT_SETTINGS for x in (f"--{key}", value)]
    return [
        sys.executable,
        "-m",
        "dashboard.serve",
        str(app_path()),
        *flags,
        "--server.port",
        str(port),
        "--server.address",
        host,
    ]


def _links(base: str, runs: list[RunInfo] | None) -> list[str]:
    """The Runs page and the newest complete run's Diagnose view, as `rageval run` prints
    them; the newest run only when the command summarised the runs (`_build_cache`): a
    first start leaves the manifests to the server, which reads them anyway."""
    lines = [f"runs: {base}/"]
    done = [r for r in runs or () if r.status == "complete" and r.manifest]
    if done:
        newest = max(done, key=lambda r: (r.manifest.created_at, r.run_id))
        lines.append(f"newest run: {dashboard_link('diagnose', newest.run_id, base)}")
    return lines


def first_start(location: str) -> bool:
    """A local location with no derived cache yet and BACKGROUND_BUILD_RUNS run folders or
    more, which the app opens on the manifests while it builds the cache (docs/scale.md).
    Decided from a directory listing and one file's presence: the command then imports
    neither the query layer nor a manifest before it becomes the server."""
    if (shared_cache_dir(os.path.realpath(location)) / RUNS_INDEX).exists():
        return False
    try:
        return len(run_folders(location)[0]) >= BACKGROUND_BUILD_RUNS
    except RagevalError:  # the app itself says what is wrong with the location
        return False


def _build_cache(location: str, labels: str) -> list[RunInfo] | None:
    """Bring the derived cache of a local location up to date before the server starts,
    with a progress bar on the terminal; its runs (None when it was left to the app).

    The first build over 10,000 runs takes minutes, better spent here than behind the
    first visitor's page. The app's store (read-only, the same cache folder) then only
    checks it. When there are labels, the claims cache the label views join on too (25 s
    at 1,000 runs, else the Judge page's first view; a bucket of labels is not listed
    here, its claims are built). A `first_start` is left to the app, which opens on the
    runs' manifests and builds in worker processes (12 s over 1,000 runs of 1,000
    questions, which a visitor would otherwise wait out before the page). A bucket is left
    to the app, which shows its own progress: listing one can take long and needs the
    server's credentials."""
    if is_remote(location) or not os.path.isdir(location):
        return None
    if first_start(location):
        print(
            "rageval dashboard: first start: the runs open at once, their figures are "
            "summarised in the background (progress on the page)",
            file=sys.stderr,
        )
        return None
    from rageval_core.labels import LabelStore
    from rageval_core.query import ClaimsCache, ResultsStore

    with (
        ResultsStore(location, read_only=True, refresh=False) as store,
        terminal_progress() as report,
    ):
        store.refresh(report)
        runs = store.runs()
        print(f"rageval dashboard: {len(runs):,} runs ready", file=sys.stderr)
        if is_remote(labels) or LabelStore(labels, read_only=True).has_labels():
            n = ClaimsCache(store).build(report)
            print(f"rageval dashboard: claims of {n:,} runs ready for labels", file=sys.stderr)
    return runs


def _absolute(location: str) -> str:
    """A local folder made absolute (Streamlit may change the working directory)."""
    return location if is_remote(location) else str(Path(location).resolve())


def run(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port must be between 1 and 65535, got {args.port}")
    location = _absolute(results_location(args.results))
    labels = _absolute(labels_location(location, args.labels))
    env = {**os.environ, RESULTS_ENV: location, LABELS_ENV: labels}
    if args.read_only:
        env[READ_ONLY_ENV] = "1"
    if args.candidates:
        env[CANDIDATES_ENV] = _absolute(args.candidates)
    cmd = streamlit_command(args.port, args.host)
    # A wildcard address is not one a browser can open: link to this machine instead.
    host = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    base = f"http://{host}:{args.port}"
    print(f"rageval dashboard: {location} on {base}", file=sys.stderr)
    mode = " (read-only)" if args.read_only or read_only_env() else ""
    print(f"rageval dashboard: labels in {labels}{mode}", file=sys.stderr)
    for line in _links(base, _build_cache(location, labels)):
        print(f"rageval dashboard: {line}", file=sys.stderr)
    os.execve(cmd[0], cmd, env)
    return 0  # not reached: execve replaces the process
