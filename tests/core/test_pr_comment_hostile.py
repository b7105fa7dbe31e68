"""`rageval comment` against a hostile or broken API (issue 23), on 127.0.0.1: a redirect to
another origin gets no token, an API that never stops paging is left after `MAX_PAGES`, a
marked comment without an id and a reply nested past the limit are one bounded error."""

from __future__ import annotations

import json

import pytest

from rageval_core import pr_comment
from rageval_core.cli import main
from rageval_core.pr_comment import MARKER
from tests.core.github_api import Api, Reply

TOKEN = "ghs_HOSTILEtoken0123456789abcdefABCD"


def _json(value, status: int = 200) -> Reply:
    return status, {"Content-Type": "application/json"}, json.dumps(value).encode()


@pytest.fixture
def comment(monkeypatch, tmp_path):
    """Run `rageval comment` against `api`; returns (exit code, stderr)."""
    table = tmp_path / "check.md"
    table.write_text("### rageval check\n")

    def run(api: Api, capsys) -> tuple[int, str]:
        for k, v in {
            "GITHUB_API_URL": api.url,
            "GITHUB_REPOSITORY": "o/r",
            "GITHUB_TOKEN": TOKEN,
        }.items():
            monkeypatch.setenv(k, v)
        code = main(["comment", str(table), "--pr", "7"])
        return code, capsys.readouterr().err

    return run


def test_a_redirect_to_another_origin_carries_no_token(comment, capsys):
    elsewhere = Api(lambda m, p: _json([]))
    here = Api(
        lambda m, p: (
            (307, {"Location": f"{elsewhere.url}{p}"}, b"") if m == "GET" else _json({"id": 5}, 201)
        )
    )
    try:
        code, err = comment(here, capsys)
    finally:
        here.close()
        elsewhere.close()
    assert code == 0, err
    assert elsewhere.calls and all("Authorization" not in h for _, _, h in elsewhere.calls)
    assert all(h.get("Authorization") == f"Bearer {TOKEN}" for _, _, h in here.calls)


def test_a_redirect_within_the_origin_keeps_the_token(comment, capsys):
    def answer(m, p):
        if p.startswith("/old/"):
            return _json([])
        if m == "GET":
            return 301, {"Location": f"/old{p}"}, b""
        return _json({"id": 5}, 201)

    api = Api(answer)
    try:
        code, err = comment(api, capsys)
    finally:
        api.close()
    assert code == 0, err
    moved = [h for _, p, h in api.calls if p.startswith("/old/")]
    assert moved and all(h.get("Authorization") == f"Bearer {TOKEN}" for h in moved)


def test_an_api_that_never_stops_paging_is_left_after_max_pages(comment, capsys):
    full = [{"id": i, "body": "me too"} for i in range(pr_comment.PAGE)]
    api = Api(lambda m, p: _json(full))
    try:
        code, err = comment(api, capsys)
    finally:
        api.close()
    assert code == 1 and f"more than {pr_comment.MAX_PAGES} pages" in err
    assert len(api.calls) == pr_comment.MAX_PAGES
    assert TOKEN not in err


@pytest.mark.parametrize(
    "listing",
    [
        [{"body": f"{MARKER}\nold"}],
        [{"id": "12", "body": f"{MARKER}\nold"}],
        [{"id": True, "body": f"{MARKER}\nold"}],
    ],
)
def test_a_marked_comment_without_an_id_is_one_error(comment, capsys, listing):
    api = Api(lambda m, p: _json(listing))
    try:
        code, err = comment(api, capsys)
    finally:
        api.close()
    assert code == 1 and "a marked comment has no comment id" in err and "Traceback" not in err
    assert [m for m, _, _ in api.calls] == ["GET"]


@pytest.mark.parametrize(
    "body", [b"[" * 100_000 + b"]" * 100_000, b'[{"id": ' + b"9" * 5000 + b"}]", b"\xff"]
)
def test_a_hostile_reply_is_one_bounded_error(comment, capsys, body):
    api = Api(lambda m, p: (200, {}, body))
    try:
        code, err = comment(api, capsys)
    finally:
        api.close()
    assert code == 1 and err.count("\n") == 1 and len(err) < 700 and "Traceback" not in err


def test_a_posted_comment_without_an_id_is_one_error(comment, capsys):
    api = Api(lambda m, p: _json([]) if m == "GET" else _json({"url": "x"}, 201))
    try:
        code, err = comment(api, capsys)
    finally:
        api.close()
    assert code == 1 and "the posted comment has no comment id" in err


def test_a_hostile_event_file_is_an_argument_error(monkeypatch, tmp_path, capsys):
    event = tmp_path / "event.json"
    event.write_text('{"pull_request": ' * 5000 + "1" + "}" * 5000)
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    (tmp_path / "t.md").write_text("x")
    assert main(["comment", str(tmp_path / "t.md")]) == 2
    assert "nested deeper than 64" in capsys.readouterr().err


def test_an_api_dripping_its_headers_is_left_at_the_deadline(comment, capsys, monkeypatch):
    """urllib's timeout is per read: headers a byte every 0.2 s never tripped it (issue 35).
    Bounded by a thread join, so the old code fails in seconds instead of hanging."""
    import threading
    import time

    from tests.core.judges.chat_server import DripServer

    monkeypatch.setattr(pr_comment, "API_TIMEOUT_S", 1.0)
    box: dict = {}
    with DripServer(every_s=0.2) as srv:

        class _Url:
            url = f"http://127.0.0.1:{srv.port}"

        def call():
            start = time.monotonic()
            box["result"] = comment(_Url, capsys)
            box["took"] = time.monotonic() - start

        t = threading.Thread(target=call, daemon=True)
        t.start()
        t.join(10)
        assert not t.is_alive(), "the comment call has no total deadline"
    code, err = box["result"]
    assert code == 1
    assert "no answer within 1 s" in err
    assert box["took"] < 3
