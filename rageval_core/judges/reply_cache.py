"""On-disk cache of judge replies, so re-running or re-scoring an unchanged evaluation makes
no calls, into any results location.

Where: one folder per user, `$XDG_CACHE_HOME/rageval/judge` (`~/.cache/rageval/judge`),
or the judge config's `cache_dir`. Not the results location: a run into a new folder or a
bucket (whose staging folder is temporary) would otherwise pay for every call again.
Key: sha256 of (endpoint, model, prompt version, request body) — the body holds the prompt text,
the question, answer, chunks and reference, so any change to what the judge sees is a new
key. Value: the validated reply object and the token usage it cost. One file per key,
`<dir>/<k[:2]>/<k>.json`, written atomically so concurrent threads, processes and
interrupted runs never leave half a file. Only valid replies are stored; errors are always
retried. A cache that cannot be written (read-only home) costs calls, never a verdict.
The request carries no credentials; a reply's claims may quote one the pipeline echoed in
its answer, so credentials of a recognisable shape are masked before a reply is stored
(the run's rows mask them the same way, so a replayed reply gives the same rows).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from rageval_core.redact import scrub_value
from rageval_core.runs.atomic import atomic_write_bytes
from rageval_core.runs.layout import user_cache_dir

log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """The user's judge cache: `$XDG_CACHE_HOME/rageval/judge`, else `~/.cache/rageval/judge`."""
    return user_cache_dir() / "judge"


def cache_key(endpoint: str, model: str, prompt_version: str, body: dict[str, Any]) -> str:
    """The endpoint is part of the key: the cache is the user's, shared by every run, and
    two servers may serve different weights under one model name (a hosted model and a
    local quantised one): a reply of one must never stand for the other."""
    canonical = json.dumps(
        {"endpoint": endpoint, "model": model, "prompt_version": prompt_version, "body": body},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class ReplyCache:
    """Files of {"reply": ..., "usage": ...} under one directory; thread-safe."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._warned = False

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or None when absent or unreadable (then it is simply redone)."""
        path = self._path(key)
        try:
            entry = json.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable judge cache file %s (%s)", path, exc)
            return None
        return entry if isinstance(entry, dict) and "reply" in entry else None

    def put(self, key: str, reply: dict[str, Any], usage: dict[str, int]) -> None:
        """Store a valid reply; a failed write is a warning (once), never the question's error."""
        data = json.dumps(
            {"reply": scrub_value(reply), "usage": usage}, ensure_ascii=False, sort_keys=True
        )
        try:
            # Private to the user when rageval creates it: replies quote answers and chunks.
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic_write_bytes(self._path(key), data.encode())
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning(
                    "judge cache %s is not writable (%s); replies are not kept",
                    self.directory,
                    exc.strerror or exc,
                )
