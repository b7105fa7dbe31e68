"""One pull-request comment per workflow, posted the first time and updated after: the
end of the pull-request loop (`rageval comment check.md` after `rageval check --format
markdown`; see docs/ci.md).

The comment is found again by a hidden marker on its first line, so re-runs and new
pushes edit it instead of adding one comment per push. Speaks the GitHub REST API
(`GITHUB_API_URL`, set by Actions; GitHub Enterprise too). The token is read from the
environment, sent only in the Authorization header, and never printed or raised. The API
is not trusted further than the file a user hands us: a redirect to another origin drops
the Authorization header, a reply is read up to `MAX_REPLY_BYTES` and through
`bounded_json`, listing stops after `MAX_PAGES` pages, and a comment without an integer
`id` is an error, not a KeyError.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rageval_core import deadline
from rageval_core.bounded_json import BadJSON, load_file, loads
from rageval_core.errors import ConfigError, RagevalError, shown

MARKER = "<!-- rageval -->"
MAX_BODY = 65_000  # GitHub refuses comment bodies over 65,536 characters
PAGE = 100
MAX_PAGES = 100  # 10,000 comments: a pull request with more is not one this looks through
MAX_REPLY_BYTES = 16 << 20  # a page of 100 comments is well under a megabyte
API_TIMEOUT_S = 30.0  # one total deadline per API call: connect, headers and body


@dataclass(frozen=True)
class PullRequest:
    """Where the comment goes: the API root, `owner/name`, and the pull request number."""

    api: str
    repo: str
    number: int

    @classmethod
    def from_env(cls, env: Mapping[str, str], number: int | None = None) -> PullRequest:
        """From the variables GitHub Actions sets; the number from `--pr`, else from the
        event payload of a `pull_request` workflow (`GITHUB_EVENT_PATH`)."""
        repo = env.get("GITHUB_REPOSITORY", "")
        if repo.count("/") != 1:
            raise ConfigError("GITHUB_REPOSITORY must be owner/name (set by GitHub Actions)")
        if number is None:
            number = _event_number(env.get("GITHUB_EVENT_PATH"))
        if number is None or number < 1:
            raise ConfigError(
                "no pull request number: pass --pr N, or run in a pull_request workflow"
            )
        api = env.get("GITHUB_API_URL") or "https://api.github.com"
        return cls(api.rstrip("/"), repo, number)


def _event_number(path: str | None) -> int | None:
    if not path:
        return None
    try:
        event = load_file(path)
    except (OSError, BadJSON) as exc:
        raise ConfigError(f"GITHUB_EVENT_PATH {path}: cannot read the event ({exc})") from None
    if not isinstance(event, dict):
        raise ConfigError(f"GITHUB_EVENT_PATH {path}: the event is not a JSON object")
    pull = event.get("pull_request")
    n = (pull.get("number") if isinstance(pull, dict) else None) or event.get("number")
    return n if isinstance(n, int) else None


def comment_body(markdown: str, marker: str = MARKER) -> str:
    """The marker line, then `markdown`, cut to what GitHub accepts."""
    body = f"{marker}\n{markdown}"
    if len(body) > MAX_BODY:
        body = body[: MAX_BODY - 80] + "\n\n… (cut: the full table is in the job summary)\n"
    return body


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port


class _SameOriginAuth(urllib.request.HTTPRedirectHandler):
    """Follows redirects as urllib does, but the Authorization header only to the origin
    it was meant for: a 307 to another host never carries the token."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            for name in list(new.headers):
                if name.lower() == "authorization":
                    del new.headers[name]
        return new


_OPENER = urllib.request.build_opener(_SameOriginAuth)


class _Api:
    def __init__(self, pr: PullRequest, token: str):
        self.pr, self.token = pr, token

    @staticmethod
    def _fetch(req: urllib.request.Request) -> bytes:
        with _OPENER.open(req, timeout=API_TIMEOUT_S) as resp:
            return resp.read(MAX_REPLY_BYTES + 1)

    def call(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        req = urllib.request.Request(f"{self.pr.api}{path}", data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", "2022-11-28")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            # urllib's timeout is per socket read: a server dripping its headers never
            # trips it. The whole call gets one deadline; a late one is left behind.
            data = deadline.run_within(API_TIMEOUT_S, self._fetch, req)
            if len(data) > MAX_REPLY_BYTES:
                raise ValueError(f"reply longer than {MAX_REPLY_BYTES} bytes")
            return loads(data) if data.strip() else None
        except urllib.error.HTTPError as exc:
            with exc:  # the error is the response: close its connection
                detail = exc.read()[:300].decode("utf-8", "replace")
            hint = (
                " (a pull request from a fork gets a read-only token: see docs/ci.md)"
                if exc.code in (401, 403, 404)
                else ""
            )
            raise RagevalError(
                shown(f"GitHub API {method} {path}: HTTP {exc.code} {detail}{hint}", 600, bare=True)
            ) from None
        except (urllib.error.URLError, TimeoutError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RagevalError(
                shown(f"GitHub API {method} {path}: {reason}", 600, bare=True)
            ) from None


def post_or_update(
    pr: PullRequest, markdown: str, token: str, marker: str = MARKER
) -> tuple[str, int]:
    """Update the pull request's comment that starts with `marker`, or post one.

    Returns ("updated" | "created", comment id). Only the first marked comment is edited,
    so a thread keeps exactly one.
    """
    if not token:
        raise ConfigError(
            "no token: set GITHUB_TOKEN (e.g. `env: GITHUB_TOKEN: ${{ github.token }}`)"
        )
    api = _Api(pr, token)
    body = comment_body(markdown, marker)
    base = f"/repos/{pr.repo}/issues"
    for page in range(1, MAX_PAGES + 1):
        comments = api.call("GET", f"{base}/{pr.number}/comments?per_page={PAGE}&page={page}")
        if not isinstance(comments, list):
            raise RagevalError(f"GitHub API: unexpected reply listing comments of #{pr.number}")
        for c in comments:
            if isinstance(c, dict) and str(c.get("body") or "").startswith(marker):
                cid = _comment_id(c, "a marked comment")
                api.call("PATCH", f"{base}/comments/{cid}", {"body": body})
                return "updated", cid
        if len(comments) < PAGE:
            break
    else:
        raise RagevalError(
            f"GitHub API: more than {MAX_PAGES} pages of comments on #{pr.number}; "
            "stopped looking for the marked comment"
        )
    made = api.call("POST", f"{base}/{pr.number}/comments", {"body": body})
    return "created", _comment_id(made, "the posted comment")


def _comment_id(comment: Any, what: str) -> int:
    cid = comment.get("id") if isinstance(comment, dict) else None
    if isinstance(cid, bool) or not isinstance(cid, int) or cid < 1:
        raise RagevalError(f"GitHub API: {what} has no comment id")
    return cid


def token_from_env(env: Mapping[str, str] = os.environ) -> str:
    return env.get("GITHUB_TOKEN") or env.get("GH_TOKEN") or ""
