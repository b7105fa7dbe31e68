"""`rageval comment`: one pull-request comment, posted then updated, against a real HTTP
server on 127.0.0.1 speaking the GitHub REST API's comment endpoints."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rageval_core.cli import main
from rageval_core.pr_comment import MARKER

TOKEN = "ghs_FAKEtoken0123456789abcdefABCDEF"


class FakeGitHub:
    """Issue comments of one repository, with pagination and token checks."""

    def __init__(self) -> None:
        self.comments: dict[int, list[dict]] = {}
        self.next_id = 1000
        self.calls: list[tuple[str, str]] = []
        self.refuse: int | None = None
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def _reply(self, code: int, value) -> None:
                body = json.dumps(value).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self) -> None:
                fake.calls.append((self.command, self.path))
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._reply(401, {"message": "Bad credentials"})
                if fake.refuse:
                    return self._reply(fake.refuse, {"message": "Resource not accessible"})
                n = int(self.headers.get("Content-Length") or 0)
                payload = json.loads(self.rfile.read(n)) if n else None
                if m := re.fullmatch(
                    r"/repos/o/r/issues/(\d+)/comments\?per_page=(\d+)&page=(\d+)", self.path
                ):
                    items = fake.comments.get(int(m[1]), [])
                    size, page = int(m[2]), int(m[3])
                    return self._reply(200, items[(page - 1) * size : page * size])
                if m := re.fullmatch(r"/repos/o/r/issues/(\d+)/comments", self.path):
                    fake.next_id += 1
                    c = {"id": fake.next_id, "body": payload["body"]}
                    fake.comments.setdefault(int(m[1]), []).append(c)
                    return self._reply(201, c)
                if m := re.fullmatch(r"/repos/o/r/issues/comments/(\d+)", self.path):
                    for items in fake.comments.values():
                        for c in items:
                            if c["id"] == int(m[1]):
                                c["body"] = payload["body"]
                                return self._reply(200, c)
                return self._reply(404, {"message": "Not Found"})

            do_GET = do_POST = do_PATCH = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def github(monkeypatch, tmp_path):
    fake = FakeGitHub()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": 7, "pull_request": {"number": 7}}))
    for k, v in {
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_TOKEN": TOKEN,
    }.items():
        monkeypatch.setenv(k, v)
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def test_posts_once_then_updates_the_same_comment(github, tmp_path, capsys):
    # 150 comments by people first: the rageval one is found on the second page
    github.comments[7] = [{"id": i, "body": f"looks good {i}"} for i in range(150)]
    table = tmp_path / "check.md"
    table.write_text("### rageval check: `pr-7`\n\n**passed**\n")
    assert main(["comment", str(table)]) == 0
    first = capsys.readouterr().out
    assert first.startswith("created comment ") and first.strip().endswith("on o/r#7")
    table.write_text("### rageval check: `pr-7-2`\n\n**failed**: 1 breach(es)\n")
    assert main(["comment", str(table)]) == 0
    assert capsys.readouterr().out.startswith("updated comment ")
    ours = [c for c in github.comments[7] if c["body"].startswith(MARKER)]
    assert len(ours) == 1 and "**failed**" in ours[0]["body"] and "pr-7-2" in ours[0]["body"]
    assert len(github.comments[7]) == 151  # nobody else's comment was touched
    assert ("PATCH", f"/repos/o/r/issues/comments/{ours[0]['id']}") in github.calls


def test_a_refused_token_is_one_line_without_the_token(github, tmp_path, capsys):
    github.refuse = 403
    table = tmp_path / "check.md"
    table.write_text("x")
    assert main(["comment", str(table), "--pr", "9"]) == 1
    out = capsys.readouterr()
    assert TOKEN not in out.out + out.err
    assert out.err.count("\n") == 1 and "HTTP 403" in out.err and "fork" in out.err


def test_without_a_pull_request_number_it_is_an_argument_error(github, monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_EVENT_PATH")
    assert main(["comment", "-"]) == 2
    assert "--pr N" in capsys.readouterr().err
    assert not github.calls
