"""Crafted websocket messages against a real `rageval dashboard --read-only` (issue 23).

A read-only dashboard draws no labelling form, but anyone who can open its page can also
speak its websocket protocol and send the widget states of a form it never drew: the
reviewer's name, a claim's verdict and the save button, as pressed. The widget ids are
the ones a writable dashboard over the same runs draws (they are derived from the widget
keys, the same on every server). The same messages that save a label on a writable
server (the control: without it this test could not fail) must write nothing on a
read-only one, and neither must malformed messages: unknown ids, wrong value types,
huge strings, another page's script hash, garbage bytes. After each, the server is
healthy and draws the Question page for a normal session.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.exceptions import ConnectionClosed

from rageval_core.links import escape_word
from tests.dashboard.conftest import LATEST
from tests.e2e.conftest import Server, _serve
from tests.security.stream import Render, Stream, rerun_message, state

BUNDLED = Path(__file__).resolve().parents[2] / "results"
QUERY = f"run={LATEST}&question=q001"  # claim 1 of q001 is judged supported
REVIEWER = "mallory"
NOTE = "saved by a crafted message"
LIMIT = 25_000_000  # Streamlit's server.maxWidgetStateSize (25 MB): a bigger frame is refused
READ_ONLY_NOTE = escape_word("started read-only")  # as the message box is sent


@dataclass(frozen=True)
class FormIds:
    """The widget ids of the reviewer form and of claim 1's label form on the Question page."""

    name: str
    start: str
    choice: str
    note: str
    save: str
    pages: dict[str, str]  # url path -> page_script_hash


def _serve_labels(tmp_path_factory, name: str, *args: str) -> Iterator[tuple[Server, Path]]:
    folder = tmp_path_factory.mktemp(name)
    shutil.copytree(BUNDLED, folder / "results", ignore=shutil.ignore_patterns(".rageval"))
    labels = folder / "labels"
    for server in _serve(
        folder / "results", folder / "dashboard.log", args=["--labels", str(labels), *args]
    ):
        yield server, labels


@pytest.fixture(scope="module")
def writable(tmp_path_factory) -> Iterator[tuple[Server, Path]]:
    yield from _serve_labels(tmp_path_factory, "ws-writable")


@pytest.fixture(scope="module")
def read_only(tmp_path_factory) -> Iterator[tuple[Server, Path]]:
    yield from _serve_labels(tmp_path_factory, "ws-read-only", "--read-only")


def label_files(labels: Path) -> list[Path]:
    return sorted(p for p in labels.rglob("*") if p.is_file()) if labels.exists() else []


def clean(render: Render) -> Render:
    assert render.exceptions == []
    assert render.finished == ForwardMsg.FINISHED_SUCCESSFULLY
    return render


@pytest.fixture(scope="module")
def ids(writable) -> FormIds:
    """Learnt as a browser would: a normal render, then the reviewer's name (no label yet)."""
    server, labels = writable
    with Stream(server.url) as s:
        first = clean(s.render(rerun_message(QUERY)))
        name = first.widget("-label_reviewer_name")
        start = first.widget("-FormSubmitter:label_reviewer-Start labelling")
        named = clean(
            s.render(
                rerun_message(
                    QUERY, [state(name, string_value=REVIEWER), state(start, trigger_value=True)]
                )
            )
        )
    assert label_files(labels) == []
    return FormIds(
        name,
        start,
        named.widget("_claim_1_choice"),
        named.widget("_claim_1_note"),
        named.widget("_claim_1-Save claim label"),
        first.pages,
    )


def reviewer(f: FormIds, name: str = REVIEWER) -> list:
    return [state(f.name, string_value=name), state(f.start, trigger_value=True)]


def verdict(f: FormIds, choice: str = "contradicted", note: str = NOTE) -> list:
    return [
        state(f.choice, string_value=choice),
        state(f.note, string_value=note),
        state(f.save, trigger_value=True),
    ]


def crafted_save(f: FormIds) -> list[bytes]:
    """What a browser sends to name its reviewer, then save claim 1 as contradicted."""
    return [rerun_message(QUERY, reviewer(f)), rerun_message(QUERY, verdict(f))]


def test_the_crafted_save_writes_a_label_on_a_writable_dashboard(writable, ids):
    server, labels = writable
    with Stream(server.url) as s:
        for frame in crafted_save(ids):
            clean(s.render(frame))
    [saved] = label_files(labels)
    [line] = saved.read_text().splitlines()
    label = json.loads(line)
    assert (label["reviewer"], label["verdict"], label["note"]) == (REVIEWER, "contradicted", NOTE)
    assert (label["question_id"], label["run_id"]) == ("q001", LATEST)


def _other_ids(f: FormIds) -> list:
    """Element ids no page drew: another hash, a 10,000-character one."""
    forged = "$$ID-" + "0" * 32 + f.save[f.save.index("-", 5) :]
    return [
        state(forged, trigger_value=True),
        state("$$ID-" + "f" * 10_000, trigger_value=True),
    ]


def _wrong_types(f: FormIds) -> list:
    return [
        state(f.name, bytes_value=b"\xff\x00"),
        state(f.start, json_value="{"),
        state(f.choice, int_value=7),
        state(f.note, double_value=1.5),
        state(f.save, string_value="pressed"),
    ]


