"""Who may see the dashboard: OIDC with an allow-list, a shared password, or a loud warning.

`require_access()` runs before any page draws data. It either returns (the viewer may see
everything) or draws a sign-in form / refusal and calls `st.stop()`, so nothing below it
reaches the browser. Modes, first that is configured wins:

1. OIDC — an ``[auth]`` section in secrets. `st.login` signs the user in; only e-mails in
   ``rageval.allowed_emails`` / ``RAGEVAL_ALLOWED_EMAILS`` or whose domain is in
   ``rageval.allowed_domains`` / ``RAGEVAL_ALLOWED_DOMAINS`` get in. An empty allow-list
   lets nobody in: signing in with Google proves who you are, not that you belong here.
2. Shared password — ``rageval.password_hash`` / ``RAGEVAL_PASSWORD_HASH``
   (`rageval hash-password`). Wrong passwords are throttled per source (`Throttle`): after
   five in ``rageval.lockout_minutes`` / ``RAGEVAL_LOCKOUT_MINUTES`` (default 15), every
   attempt from that source waits before it is checked, 1 s doubling to 60 s
   (``throttle_seconds`` / ``RAGEVAL_THROTTLE_SECONDS`` sets the first wait), one attempt
   at a time. Nothing is ever locked: the right password always gets in (at worst after
   the wait), and other sources are never slowed, so a stranger guessing cannot shut a
   team out.
3. Neither — fine on loopback; on any other address a warning says the dashboard is public.

Who labels (`reviewer()`): the signed-in OIDC e-mail; without OIDC, the name this
browser session typed once (`set_reviewer`, checked like every reviewer name).

Never logs or renders a password, hash or token.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import streamlit as st

from rageval_core.errors import ConfigError
from rageval_core.labels import check_reviewer
from rageval_core.links import escape_word
from rageval_core.passwords import verify_password

MAX_FAILURES = 5
DEFAULT_LOCKOUT_MINUTES = 15.0
DEFAULT_THROTTLE_SECONDS = 1.0
MAX_DELAY_SECONDS = 60.0
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_SESSION_KEY = "_rageval_auth"
_REVIEWER_KEY = "_rageval_reviewer"


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


def _seconds(key: str, env: str, default: float, unit: float = 1.0) -> float:
    """A positive number of seconds from settings; the default when unset or invalid."""
    raw = _setting(key, env)
    try:
        value = float(raw) * unit if raw is not None else default * unit
    except (TypeError, ValueError):
        return default * unit
    return value if value > 0 else default * unit


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
            icon=":material/warning:",  # an emoji icon loads Streamlit's emoji table: 1.7 s
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
        st.caption(f"Signed in as {escape_word(email)}")  # the identity provider's text
        if st.button("Sign out", key="_rageval_logout"):
            st.logout()


def signed_in_email() -> str | None:
    """The OIDC user's e-mail, when OIDC is configured and someone signed in."""
    if not _secrets_section("auth") or not st.user.is_logged_in:
        return None
    return str(st.user.get("email") or "") or None


def reviewer() -> str | None:
    """Who saves labels: the signed-in e-mail, else the name typed in this session."""
    return signed_in_email() or st.session_state.get(_REVIEWER_KEY)


def set_reviewer(name: str) -> str:
    """Remember `name` as this session's reviewer; ConfigError (why) when it is not valid."""
    st.session_state[_REVIEWER_KEY] = check_reviewer(name)
    return st.session_state[_REVIEWER_KEY]


# ---------------------------------------------------------------------------- shared password


def client_source(
    ip: str | None, headers: Mapping[str, str], session: str, trusted: Iterable[str] = ()
) -> str:
    """Who an attempt comes from, for throttling.

    The peer address, except when the peer is a proxy we trust — loopback (Streamlit
    reports it as None: nginx on this host) or an address in `trusted` — whose own entry in
    `X-Forwarded-For` (the rightmost) names the client. A remote peer's header is ignored:
    anyone can send one. With no address at all, the browser session.
    """
    if ip is None or ip in trusted:
        forwarded = str(headers.get("X-Forwarded-For") or "").split(",")[-1].strip()
        try:
            return str(ipaddress.ip_address(forwarded))
        except ValueError:
            pass
    return ip or session


