"""Redaction: values under secret-looking keys, and the values of named env variables."""

from __future__ import annotations

import base64
import time

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rageval_core.redact import MASK, Redactor, env_names, is_secret_key, secret_values


def test_secret_keys():
    for key in (
        "api_key",
        "API_KEY",
        "token",
        "auth_token",
        "client_secret",
        "password",
        "aws_credentials",
    ):
        assert is_secret_key(key)
    for key in ("top_k", "model", "api_key_env", "name"):
        assert not is_secret_key(key)


def test_value_masks_by_key_but_keeps_numbers_and_env_names():
    r = Redactor()
    config = {
        "judge": {"api_key": "sk-1", "api_key_env": "OPENAI_API_KEY", "headers": {"token": ["a"]}},
        "prices": {"input_per_1k_tokens": 0.1},
        "max_tokens": 512,
        "nested": [{"password": {"x": 1}}],
    }
    assert r.value(config) == {
        "judge": {"api_key": MASK, "api_key_env": "OPENAI_API_KEY", "headers": {"token": MASK}},
        "prices": {"input_per_1k_tokens": 0.1},
        "max_tokens": 512,
        "nested": [{"password": MASK}],
    }


def test_env_values_are_scrubbed_everywhere():
    r = Redactor.for_env(["MY_KEY", "UNSET"], {"MY_KEY": "s3cr3t-value", "OTHER": "x"})
    assert r.text("401: bad key s3cr3t-value!") == f"401: bad key {MASK}!"
    row = {"error": "s3cr3t-value", "claims": [{"text": "uses s3cr3t-value"}], "input_tokens": 3}
    assert r.row(row) == {"error": MASK, "claims": [{"text": f"uses {MASK}"}], "input_tokens": 3}


def test_longest_secret_first_and_empty_values_ignored():
    r = Redactor(["abcdefgh", "abcdefghijkl", "", "  "])
    assert r.text("xabcdefghijklx abcdefgh") == f"x{MASK}x {MASK}"
    assert Redactor(["", None or ""]).text("anything") == "anything"


def test_env_names_found_anywhere():
    assert env_names({"judge": {"api_key_env": "A"}, "params": {"x": [{"token_env": "B"}]}}) == [
        "A",
        "B",
    ]


def test_secret_values_are_the_strings_under_secret_keys():
    config = {
        "params": {"api_key": "sk-12345", "top_k": 5, "auth": {"token": ["t1-long-value", 2]}},
        "judge": {"api_key_env": "NAME"},
        "model": "m",
        "tokenizer": "word",  # too short to be a credential: not scrubbed from every answer
    }
    assert secret_values(config) == ["sk-12345", "t1-long-value"]
    redactor = Redactor.for_env([], {}, extra=secret_values(config))
    assert redactor.text("bad sk-12345, one word") == f"bad {MASK}, one word"


# ---------------------------------------------------------------------------- secret shapes

S = "sk-live-9fQ2xLr7Tb1Zk3Pw"
BASIC = base64.b64encode(b"deploy:" + S.encode()).decode()
SHAPES = [
    f"Authorization: Bearer {S}",
    f"{{'Authorization': 'Bearer {S}', 'Accept': 'json'}}",
    f'{{"authorization": "bearer {S}"}}',
    f"Authorization: Basic {BASIC}",
    f"Authorization: Token {S}",
    f"postgres://app:{S}@db.internal:5432/prod",
    f"connect to https://{S}@github.com/org/repo.git failed",
    f"GET https://api.example.com/v1/items?api_key={S}&page=2",
    f"https://api.example.com/v1/items?page=2&token={S}",
    f"https://h.example.com/x?access_token={S}#frag",
    f"https://bucket.s3.amazonaws.com/o?X-Amz-Credential={S}&X-Amz-Signature={S}",
    f"https://acct.blob.core.windows.net/c?sv=2024&sig={S}",
    f"cookie: session={S}; theme=dark",
    f"Set-Cookie: sid={S}; Path=/; HttpOnly",
    f"{{'Cookie': 'sid={S}'}}",
    f"x-api-key: {S}",
    f'"X-Api-Key": "{S}"',
    f"api_key={S}",
    f"invalid client_secret: {S}",
    f"password={S}",
]


@pytest.mark.parametrize("text", SHAPES)
def test_secret_shapes_are_masked_in_any_string(text):
    out = Redactor().text(text)
    assert S not in out and BASIC not in out and MASK in out


@pytest.mark.parametrize(
    "key", ["Authorization", "cookie", "Set-Cookie", "x-api-key", "X-Auth-Token", "oauth", "sig"]
)
def test_header_keys_are_secret_keys(key):
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["author", "authority", "model", "top_k", "api_key_env"])
def test_ordinary_keys_are_not(key):
    assert not is_secret_key(key)


def test_headers_in_config_are_masked_by_key():
    config = {"headers": {"Authorization": f"Bearer {S}", "Cookie": f"sid={S}", "Accept": "x"}}
    assert Redactor().value(config) == {
        "headers": {"Authorization": MASK, "Cookie": MASK, "Accept": "x"}
    }


def test_a_token_inside_a_secret_value_is_scrubbed_on_its_own_too():
    r = Redactor(secret_values({"headers": {"Authorization": f"Bearer {S}"}}))
    assert r.text(f"401: key {S} revoked") == f"401: key {MASK} revoked"


ORDINARY = [
    "A token is the smallest unit of text a model reads; the token limit is 4096.",
    "Set max_tokens=512 and temperature=0.2 for short answers.",
    "The bearer of a bill of lading owns the goods.",
    "Basic research comes first; basic idea: keep it simple.",
    "See https://docs.example.com/guide?page=2&section=tokens#auth for details.",
    "Email ops@example.com or visit http://example.com/a@b (not credentials).",
    "Authorization: the process of granting access, after authentication.",
    "A cookie: a small file a site stores; the Set-Cookie header sets one.",
    "The author of the handbook, and the authority on cold rooms.",
    "input_per_1k_tokens: 0.000015 and output tokens 1200",
    "Token budget: 8k. Keys: use the left key, then the right key.",
    "Cold rooms hold 2-8 °C; pallets ship in 48h (ref. SOP-2024-11).",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_survives(text):
    assert Redactor().text(text) == text


def test_rows_are_scrubbed_by_shape_even_without_known_secrets():
    row = {"error": f"OperationalError: postgres://app:{S}@db/prod", "input_tokens": 3}
    assert S not in str(Redactor().row(row)) and Redactor().row(row)["input_tokens"] == 3


def test_long_hostile_strings_are_scrubbed_in_linear_time():
    start = time.monotonic()
    for text in ("a://" + "x" * 200_000, "?" + "a" * 200_000, "bearer " * 50_000, "k=" * 100_000):
        Redactor().text(text)
    assert time.monotonic() - start < 5


SECRETS = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"),
    min_size=12,
    max_size=40,
).filter(lambda s: any(c.isdigit() for c in s) and any(c.isalpha() for c in s))
TEMPLATES = [t.replace(S, "{s}").replace(BASIC, "{b}") for t in SHAPES]


@settings(max_examples=200, deadline=None)
@given(secret=SECRETS, template=st.sampled_from(TEMPLATES), before=st.text(max_size=20))
def test_any_secret_in_any_shape_is_masked(secret, template, before):
    assume(secret not in before)
    basic = base64.b64encode(f"u:{secret}".encode()).decode()
    text = before + " " + template.replace("{s}", secret).replace("{b}", basic)
    out = Redactor().text(text)
    assert secret not in out and basic not in out
