"""Secret redaction for everything a run writes: manifest, result rows, errors and logs.

Three rules, applied together by one `Redactor`:

1. **By key**: a string, list or mapping stored under a key that looks like a credential
   (`key`, `token`, `secret`, `password`, `passwd`, `pwd`, `credential`, `auth` but not
   `author`/`authority`, `cookie`, `signature`, or exactly `sig`; any case, anywhere in the
   name) becomes ``"***"`` — so HTTP headers such as `Authorization`, `Cookie`,
   `Set-Cookie` and `X-Api-Key` are covered. Numbers and booleans are kept:
   `input_per_1k_tokens: 0.0025` is a price, not a secret, and no credential is a bare
   number. Keys ending in ``_env`` are kept too: they *name* an environment variable
   (`api_key_env: OPENAI_API_KEY`), which is exactly what a config should record.
2. **By known value**: the value of every environment variable a config names (each
   ``*_env`` setting), and every string found under a secret-looking key (with the tokens
   inside it, so `Bearer sk-…` also scrubs a bare `sk-…`), is replaced by ``"***"`` inside
   every string, because a pipeline or an HTTP error may echo a key where no name warns us.
   Only a value that can be a secret (`can_be_secret`: `MIN_SECRET_LEN` characters or
   more, and not a placeholder local servers take, `EMPTY`, `ollama`, `none`…): a short
   or common key (`the`, `k`) would otherwise be masked inside every answer, question and
   run id. Such a key still never reaches a file by its place: headers and settings under
   a secret-looking key are masked by rule 1.
3. **By shape**: credentials recognisable in any string are masked wherever they appear:
   URL user info (`postgres://user:pass@host` → `postgres://***@host`), query parameters
   with a secret-looking name (`?api_key=…`, `&token=…`, `X-Amz-Signature=…`, `sig=…`),
   `Bearer …`/`Token …` and `Basic …` credentials, `Cookie:`/`Set-Cookie:` values, and a
   secret-looking name followed by `:` or `=` and a credential-looking value
   (`x-api-key: …`, `"client_secret": "…"`). "Credential-looking" means at least 8
   characters with both letters and digits (or 16 with both cases), so prose survives:
   "the token limit is 4096", "the bearer of a bill", "max_tokens=512", URLs without
   credentials. Every pattern runs in linear time.

This module must never log or return a secret it was given; `Redactor` does not expose
the values it scrubs.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from rageval_core.models import PipelineOutput

MASK = "***"
_SECRET_WORDS = r"key|token|secret|passw(?:or)?d|pwd|credential|auth(?!or(?!iz))|cookie|signature"
SECRET_KEY_RE = re.compile(_SECRET_WORDS + r"|^sig$", re.IGNORECASE)
ENV_NAME_SUFFIX = "_env"
MIN_SECRET_LEN = 8
# What local servers (Ollama, vLLM, llama.cpp, LM Studio) accept as a key: not secrets.
PLACEHOLDERS = frozenset(
    {"empty", "none", "null", "ollama", "lm-studio", "dummy", "sk-no-key-required", "no-key"}
)

_TOKEN = r"[A-Za-z0-9\-._~+/]+=*"  # RFC 7235 token68: what an auth scheme carries
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,30}://)[^\s/?#@\"'<>]+@")
_QUERY_PARAM = re.compile(r"(?<=[?&;])([\w.\-]{1,64})=([^&#\s\"'<>]+)")
_SCHEME = re.compile(r"(?i)\b(bearer|token)(\s+)(" + _TOKEN + ")")
_BASIC = re.compile(r"(?i)\b(basic)(\s+)([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])")
_COOKIE = re.compile(r"(?i)(?<![\w-])((?:set-)?cookies?[\"']?\s*[:=]\s*[\"']?)([^\r\n\"']+)")
_NAMED = re.compile(
    r"(?i)(?<![\w-])([\w-]*(?:" + _SECRET_WORDS + r")[\w-]*[\"']?\s*[:=]\s*[\"']?)(" + _TOKEN + ")"
)


def _credential_like(value: str) -> bool:
    """Long enough, and mixed like a key rather than a word or a number."""
    if len(value) < MIN_SECRET_LEN:
        return False
    letters = any(c.isalpha() for c in value)
    if letters and any(c.isdigit() for c in value):
        return True
    return len(value) >= 16 and any(c.isupper() for c in value) and any(c.islower() for c in value)


def _basic_credential(value: str) -> bool:
    """`Basic` carries base64 of `user:password`; prose after "basic" does not decode so."""
    try:
        return b":" in base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False


def scrub_shapes(text: str) -> str:
    """`text` with every credential of a recognisable shape masked (rule 3)."""
    if not text:
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = _QUERY_PARAM.sub(
        lambda m: f"{m.group(1)}={MASK}" if is_secret_key(m.group(1)) else m.group(0), text
    )
    text = _SCHEME.sub(
        lambda m: m.group(1) + m.group(2) + (MASK if _credential_like(m.group(3)) else m.group(3)),
        text,
    )
    text = _BASIC.sub(
        lambda m: m.group(1) + m.group(2) + (MASK if _basic_credential(m.group(3)) else m.group(3)),
        text,
    )
    text = _COOKIE.sub(lambda m: m.group(1) + MASK if "=" in m.group(2) else m.group(0), text)
    return _NAMED.sub(
        lambda m: m.group(1) + MASK if _credential_like(m.group(2)) else m.group(0), text
    )


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
    Each value comes with the words inside it (split on spaces, `;`, `,`, `&`, `=`), so
    `Authorization: Bearer sk-…` or `cookie: sid=…` also scrubs the bare token a server
    echoes. Values shorter than `MIN_SECRET_LEN` are left out: the key rule is broad
    (`tokenizer: word`, `primary_key: id`) and scrubbing such words from every answer
    would ruin rows, while a real credential is longer.
    """
    if isinstance(value, str):
        if not under_secret:
            return []
        parts = [value, *re.split(r"[\s;,&=]+", value)]
        return [p for p in dict.fromkeys(parts) if len(p.strip()) >= MIN_SECRET_LEN]
    found: list[str] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            found += secret_values(v, under_secret or is_secret_key(k))
    elif isinstance(value, (list, tuple)):
        for v in value:
            found += secret_values(v, under_secret)
    return found


