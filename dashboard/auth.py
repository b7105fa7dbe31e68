"""Who may see the dashboard: OIDC with an allow-list, a shared password, or a loud warning.

`require_access()` runs before any page draws data. It either returns (the viewer may see
everything) or draws a sign-in form / refusal and calls `st.stop()`, so nothing below it
reaches the browser. Modes, first that is configured wins:

1. OIDC — an ``[auth]`` section in secrets. `st.login` signs the user in; only e-mails in
   ``rageval.allowed_emails`` / ``RAGEVAL_ALLOWED_EMAILS`` or whose domain is in
   ``rageval.allowed_domains`` / ``RAGEVAL_ALLOWED_DOMAINS`` get in. An empty allow-list
   lets nobody in: signing in with Google proves who you are, not that you belong here.
2. Shared password — ``rageval.password_hash`` / ``RAGEVAL_PASSWORD_HASH``
   (`rageval hash-password`). Five failures lock the session and the client address out
   for ``rageval.lockout_minutes`` / ``RAGEVAL_LOCKOUT_MINUTES`` (default 15).
3. Neither — fine on loopback; on any other address a warning says the dashboard is public.

Never logs or renders a password, hash or token.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from typing import Any

import streamlit as st

from rageval_core.errors import ConfigError
from rageval_core.passwords import verify_password

MAX_FAILURES = 5
DEFAULT_LOCKOUT_MINUTES = 15.0
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_SESSION_KEY = "_rageval_auth"

# Process-wide failures per client address: a new browser session must not reset the count.
_client_failures: dict[str, list[float]] = {}
_client_lock = threading.Lock()


# ---------------------------------------------------------------------------- settings


def _secrets_section(name: str) -> dict[str, Any]:
    """A secrets section as a plain dict; {} when secrets.toml is absent or has no section."""
    try:
        section = st.secrets.get(name)
    except Exception:  # no secrets file at all: Streamlit raises its own not-found error
        return {}
    return dict(section) if hasattr(section, "keys") else {}


def _setting(key: str, env: str) -> Any:
    """`rageval.<key>` from secrets, else the environment variable `env`, else None."""
    value = _secrets_section("rageval").get(key)
    return value if value not in (None, "", []) else (os.environ.get(env) or None)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    items: Iterable[Any] = value.split(",") if isinstance(value, str) else value
    return [str(v).strip().lower() for v in items if str(v).strip()]


def _lockout_seconds() -> float:
    raw = _setting("lockout_minutes", "RAGEVAL_LOCKOUT_MINUTES")
    try:
        return float(raw if raw is not None else DEFAULT_LOCKOUT_MINUTES) * 60
    except (TypeError, ValueError):
        return DEFAULT_LOCKOUT_MINUTES * 60


# ---------------------------------------------------------------------------- entry point


def require_access() -> None:
    """Return if the viewer may see results; otherwise draw the gate and `st.stop()`."""
    auth = _secrets_section("auth")
    if auth:
        _require_oidc(auth)
        return
    password_hash = _setting("password_hash", "RAGEVAL_PASSWORD_HASH")
    if password_hash:
        _require_password(str(password_hash))
        return
    address = st.get_option("server.address") or ""
    if address.strip("[]") not in LOOPBACK:
        st.warning(
            f"This dashboard is public: it listens on {address or 'all interfaces'} and no "
            "sign-in is configured. Anyone who can reach it sees every result. Configure "
            "OIDC or a shared password (see docs/deploy.md).",
            icon="⚠️",
        )


# ---------------------------------------------------------------------------- OIDC


def email_allowed(email: str, emails: Iterable[str], domains: Iterable[str]) -> bool:
    """True when `email` is listed or its domain is (exact match, case-insensitive).

    Domains match exactly so that ``evil-example.com`` never passes for ``example.com``.
    """
    email = (email or "").strip().lower()
    if "@" not in email:
        return False
    domain = email.rsplit("@", 1)[1]
    return email in set(emails) or domain in {d.lstrip("@") for d in domains}


def _providers(auth: dict[str, Any]) -> list[str | None]:
    """Named providers (``[auth.google]`` …), or [None] for a single unnamed one."""
    named = [k for k, v in auth.items() if hasattr(v, "keys")]
    return named or [None]


def _require_oidc(auth: dict[str, Any]) -> None:
    if not st.user.is_logged_in:
        st.title("Sign in")
        st.write("This rageval dashboard is private.")
        for provider in _providers(auth):
            label = f"Sign in with {provider}" if provider else "Sign in"
            if st.button(label, key=f"_rageval_login_{provider or 'default'}"):
                st.login(provider) if provider else st.login()
        st.stop()
    email = str(st.user.get("email") or "")
    verified = st.user.get("email_verified")
    emails = _as_list(_setting("allowed_emails", "RAGEVAL_ALLOWED_EMAILS"))
    domains = _as_list(_setting("allowed_domains", "RAGEVAL_ALLOWED_DOMAINS"))
    if verified is False or not email_allowed(email, emails, domains):
        st.title("Not allowed")
        st.error("Your account is not on this dashboard's allow-list. Ask its owner to add it.")
        if st.button("Sign out", key="_rageval_logout"):
            st.logout()
        st.stop()
    with st.sidebar:
        st.caption(f"Signed in as {email}")
        if st.button("Sign out", key="_rageval_logout"):
            st.logout()


# ---------------------------------------------------------------------------- shared password


def _client_key() -> str:
    # Behind a reverse proxy every viewer shares the proxy's address: a brute force then
    # locks everyone out for a while, which is the safe way to fail.
    try:
        ip = st.context.ip_address
    except Exception:  # no request context (bare script run)
        ip = None
    return ip if isinstance(ip, str) and ip else "local"


def _recent(stamps: list[float], now: float, window: float) -> list[float]:
    return [t for t in stamps if now - t < window]


def _locked_for(state: dict[str, Any], client: str, now: float, window: float) -> float:
    """Seconds left in a lock-out of this session or client, 0 when not locked."""
    with _client_lock:
        client_recent = _recent(_client_failures.get(client, []), now, window)
        _client_failures[client] = client_recent
    session_recent = _recent(state["failures"], now, window)
    state["failures"] = session_recent
    lists = [s for s in (session_recent, client_recent) if len(s) >= MAX_FAILURES]
    return max((s[-MAX_FAILURES] + window - now for s in lists), default=0.0)


def _record_failure(state: dict[str, Any], client: str, now: float) -> None:
    state["failures"].append(now)
    with _client_lock:
        _client_failures.setdefault(client, []).append(now)


def _require_password(password_hash: str) -> None:
    state = st.session_state.setdefault(_SESSION_KEY, {"ok": False, "failures": []})
    if state["ok"]:
        with st.sidebar:
            if st.button("Sign out", key="_rageval_signout"):
                state["ok"] = False
                st.rerun()
        return
    st.title("Sign in")
    client, window = _client_key(), _lockout_seconds()
    locked = _locked_for(state, client, time.time(), window)
    if locked > 0:
        st.error(f"Too many failed attempts. Try again in {int(locked // 60) + 1} minute(s).")
        st.stop()
    with st.form("_rageval_password_form"):
        password = st.text_input("Password", type="password", key="_rageval_password")
        submitted = st.form_submit_button("Sign in")
    if submitted:
        try:
            ok = verify_password(password or "", password_hash)
        except ConfigError as exc:
            st.error(f"Sign-in is misconfigured: {exc}")
            st.stop()
        if ok:
            state["ok"] = True
            st.rerun()
        _record_failure(state, client, time.time())
        if _locked_for(state, client, time.time(), window) > 0:
            st.error("Too many failed attempts. Sign-in is locked for a while.")
        else:
            st.error("Wrong password.")
    st.stop()