class Throttle:
    """Wrong-password failures per source; how long the next attempt must wait.

    Below `MAX_FAILURES` failures within `window` seconds: no wait. Then `base` seconds,
    doubling with each further failure up to `max_delay`. `turn()` lets one attempt per
    source be checked at a time, so parallel sessions cannot multiply the rate. Sources
    idle for a window are forgotten, and at most `max_sources` are kept.
    """

    def __init__(
        self,
        window: float = DEFAULT_LOCKOUT_MINUTES * 60,
        base: float = DEFAULT_THROTTLE_SECONDS,
        max_delay: float = MAX_DELAY_SECONDS,
        max_sources: int = 10_000,
    ):
        self.window, self.base, self.max_delay = window, base, max_delay
        self.max_sources = max_sources
        self._failures: dict[str, list[float]] = {}
        self._turns: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._failures)

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()
            self._turns.clear()

    def configure(self, window: float, base: float) -> None:
        self.window, self.base = window, base

    def delay(self, source: str, now: float) -> float:
        """Seconds an attempt from `source` waits before it is checked (0: none)."""
        with self._lock:
            recent = [t for t in self._failures.get(source, ()) if now - t < self.window]
        excess = len(recent) - MAX_FAILURES
        return 0.0 if excess < 0 else min(self.base * 2.0 ** min(excess, 30), self.max_delay)

    def failed(self, source: str, now: float) -> None:
        with self._lock:
            recent = [t for t in self._failures.pop(source, ()) if now - t < self.window]
            self._failures[source] = [*recent, now]  # re-inserted: oldest last failure first
            while self._failures:
                oldest = next(iter(self._failures))
                idle = now - self._failures[oldest][-1] >= self.window
                if not idle and len(self._failures) <= self.max_sources:
                    break
                del self._failures[oldest]
                self._turns.pop(oldest, None)

    @contextmanager
    def turn(self, source: str, timeout: float) -> Iterator[bool]:
        """Hold the source's turn (True) or give up after `timeout` seconds (False)."""
        with self._lock:
            lock = self._turns.setdefault(source, threading.Lock())
        got = lock.acquire(timeout=timeout)
        try:
            yield got
        finally:
            if got:
                lock.release()


# Process-wide: a new browser session from the same source must not reset the count.
THROTTLE = Throttle()


def _source(state: dict[str, Any]) -> str:
    try:
        ip, headers = st.context.ip_address, st.context.headers
    except Exception:  # no request context (bare script run)
        ip, headers = None, {}
    # Anything but a real address or header map (a test harness's stand-in) is "unknown".
    ip = ip if isinstance(ip, str) and ip else None
    headers = headers if isinstance(headers, Mapping) else {}
    trusted = _as_list(_setting("trusted_proxies", "RAGEVAL_TRUSTED_PROXIES"))
    return client_source(ip, headers, state["session"], trusted)


def _require_password(password_hash: str) -> None:
    state = st.session_state.setdefault(
        _SESSION_KEY, {"ok": False, "session": f"session:{secrets.token_hex(8)}"}
    )
    if state["ok"]:
        with st.sidebar:
            if st.button("Sign out", key="_rageval_signout"):
                state["ok"] = False
                st.rerun()
        return
    st.title("Sign in")
    THROTTLE.configure(
        window=_seconds("lockout_minutes", "RAGEVAL_LOCKOUT_MINUTES", DEFAULT_LOCKOUT_MINUTES, 60),
        base=_seconds("throttle_seconds", "RAGEVAL_THROTTLE_SECONDS", DEFAULT_THROTTLE_SECONDS),
    )
    source = _source(state)
    wait = THROTTLE.delay(source, time.time())
    if wait:
        st.warning(_throttled(wait))
    with st.form("_rageval_password_form"):
        password = st.text_input("Password", type="password", key="_rageval_password")
        submitted = st.form_submit_button("Sign in")
    if submitted:
        with THROTTLE.turn(source, timeout=2 * MAX_DELAY_SECONDS) as mine:
            if not mine:
                st.error("Too many sign-in attempts from your address at once; try again soon.")
                st.stop()
            time.sleep(THROTTLE.delay(source, time.time()))
            try:
                ok = verify_password(password or "", password_hash)
            except ConfigError as exc:
                st.error(f"Sign-in is misconfigured: {exc}")
                st.stop()
            if not ok:
                THROTTLE.failed(source, time.time())
        if ok:
            state["ok"] = True
            st.rerun()
        wait = THROTTLE.delay(source, time.time())
        st.error("Wrong password." + (f" {_throttled(wait)}" if wait else ""))
    st.stop()


def _throttled(wait: float) -> str:
    return (
        f"Too many wrong passwords from your address: each attempt now waits {wait:.0f} s "
        "before it is checked. The right password still works."
    )