# Each case: the frames one session sends; each frame is a rerun the server finishes.
RERUNS: dict[str, Callable[[FormIds], list[bytes]]] = {
    "the save a writable dashboard takes": crafted_save,
    "the name and the save in one message": lambda f: [
        rerun_message(QUERY, reviewer(f) + verdict(f))
    ],
    "unknown widget ids": lambda f: [rerun_message(QUERY, _other_ids(f) + verdict(f))],
    "wrong value types": lambda f: [rerun_message(QUERY, _wrong_types(f))],
    "huge strings": lambda f: [
        rerun_message(QUERY, reviewer(f, "m" * 5_000_000)),
        rerun_message(QUERY, verdict(f, "c" * 1_000_000, "n" * 5_000_000)),
    ],
    "other pages' script hashes": lambda f: [
        rerun_message(QUERY, reviewer(f) + verdict(f), page=p, page_script_hash=f.pages[p])
        for p in ("review", "judge")
    ],
    "a page that does not exist": lambda f: [
        rerun_message(QUERY, verdict(f), page="../../etc/passwd", page_script_hash="0" * 32)
    ],
}


def _shutdown() -> bytes:
    msg = BackMsg()
    msg.debug_shutdown_runtime = True  # honoured only in Streamlit's development mode
    return msg.SerializeToString()


# Each case: one frame the server runs nothing for; the same session is served after it.
SILENT: dict[str, Callable[[FormIds], bytes]] = {
    "a fragment that does not exist": lambda f: rerun_message(
        QUERY, reviewer(f) + verdict(f), fragment_id="no-such-fragment"
    ),
    "a request to shut the runtime down": lambda f: _shutdown(),
}


# Each case: one frame the server answers by closing the connection (close code).
CLOSES: dict[str, Callable[[FormIds], tuple[bytes | str, int | None]]] = {
    "garbage bytes": lambda f: (b"\xff\xff\xff\xff garbage", 1002),
    "a cut-off rerun": lambda f: (rerun_message(QUERY, verdict(f))[:-7], 1002),
    "a text frame": lambda f: ('{"rerun_script": {}}', None),
    "a frame over the size limit": lambda f: (
        rerun_message(QUERY, verdict(f, note="n" * (LIMIT + 1))),
        1009,
    ),
}


def still_serving(server: Server, labels: Path) -> None:
    """Healthy, no label written, and a fresh session draws the page without a form."""
    with urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=10) as r:
        assert r.status == 200
    with Stream(server.url) as s:
        page = clean(s.render(rerun_message(QUERY)))
    assert not [w for w in page.widgets.values() if w.form], "a form was drawn"
    assert any(READ_ONLY_NOTE in t for t in page.texts)
    assert label_files(labels) == []


@pytest.mark.parametrize("case", RERUNS)
def test_a_read_only_dashboard_saves_nothing_a_rerun_asks_for(read_only, ids, case):
    server, labels = read_only
    with Stream(server.url) as s:
        for frame in RERUNS[case](ids):
            clean(s.render(frame))
            assert label_files(labels) == []
    still_serving(server, labels)


@pytest.mark.parametrize("case", SILENT)
def test_a_read_only_dashboard_serves_the_session_on_after_a_frame_it_ignores(read_only, ids, case):
    server, labels = read_only
    with Stream(server.url) as s:
        s.send(SILENT[case](ids))
        clean(s.render(rerun_message(QUERY)))
    still_serving(server, labels)


@pytest.mark.parametrize("bare", ["", "label_reviewer_name"])
def test_a_bare_widget_id_fails_only_the_session_that_sent_it(read_only, ids, bare):
    """Streamlit itself raises KeyError on a widget state whose id is not an element id
    (empty, or a bare user key: its session state has no such key when the first keyed
    widget reads it): that run ends in an exception box for its sender, with the type
    alone (`rageval dashboard` sets `client.showErrorDetails` to `type`: no traceback, no
    server file path), nothing is written, and the same session and every other one are
    served on."""
    server, labels = read_only
    with Stream(server.url) as s:
        broken = s.render(rerun_message(QUERY, [state(bare, string_value="x"), *verdict(ids)]))
        assert [e.split(":")[0] for e in broken.exceptions] == ["KeyError"]
        assert broken.traces == [""]
        assert not any(".py" in e for e in broken.exceptions)
        assert label_files(labels) == []
        clean(s.render(rerun_message(QUERY)))
    still_serving(server, labels)


@pytest.mark.parametrize("case", CLOSES)
def test_a_read_only_dashboard_closes_on_a_broken_frame_and_serves_on(read_only, ids, case):
    server, labels = read_only
    frame, code = CLOSES[case](ids)
    with Stream(server.url) as s:
        clean(s.render(rerun_message(QUERY)))  # a live session first
        s.send(frame)
        with pytest.raises(ConnectionClosed) as closed:
            while True:  # what the last render left (its page profile), then the close
                s.ws.recv(timeout=60)
    if code is not None:
        assert closed.value.rcvd is not None and closed.value.rcvd.code == code
    still_serving(server, labels)
