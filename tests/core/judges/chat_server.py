"""A real, scripted chat-completions server on 127.0.0.1 for the HTTP judge's tests.

Each test hands it a script: a list of `Step`s (one per request, the last repeats) or a
function of (request number, Request). It records every request (path, headers, JSON
body) and the most requests it ever had in flight at once, so tests assert on what
actually went over the wire, not on a mocked client.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Step:
    """One scripted response. `content` is the assistant message: a dict is JSON-encoded,
    a str is sent verbatim (for malformed replies). `raw` replaces the whole body."""

    status: int = 200
    content: dict[str, Any] | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    usage: tuple[int, int] = (100, 20)
    raw: str | None = None
    model: str | None = None
    """The envelope's `model`, what the server says served the reply (None: not said)."""
    fingerprint: str | None = None
    """The envelope's `system_fingerprint` (None: not said)."""

    def body(self) -> bytes:
        if self.raw is not None:
            return self.raw.encode()
        if self.status != 200:
            return json.dumps({"error": {"message": f"scripted {self.status}"}}).encode()
        content = self.content if isinstance(self.content, str) else json.dumps(self.content)
        envelope = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": self.usage[0], "completion_tokens": self.usage[1]},
        }
        if self.model is not None:
            envelope["model"] = self.model
        if self.fingerprint is not None:
            envelope["system_fingerprint"] = self.fingerprint
        return json.dumps(envelope).encode()


@dataclass(frozen=True)
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


Script = list[Step] | Callable[[int, Request], Step]


def echoing(content: dict[str, Any]) -> Callable[[int, Request], Step]:
    """A script replying `content` with each claim's text set to the answer it was sent:
    a judge's claims must restate the answer (rageval_core/judges/grounding.py). The parts
    of the other metrics the request asks for and `content` leaves out are filled in
    (every chunk relevant, the answer fully relevant, the reference as one unattributed
    statement), so a test of claims need not script them."""

    def script(n: int, request: Request) -> Step:
        system, user = (m["content"] for m in request.body["messages"][:2])
        material = json.loads(user)
        answer = material["answer"] or "-"
        claims = [{**c, "text": answer[:200]} for c in content.get("claims", [])]
        reply = {**_defaults(system, material, content.get("refused", False)), **content}
        return Step(content={**reply, "claims": claims})

    return script


def _defaults(system: str, material: dict[str, Any], refused: bool) -> dict[str, Any]:
    parts: dict[str, Any] = {}
    if '"chunks":' in system:
        chunks = material.get("retrieved_chunks", [])
        parts["chunks"] = [{"id": c["id"], "relevant": True, "reason": "s"} for c in chunks]
    if '"answer_relevancy":' in system:
        parts["answer_relevancy"] = None if refused else {"score": 1.0, "reason": "s"}
    if '"statements":' in system:
        ref = material.get("reference_answer")
        parts["statements"] = [{"text": ref[:200], "attributed": False}] if ref else None
    return parts


class ChatServer:
    """Start with `with ChatServer(script) as srv:`; `srv.base_url` ends in /v1."""

    def __init__(self, script: Script):
        self.script = script
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw or b"{}")
                request = Request(self.path, dict(self.headers), body)
                with server._lock:
                    n = len(server.requests)
                    server.requests.append(request)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                step = server._step(n, request)
                if self.path != "/v1/chat/completions":
                    step = Step(status=404)
                time.sleep(step.delay_s)
                with server._lock:
                    server.in_flight -= 1
                payload = step.body()
                try:
                    self.send_response(step.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in step.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left, as scripted

            def log_message(self, *args: Any) -> None:
                """Quiet: test output is not the place for access logs."""

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def _step(self, n: int, request: Request) -> Step:
        if callable(self.script):
            return self.script(n, request)
        return self.script[min(n, len(self.script) - 1)]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self.requests)

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class DripServer:
    """A raw HTTP server on 127.0.0.1 that answers every connection by sending a status
    line and headers one byte every `every_s` seconds, for ever (until the client leaves
    or the server stops): a peer that keeps every read of a client short, so only a total
    deadline ends the call. `connections` counts the connections it has seen."""

    def __init__(self, every_s: float = 0.5):
        import socket

        self.every_s = every_s
        self.connections = 0
        self._stop = threading.Event()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.05)
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def port(self) -> int:
        return self._sock.getsockname()[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self.connections += 1
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: Any) -> None:
        head = b"HTTP/1.1 200 OK\r\n" + b"X-Drip: " + b"." * 1_000_000
        with conn:
            for i in range(len(head)):
                if self._stop.wait(self.every_s):
                    return
                try:
                    conn.sendall(head[i : i + 1])
                except OSError:
                    return  # the client gave up, as it should

    def __enter__(self) -> DripServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()
