"""The dashboard gate (dashboard/auth.py): nothing renders before sign-in, in every mode."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit import config
from streamlit.testing.v1 import AppTest

from dashboard import auth
from rageval_core.passwords import hash_password, parse_hash, verify_password

GATED = str(Path(__file__).with_name("gated_app.py"))
SECRET_TEXT = "secret-run"
# Fewer iterations than production keep the tests fast; the format is the same.
PASSWORD = "correct horse battery staple"
HASH = hash_password(PASSWORD, iterations=100_000)


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for var in (
        "RAGEVAL_PASSWORD_HASH",
        "RAGEVAL_ALLOWED_EMAILS",
        "RAGEVAL_ALLOWED_DOMAINS",
        "RAGEVAL_LOCKOUT_MINUTES",
        "RAGEVAL_THROTTLE_SECONDS",
        "RAGEVAL_TRUSTED_PROXIES",
    ):
        monkeypatch.delenv(var, raising=False)
    auth.THROTTLE.clear()
    yield
    auth.THROTTLE.clear()


def page_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [t.value for t in at.title]
    parts += [e.value for e in at.error] + [w.value for w in at.warning]
    return "\n".join(str(p) for p in parts)


def shows_data(at: AppTest) -> bool:
    return bool(at.dataframe) or bool(at.get("plotly_chart")) or SECRET_TEXT in page_text(at)


def password_app(**secrets) -> AppTest:
    at = AppTest.from_file(GATED, default_timeout=30)
    at.secrets["rageval"] = {"password_hash": HASH, **secrets}
    return at.run()


def sign_in(at: AppTest, password: str) -> AppTest:
    at.text_input(key="_rageval_password").input(password)
    return at.button[0].click().run()


# ---------------------------------------------------------------------------- hashing


def test_hash_roundtrip_and_salt():
    assert verify_password(PASSWORD, HASH)
    assert not verify_password(PASSWORD + " ", HASH)
    assert hash_password(PASSWORD, iterations=100_000) != HASH  # fresh salt
    assert parse_hash(HASH)[0] == 100_000


BAD_HASHES = ["", "plain", "md5$1$a$b", "pbkdf2_sha256$x$AA==$AA==", "pbkdf2_sha256$1$!!$AA=="]


@pytest.mark.parametrize("bad", BAD_HASHES)
def test_malformed_hash_is_a_config_error(bad):
    from rageval_core.errors import ConfigError

    with pytest.raises(ConfigError):
        verify_password("x", bad)


def test_hash_password_command(tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", "hash-password", "--iterations", "100000"],
        input="s3cret-pass\n",
        capture_output=True,
        text=True,
        check=True,
    )
    encoded = out.stdout.strip()
    assert verify_password("s3cret-pass", encoded)
    assert "s3cret-pass" not in out.stdout + out.stderr


# ---------------------------------------------------------------------------- shared password


def test_password_gate_hides_everything_before_sign_in():
    at = password_app()
    assert not at.exception
    assert not shows_data(at)
    assert at.text_input(key="_rageval_password").proto.type == 1  # PASSWORD


def test_wrong_password_shows_error_and_no_data():
    at = sign_in(password_app(), "wrong")
    assert not at.exception
    assert "Wrong password" in page_text(at)
    assert not shows_data(at)


def test_right_password_shows_content():
    at = sign_in(password_app(), PASSWORD)
    assert not at.exception
    assert shows_data(at)
    assert at.dataframe and at.get("plotly_chart")
    assert HASH not in page_text(at) and PASSWORD not in page_text(at)


def test_password_hash_from_environment(monkeypatch):
    monkeypatch.setenv("RAGEVAL_PASSWORD_HASH", HASH)
    at = AppTest.from_file(GATED, default_timeout=30).run()
    assert not shows_data(at)
    assert shows_data(sign_in(at, PASSWORD))


def test_wrong_passwords_in_one_session_never_lock_out_another():
    # Before: five wrong guesses from anyone locked every visitor out for 15 minutes.
    attacker = password_app(throttle_seconds=0.01)
    for _ in range(auth.MAX_FAILURES + 2):
        attacker = sign_in(attacker, "guess")
    assert "Too many wrong passwords" in page_text(attacker)
    colleague = sign_in(password_app(throttle_seconds=0.01), PASSWORD)
    assert not colleague.exception and shows_data(colleague)


def test_the_right_password_always_works_even_after_many_wrong_ones():
    at = password_app(throttle_seconds=0.01)
    for _ in range(auth.MAX_FAILURES + 3):
        at = sign_in(at, "guess")
    assert at.text_input(key="_rageval_password")  # the form stays: no lock-out
    at = sign_in(at, PASSWORD)
    assert not at.exception and shows_data(at)


def test_throttled_wrong_attempts_wait_and_say_so():
    at = password_app(throttle_seconds=0.4)
    for _ in range(auth.MAX_FAILURES):
        at = sign_in(at, "guess")
    assert "Too many wrong passwords" in page_text(at)
    start = time.monotonic()
    at = sign_in(at, "guess again")
    assert time.monotonic() - start >= 0.4
    assert "Wrong password" in page_text(at) and not shows_data(at)


def test_throttle_is_per_source_grows_and_forgets():
    t = auth.Throttle(window=60, base=1.0, max_delay=8)
    for i in range(auth.MAX_FAILURES - 1):
        t.failed("1.2.3.4", now=i)
    assert t.delay("1.2.3.4", now=5) == 0
    t.failed("1.2.3.4", now=5)
    assert t.delay("1.2.3.4", now=6) == 1.0
    for i in range(6):
        t.failed("1.2.3.4", now=7 + i)
    assert t.delay("1.2.3.4", now=13) == 8  # 1, 2, 4, 8, capped
    assert t.delay("5.6.7.8", now=13) == 0  # another source is never slowed
    assert t.delay("1.2.3.4", now=200) == 0  # failures older than the window are forgotten


def test_throttle_forgets_idle_sources_so_memory_stays_bounded():
    t = auth.Throttle(window=60, base=1.0, max_delay=8, max_sources=100)
    for i in range(1000):
        t.failed(f"session:{i}", now=i / 100)  # all within one window: the cap applies
    assert len(t) == 100
    t.failed("late", now=1000.0)  # every other source has been idle for a window
    assert len(t) == 1


@pytest.mark.parametrize(
    ("ip", "headers", "trusted", "source"),
    [
        ("203.0.113.9", {}, (), "203.0.113.9"),
        # A remote peer's own X-Forwarded-For is not believed: anyone can send one.
        ("203.0.113.9", {"X-Forwarded-For": "198.51.100.1"}, (), "203.0.113.9"),
        # Loopback (ip None) is a proxy on this host: its rightmost entry is the client.
        (None, {"X-Forwarded-For": "6.6.6.6, 198.51.100.1"}, (), "198.51.100.1"),
        ("10.0.0.2", {"X-Forwarded-For": "198.51.100.7"}, ("10.0.0.2",), "198.51.100.7"),
        (None, {}, (), "session:abc"),
        (None, {"X-Forwarded-For": "not an address"}, (), "session:abc"),
    ],
)
def test_the_source_of_an_attempt(ip, headers, trusted, source):
    assert auth.client_source(ip, headers, "session:abc", trusted) == source


def test_misconfigured_hash_fails_closed():
    at = AppTest.from_file(GATED, default_timeout=30)
    at.secrets["rageval"] = {"password_hash": "not-a-hash"}
    at = sign_in(at.run(), "anything")
    assert "misconfigured" in page_text(at)
    assert not shows_data(at)


# ---------------------------------------------------------------------------- OIDC

OIDC = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "test-cookie-secret",
    "client_id": "rageval-test",
    "client_secret": "test-client-secret",
    "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration",
}


def oidc_app(user: dict, **allow) -> AppTest:
    at = AppTest.from_file(GATED, default_timeout=30)
    at.secrets["auth"] = OIDC
    at.secrets["rageval"] = allow
    at.user = user
    return at.run()


def test_oidc_logged_out_sees_sign_in_button_only():
    at = oidc_app({"is_logged_in": False}, allowed_emails=["ann@example.com"])
    assert not at.exception
    assert [b.label for b in at.button] == ["Sign in"]
    assert not shows_data(at)


def test_oidc_named_providers_get_one_button_each():
    at = AppTest.from_file(GATED, default_timeout=30)
    at.secrets["auth"] = {
        "redirect_uri": OIDC["redirect_uri"],
        "cookie_secret": "x",
        "google": {"client_id": "a"},
        "microsoft": {"client_id": "b"},
    }
    at.user = {"is_logged_in": False}
    at.run()
    assert sorted(b.label for b in at.button) == ["Sign in with google", "Sign in with microsoft"]


@pytest.mark.parametrize(
    "email, allow, allowed",
    [
        ("ann@example.com", {"allowed_emails": ["Ann@Example.com"]}, True),
        ("bob@example.com", {"allowed_emails": ["ann@example.com"]}, False),
        ("bob@example.com", {"allowed_domains": ["example.com"]}, True),
        ("bob@evil-example.com", {"allowed_domains": ["example.com"]}, False),
        ("bob@example.com.evil.io", {"allowed_domains": ["example.com"]}, False),
        ("ann@example.com", {}, False),  # no allow-list: nobody
    ],
)
def test_oidc_allow_list(email, allow, allowed):
    at = oidc_app({"is_logged_in": True, "email": email}, **allow)
    assert not at.exception
    assert shows_data(at) is allowed
    if not allowed:
        assert "Not allowed" in page_text(at)


def test_oidc_unverified_email_is_refused():
    user = {"is_logged_in": True, "email": "ann@example.com", "email_verified": False}
    at = oidc_app(user, allowed_emails=["ann@example.com"])
    assert not shows_data(at)


def test_oidc_allow_list_from_environment(monkeypatch):
    monkeypatch.setenv("RAGEVAL_ALLOWED_EMAILS", "ann@example.com, cy@example.org")
    at = oidc_app({"is_logged_in": True, "email": "cy@example.org"})
    assert shows_data(at)


def test_oidc_secrets_never_rendered():
    at = oidc_app(
        {"is_logged_in": True, "email": "ann@example.com"}, allowed_emails=["ann@example.com"]
    )
    text = page_text(at) + "".join(str(c.value) for c in at.caption)
    assert OIDC["client_secret"] not in text and OIDC["cookie_secret"] not in text


# ---------------------------------------------------------------------------- no sign-in


@pytest.mark.parametrize(
    "address, warned", [(None, True), ("0.0.0.0", True), ("127.0.0.1", False), ("::1", False)]
)
def test_public_warning_unless_loopback(address, warned):
    before = config.get_option("server.address")
    config.set_option("server.address", address)
    try:
        at = AppTest.from_file(GATED, default_timeout=30).run()
    finally:
        config.set_option("server.address", before)
    assert not at.exception
    assert ("dashboard is public" in page_text(at)) is warned
    assert shows_data(at)


# ---------------------------------------------------------------------------- the real app

ENTRY = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")


def all_text(at: AppTest) -> str:
    """Every string value the app sent, main area and sidebar."""
    out = []
    for kind in (
        "markdown",
        "title",
        "header",
        "subheader",
        "caption",
        "code",
        "text",
        "error",
        "warning",
        "info",
        "success",
    ):
        out += [str(e.value) for e in at.get(kind)]
    return "\n".join(out)


def test_real_dashboard_shows_nothing_before_sign_in(demo_results, monkeypatch):
    import streamlit as st

    from rageval_core.runs.layout import RESULTS_ENV

    monkeypatch.setenv(RESULTS_ENV, str(demo_results))
    monkeypatch.setenv("RAGEVAL_PASSWORD_HASH", HASH)
    st.cache_data.clear()
    st.cache_resource.clear()
    run_ids = [p.name for p in demo_results.iterdir() if not p.name.startswith(".")]
    at = AppTest.from_file(ENTRY, default_timeout=60)
    at.query_params["run"] = run_ids[0]
    at.run()
    assert not at.exception
    text = all_text(at)
    assert not at.dataframe and not at.get("plotly_chart")
    assert not any(r in text for r in run_ids), "a run id leaked before sign-in"
    assert str(demo_results) not in text, "the results location leaked before sign-in"
    at = sign_in(at, PASSWORD)
    assert not at.exception
    assert at.dataframe or at.get("plotly_chart")


# ---------------------------------------------------------------------------- deep links


def _gated_dashboard(demo_results, monkeypatch, **params) -> AppTest:
    import streamlit as st

    from rageval_core.runs.layout import RESULTS_ENV

    monkeypatch.setenv(RESULTS_ENV, str(demo_results))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(ENTRY, default_timeout=60)
    for k, v in params.items():
        at.query_params[k] = v
    return at


def _demo_question(demo_results) -> tuple[str, str]:
    import pyarrow.parquet as pq

    run = sorted(p.name for p in demo_results.iterdir() if not p.name.startswith("."))[-1]
    qid = pq.read_table(demo_results / run / "questions.parquet").column("question_id")[3]
    return run, qid.as_py()


def test_a_deep_link_opens_its_view_after_the_password(demo_results, monkeypatch):
    monkeypatch.setenv("RAGEVAL_PASSWORD_HASH", HASH)
    run, qid = _demo_question(demo_results)
    at = _gated_dashboard(demo_results, monkeypatch, run=run, question=qid).run()
    at.switch_page("app_pages/question.py").run()  # the browser asked for /question?run=…
    assert not at.exception and [t.value for t in at.title] == ["Sign in"]
    at = sign_in(at, PASSWORD)
    assert not at.exception
    assert [t.value for t in at.title] == ["Question"]
    assert at.query_params["run"] == run and at.query_params["question"] == qid
    assert qid in all_text(at)


def test_a_deep_link_opens_its_view_after_oidc_sign_in(demo_results, monkeypatch):
    run, qid = _demo_question(demo_results)
    at = _gated_dashboard(demo_results, monkeypatch, run=run, question=qid)
    at.secrets["auth"] = OIDC
    at.secrets["rageval"] = {"allowed_emails": ["ann@example.com"]}
    at.user = {"is_logged_in": False}
    at.run()
    at.switch_page("app_pages/question.py").run()
    assert [b.label for b in at.button] == ["Sign in"]
    at.user = {"is_logged_in": True, "email": "ann@example.com"}
    at.run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Question"]
    assert at.query_params["run"] == run and at.query_params["question"] == qid
