"""`rageval comment FILE`: post a Markdown file (a `check` or `compare` table) as the one
rageval comment of a pull request, or update it (see docs/ci.md)."""

from __future__ import annotations

import argparse
import os
import sys

from rageval_core.pr_comment import MARKER


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "comment",
        help="post or update the pull request's rageval comment",
        description="Post FILE (Markdown, e.g. from `rageval check --format markdown`) as a "
        "comment on the pull request, or edit the comment posted before, found by its hidden "
        "marker: one comment per pull request however often the workflow runs. Reads "
        "GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL and GITHUB_EVENT_PATH as GitHub "
        "Actions sets them.",
    )
    p.add_argument("file", metavar="FILE", help="Markdown to post ('-' for stdin)")
    p.add_argument("--pr", type=int, metavar="N", help="pull request number (default: the event's)")
    p.add_argument(
        "--marker",
        default=MARKER,
        help=f"hidden first line that identifies the comment (default {MARKER!r}); one per "
        "workflow when several post",
    )
    p.set_defaults(func=_comment)


def _comment(args: argparse.Namespace) -> int:
    from rageval_core.errors import ConfigError
    from rageval_core.pr_comment import PullRequest, post_or_update, token_from_env

    if not (args.marker.startswith("<!--") and args.marker.endswith("-->")):
        raise ConfigError("--marker must be an HTML comment, <!-- like this -->")
    pr = PullRequest.from_env(os.environ, args.pr)
    if args.file == "-":
        text = sys.stdin.read()
    else:
        with open(args.file, encoding="utf-8") as fh:
            text = fh.read()
    done, comment_id = post_or_update(pr, text, token_from_env(), args.marker)
    print(f"{done} comment {comment_id} on {pr.repo}#{pr.number}")
    return 0
