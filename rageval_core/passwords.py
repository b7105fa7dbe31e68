"""Shared-password hashing for the hosted dashboard: PBKDF2-SHA256, stored as one string.

Format: ``pbkdf2_sha256$<iterations>$<salt b64>$<hash b64>`` — the same shape Django uses,
so the hash can sit in Streamlit secrets or an environment variable without the password.
This module never logs or returns the password; `verify_password` compares in constant time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from rageval_core.errors import ConfigError

ALGORITHM = "pbkdf2_sha256"
# OWASP's 2023 recommendation for PBKDF2-HMAC-SHA256.
DEFAULT_ITERATIONS = 600_000
MIN_ITERATIONS = 100_000


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hash_password(password: str, iterations: int = DEFAULT_ITERATIONS) -> str:
    """Hash `password` with a fresh 16-byte random salt."""
    if not password:
        raise ConfigError("the password is empty")
    if iterations < MIN_ITERATIONS:
        raise ConfigError(f"iterations must be at least {MIN_ITERATIONS}")
    salt = secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return f"{ALGORITHM}${iterations}${_b64(salt)}${_b64(digest)}"


def parse_hash(encoded: str) -> tuple[int, bytes, bytes]:
    """(iterations, salt, digest) of a stored hash; ConfigError names what is wrong."""
    parts = str(encoded).strip().split("$")
    if len(parts) != 4 or parts[0] != ALGORITHM:
        raise ConfigError(f"password hash must look like {ALGORITHM}$<iterations>$<salt>$<hash>")
    try:
        iterations = int(parts[1])
        salt = base64.b64decode(parts[2], validate=True)
        digest = base64.b64decode(parts[3], validate=True)
    except ValueError as exc:
        raise ConfigError(f"password hash is malformed ({type(exc).__name__})") from exc
    if iterations < 1 or not salt or not digest:
        raise ConfigError("password hash is malformed (empty field)")
    return iterations, salt, digest


def verify_password(password: str, encoded: str) -> bool:
    """True when `password` matches `encoded`; constant-time in the digest comparison."""
    iterations, salt, digest = parse_hash(encoded)
    candidate = hashlib.pbkdf2_hmac("sha256", str(password).encode(), salt, iterations)
    return hmac.compare_digest(candidate, digest)