def _map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """A copy of a JSON-like value with `fn` applied to every string inside it."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, Mapping):
        return {k: _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_map_strings(v, fn) for v in value]
    return value


def scrub_value(value: Any) -> Any:
    """A copy of a JSON-like value with rule 3 applied to every string inside it."""
    return _map_strings(value, scrub_shapes)


def can_be_secret(value: str) -> bool:
    """True when `value` is long and uncommon enough that masking it by substring (rule 2)
    hides a secret rather than words."""
    stripped = value.strip()
    return len(stripped) >= MIN_SECRET_LEN and stripped.lower() not in PLACEHOLDERS


class Redactor:
    """Scrubs known secret values from strings and masks values under secret-looking keys."""

    def __init__(self, secrets: Iterable[str] = ()):
        # Longest first, so a secret containing another is replaced whole.
        values = {s for s in secrets if s and can_be_secret(s)}
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
        return scrub_shapes(value)

    def value(self, value: Any, key: object = None) -> Any:
        """A copy of `value` (JSON-like) with all three rules applied, recursively."""
        if key is not None and is_secret_key(key) and isinstance(value, (str, list, Mapping)):
            return MASK
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self.value(v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value

    def output(self, out: PipelineOutput) -> PipelineOutput:
        """A pipeline's output with its answer and chunk texts scrubbed, for the judge.

        Judges quote, split and lower-case the answer into claims and reasons ("not in any
        retrieved sentence: s3cr3tpass"), which would carry a credential out of the shape
        and the case the other rules recognise; so they only ever see the scrubbed text.
        """
        chunks = tuple(replace(c, text=self.text(c.text)) for c in out.retrieved)
        return replace(out, answer=self.text(out.answer), retrieved=chunks)

    def row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """A result row with secret values scrubbed from every string.

        Row columns are a fixed schema whose names include `input_tokens`, so rule 1 does
        not apply to them; rules 2 and 3 do, to every nested string.
        """
        return {k: _map_strings(v, self.text) for k, v in row.items()}
