"""A loopback HTTP server that answers every request from a function: the GitHub API as a
hostile or damaged peer for `rageval comment` (tests/core/test_pr_comment_hostile.py and the
fuzz suite)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Reply = tuple[int, dict[str, str], bytes]


class Api:
    """Answers every request with `answer(method, path)`; records (method, path, headers)."""

    def __init__(self, answer: Callable[[str, str], Reply]):
        self.calls: list[tuple[str, str, dict[str, str]]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                """Quiet."""

            def _handle(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                api.calls.append((self.command, self.path, dict(self.headers)))
                status, headers, body = answer(self.command, self.path)
                self.send_response(status)
                for k, v in {"Content-Length": str(len(body)), **headers}.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
