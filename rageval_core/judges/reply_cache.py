"""On-disk cache of judge replies, so re-running or re-scoring an unchanged evaluation makes
no calls, into any results location.

Where: one folder per user, `$XDG_CACHE_HOME/rageval/judge` (`~/.cache/rageval/judge`),
or the judge config's `cache_dir`. Not the results location: a run into a new folder or a
bucket (whose staging folder is temporary) would otherwise pay for every call again.
Key: sha256 of (endpoint, model, prompt version, the config's `revision` when set, request
body) — the body holds the prompt text, the question, answer, chunks and reference, so any
change to what the judge sees is a new key. Value: the validated reply object, the token
usage it cost and what the endpoint said served it (`Served`).

The served model is only known after a call, so it cannot be in the key: a provider that
moves a model name to new weights answers under the same URL and name. `ServedGate` holds
cached replies back until one live call (the first cached question, asked again) has said
what the endpoint serves now; a reply another served model wrote is then asked again.

One file per key,
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
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval_core.errors import shown
from rageval_core.redact import scrub_value
from rageval_core.runs.atomic import atomic_write_bytes
from rageval_core.runs.layout import user_cache_dir

log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """The user's judge cache: `$XDG_CACHE_HOME/rageval/judge`, else `~/.cache/rageval/judge`."""
    return user_cache_dir() / "judge"


SERVED_CHARS = 200
"""How much of a served model name or fingerprint is kept: they are short; more is noise."""


@dataclass(frozen=True)
class Served:
    """What a reply says answered it: the envelope's `model` (the snapshot behind an alias,
    `gpt-4o` served as `gpt-4o-2024-08-06`) and `system_fingerprint` (the backend's
    configuration). None: the endpoint did not say. Untrusted text, bounded to one line."""

    model: str | None = None
    fingerprint: str | None = None

    @classmethod
    def of(cls, envelope: Any) -> Served:
        """From a reply envelope, or a cache entry's `served`; anything else says nothing."""
        if not isinstance(envelope, Mapping):
            return cls()

        def text(key: str) -> str | None:
            v = envelope.get(key)
            return (
                shown(v.strip(), SERVED_CHARS, bare=True)
                if isinstance(v, str) and v.strip()
                else None
            )

        return cls(text("model"), text("system_fingerprint"))

    def to_dict(self) -> dict[str, str | None]:
        """As an envelope says it, so `of` reads it back."""
        return {"model": self.model, "system_fingerprint": self.fingerprint}


class ServedGate:
    """Whether a cached reply may stand for what the endpoint serves now. Thread-safe.

    A cached reply that records no served model (its endpoint did not say, or it was
    written before replies recorded it) is used as it always was: nothing can tell it
    apart. For one that does, until a live answer has said what the endpoint serves now,
    the first such caller is told to ask live (`trusts` gives None: it is the probe, and
    calls `probed` when done) and the others wait for it. Then the reply is used when the
    endpoint names no model or the one it records, else asked again. A probe that could
    not reach the endpoint leaves the cache trusted: a replay without a network still
    works. Every live answer updates what is served now (`heard`).
    """

    def __init__(self) -> None:
        self.now = Served()
        self._known = threading.Event()
        self._lock = threading.Lock()
        self._probing = False

    def heard(self, served: Served) -> None:
        with self._lock:
            self.now = served
        self._known.set()

    def probed(self) -> None:
        self._known.set()

    def trusts(self, recorded: Served) -> bool | None:
        if recorded.model is None:
            return True
        with self._lock:
            if not self._known.is_set() and not self._probing:
                self._probing = True
                return None
        self._known.wait()
        with self._lock:
            return self.now.model is None or recorded.model == self.now.model


def cache_key(
    endpoint: str,
    model: str,
    prompt_version: str,
    body: dict[str, Any],
    revision: str | None = None,
) -> str:
    """The endpoint is part of the key: the cache is the user's, shared by every run, and
    two servers may serve different weights under one model name (a hosted model and a
    local quantised one): a reply of one must never stand for the other. The config's
    `revision` is too, when set (keys without one stay as they were)."""
    key = {"endpoint": endpoint, "model": model, "prompt_version": prompt_version, "body": body}
    if revision is not None:
        key["revision"] = revision
    canonical = json.dumps(
        key,
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class ReplyCache:
    """Files of {"reply": ..., "usage": ..., "served": ...} under one directory; thread-safe."""

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

    def put(self, key: str, reply: dict[str, Any], usage: dict[str, int], served: Served) -> None:
        """Store a valid reply; a failed write is a warning (once), never the question's error."""
        data = json.dumps(
            {"reply": scrub_value(reply), "usage": usage, "served": served.to_dict()},
            ensure_ascii=False,
            sort_keys=True,
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
