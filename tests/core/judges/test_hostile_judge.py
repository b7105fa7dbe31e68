"""A hostile or broken judge endpoint (issue 23), against real servers on 127.0.0.1: a
reply dripped a byte at a time ends at the call's total deadline, a huge reply is cut off,
impossible usage and claims the answer never made are judge errors, a redirect never
carries the key anywhere. Each ends as one bounded judge error for the question."""

from __future__ import annotations

import json
import threading
import time
import tracemalloc
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rageval_core.judges import make_judge, openai

KEY_ENV = "RAGEVAL_TEST_HOSTILE_KEY"
SECRET = "sk-test-HOSTILE-3c9e7a1f"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


class RawServer:
    """A server whose handler `reply(handler)` writes whatever it likes; records the
    headers of every request it got."""

    def __init__(self, reply: Callable[[BaseHTTPRequestHandler], None]):
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.headers.append(dict(self.headers))
                try:
                    reply(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args) -> None:
                """Quiet."""

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _judge(base_url: str, **kw):
    return make_judge(
        {
            "kind": "openai",
            "base_url": base_url,
            "model": "m",
            "api_key_env": KEY_ENV,
            "max_retries": 0,
            "cache": False,
            "metrics": ["faithfulness"],  # what these tests attack: claims and the transport
            "prices": {"input_per_1k_tokens": 3.0, "output_per_1k_tokens": 3.0},
            **kw,
        }
    )


def _envelope(content: dict | str, usage: dict | None = None) -> bytes:
    text = content if isinstance(content, str) else json.dumps(content)
    body = {"choices": [{"message": {"content": text}}]}
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


def _send(handler, body: bytes, status: int = 200, headers: dict | None = None) -> None:
    handler.send_response(status)
    handler.send_header("Content-Length", str(len(body)))
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(body)


def _claim(text: str, verdict: str = "supported") -> dict:
    return {"text": text, "verdict": verdict, "evidence_chunk_id": None, "reason": "r"}


def test_a_reply_dripped_a_byte_at_a_time_ends_at_the_deadline(sample_input):
    def drip(h):
        body = _envelope({"claims": [], "refused": True})
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        for b in body:
            h.wfile.write(bytes([b]))
            h.wfile.flush()
            time.sleep(0.05)  # each read comes well within httpx's per-read timeout

    srv = RawServer(drip)
    try:
        start = time.monotonic()
        got = _judge(srv.base_url, timeout_s=0.6).judge(sample_input)
        took = time.monotonic() - start
    finally:
        srv.close()
    assert got.error and "timed out after 0.6 s" in got.error
    assert took < 2.0  # the body alone would take several seconds


def test_a_huge_reply_is_cut_off_not_held(sample_input, monkeypatch):
    monkeypatch.setattr(openai, "MAX_REPLY_BYTES", 1 << 20)

    def huge(h):
        h.send_response(200)
        h.send_header("Content-Length", str(200 << 20))
        h.end_headers()
        h.wfile.write(b'{"choices": [{"message": {"content": "')
        for _ in range(200):
            h.wfile.write(b"x" * (1 << 20))

    srv = RawServer(huge)
    tracemalloc.start()
    try:
        got = _judge(srv.base_url, timeout_s=10).judge(sample_input)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        srv.close()
    assert got.error and "longer than 1048576 bytes" in got.error
    assert peak < 16 << 20  # never the 200 MB sent


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -1_000_000_000, "completion_tokens": 20},
        {"prompt_tokens": -1e9},
        {"prompt_tokens": 10, "completion_tokens": 10**12},
        {"prompt_tokens": "100"},
        {"prompt_tokens": True},
    ],
)
def test_impossible_usage_is_a_judge_error_never_a_negative_cost(sample_input, usage):
    reply = {"claims": [_claim("The museum opened in 1998.")], "refused": False}
    srv = RawServer(lambda h: _send(h, _envelope(reply, usage)))
    try:
        got = _judge(srv.base_url).judge(sample_input)
    finally:
        srv.close()
    assert got.error and "impossible usage" in got.error
    assert got.cost_usd >= 0


def test_a_claim_the_answer_never_made_is_a_judge_error(sample_input):
    reply = {"claims": [_claim("The moon is made of cheese.")], "refused": False}
    srv = RawServer(lambda h: _send(h, _envelope(reply, {"prompt_tokens": 1})))
    try:
        got = _judge(srv.base_url).judge(sample_input)
    finally:
        srv.close()
    assert got.claims == () and "is not in the answer" in got.error
    assert len(srv.headers) == 2  # the reply, then one repair request


def test_claims_restating_the_answer_pass(sample_input):
    reply = {
        "claims": [_claim("The museum opened in 1998"), _claim("it has 4 floors", "contradicted")],
        "refused": False,
    }
    srv = RawServer(lambda h: _send(h, _envelope(reply, {"prompt_tokens": 1})))
    try:
        got = _judge(srv.base_url).judge(sample_input)
    finally:
        srv.close()
    assert got.error is None and [c.verdict for c in got.claims] == ["supported", "contradicted"]


@pytest.mark.parametrize(
    "content", ["[" * 100_000 + "]" * 100_000, '{"claims": [], "refused": ' + "1" * 5000 + "}"]
)
def test_a_hostile_reply_text_is_a_reply_error(sample_input, content):
    srv = RawServer(lambda h: _send(h, _envelope(content)))
    try:
        got = _judge(srv.base_url).judge(sample_input)
    finally:
        srv.close()
    assert got.error and "malformed judge reply" in got.error and len(got.error) < 700


def test_a_redirect_never_takes_the_key_elsewhere(sample_input):
    other = RawServer(lambda h: _send(h, _envelope({"claims": [], "refused": True})))
    target = other.base_url + "/chat/completions"
    srv = RawServer(lambda h: _send(h, b"", 307, {"Location": target}))
    try:
        got = _judge(srv.base_url).judge(sample_input)
    finally:
        srv.close()
        other.close()
    assert got.error and "HTTP 307" in got.error
    assert other.headers == []  # not followed at all
