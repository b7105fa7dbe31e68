"""Redaction: values under secret-looking keys, and the values of named env variables."""

from __future__ import annotations

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
    r = Redactor(["abc", "abcdef", "", "  "])
    assert r.text("xabcdefx abc") == f"x{MASK}x {MASK}"
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
