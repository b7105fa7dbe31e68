"""Secret redaction for everything a run writes: manifest, result rows, errors and logs.

Two rules, applied together by one `Redactor`:

1. **By key**: a string, list or mapping stored under a key that looks like a credential
   (`key`, `token`, `secret`, `password`, `credential`, any case, anywhere in the name)
   becomes ``"***"``. Numbers and booleans are kept: `input_per_1k_tokens: 0.0025` is a
   price, not a secret, and no credential is a bare number. Keys ending in ``_env`` are
   kept too: they *name* an environment variable (`api_key_env: OPENAI_API_KEY`), which
   is exactly what a config should record instead of the key.
2. **By value**: the value of every environment variable a config names (each ``*_env``
   setting) is replaced by ``"***"`` inside every string, because a pipeline or an HTTP
   error message may echo a key back ("401: invalid key sk-…") where no key name warns us.

This module must never log or return a secret it was given; `Redactor` does not expose
the values it scrubs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
SECRET_KEY_RE = re.compile(r"key|token|secret|password|credential", re.IGNORECASE)
ENV_NAME_SUFFIX = "_env"
MIN_SECRET_LEN = 8


def is_secret_key(key: object) -> bool:
    """True when a value under `key` must not be written (see rule 1)."""
    name = str(key)
    return bool(SECRET_KEY_RE.search(name)) and not name.lower().endswith(ENV_NAME_SUFFIX)


def env_names(value: Any) -> list[str]:
    """Every environment variable named by a ``*_env`` setting anywhere inside `value`."""
    found: list[str] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            if str(k).lower().endswith(ENV_NAME_SUFFIX) and isinstance(v, str) and v:
                found.append(v)
            else:
                found += env_names(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            found += env_names(v)
    return found


def secret_values(value: Any, under_secret: bool = False) -> list[str]:
    """Every string stored under a secret-looking key anywhere inside `value` (rule 1).

    Rule 1 masks them where they are written; collecting them lets rule 2 scrub them from
    every other string too, since user code may echo such a value in an error message.
    Values shorter than `MIN_SECRET_LEN` are left out: the key rule is broad (`tokenizer:
    word`, `primary_key: id`) and scrubbing such words from every answer would ruin rows,
    while a real credential is longer.
    """
    if isinstance(value, str):
        return [value] if under_secret and len(value.strip()) >= MIN_SECRET_LEN else []
    found: list[str] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            found += secret_values(v, under_secret or is_secret_key(k))
    elif isinstance(value, (list, tuple)):
        for v in value:
            found += secret_values(v, under_secret)
    return found


class Redactor:
    """Scrubs known secret values from strings and masks values under secret-looking keys."""

    def __init__(self, secrets: Iterable[str] = ()):
        # Longest first, so a secret containing another is replaced whole.
        values = {s for s in secrets if s and s.strip()}
        self._secrets = sorted(values, key=len, reverse=True)

    @classmethod
    def for_env(
        cls,
        names: Iterable[str],
        environ: Mapping[str, str] | None = None,
        extra: Iterable[str] = (),
    ) -> Redactor:
        """A redactor for the current values of the environment variables `names`, plus
        the `extra` secret values (e.g. `secret_values` of a config)."""
        environ = os.environ if environ is None else environ
        return cls([*(environ.get(n, "") for n in names), *extra])

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        return value

    def value(self, value: Any, key: object = None) -> Any:
        """A copy of `value` (JSON-like) with both rules applied, recursively."""
        if key is not None and is_secret_key(key) and isinstance(value, (str, list, Mapping)):
            return MASK
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self.value(v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value

    def row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """A result row with secret values scrubbed from every string.

        Row columns are a fixed schema whose names include `input_tokens`, so rule 1 does
        not apply to them; only rule 2 does, to every nested string.
        """
        if not self._secrets:
            return dict(row)
        return {k: self._scrub(v) for k, v in row.items()}

    def _scrub(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self._scrub(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._scrub(v) for v in value]
        return value
