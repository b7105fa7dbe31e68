"""On-disk cache of judge replies, so re-running an unchanged evaluation makes no calls.

Key: sha256 of (model, prompt version, request body) — the body holds the prompt text,
the question, answer, chunks and reference, so any change to what the judge sees is a new
key. Value: the validated reply object and the token usage it cost. One file per key,
`<dir>/<k[:2]>/<k>.json`, written atomically so concurrent threads and interrupted runs
never leave half a file. Only valid replies are stored; errors are always retried.
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
from rageval_core.results import atomic_write_bytes

log = logging.getLogger(__name__)


def cache_key(model: str, prompt_version: str, body: dict[str, Any]) -> str:
    canonical = json.dumps(
        {"model": model, "prompt_version": prompt_version, "body": body},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class ReplyCache:
    """Files of {"reply": ..., "usage": ...} under one directory; thread-safe."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

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
        data = json.dumps(
            {"reply": scrub_value(reply), "usage": usage}, ensure_ascii=False, sort_keys=True
        )
        atomic_write_bytes(self._path(key), data.encode())
