"""A browser tab's websocket session with a real Streamlit server, for crafted messages.

The browser speaks protobuf over `/_stcore/stream`: it sends a `BackMsg` whose
`rerun_script` carries the query string, the page and every widget's state, and the
server answers with `ForwardMsg`s (navigation, deltas, `script_finished`). This client
does the same with the `websockets` package Streamlit itself depends on, so a test can
send exactly what a browser would, or anything a browser never would.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.sync.client import ClientConnection, connect

RENDER_S = 120  # a first render imports plotly and builds caches on a shared 2-core box
TEXT_ELEMENTS = ("markdown", "alert", "heading")


@dataclass(frozen=True)
class Widget:
    kind: str  # the element type: radio, text_input, button, ...
    form: str  # the form's id ("" outside a form)
    label: str


@dataclass
class Render:
    """What one rerun drew: widgets by id, text bodies, exceptions, and each page's hash."""

    finished: int = -1  # ForwardMsg.ScriptFinishedStatus of the last run
    widgets: dict[str, Widget] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    traces: list[str] = field(default_factory=list)  # each exception's stack trace, as sent
    pages: dict[str, str] = field(default_factory=dict)  # url path -> page_script_hash

    def widget(self, suffix: str) -> str:
        """The one widget id ending in `suffix` (a user key, or a form's submit button)."""
        [found] = [i for i in self.widgets if i.endswith(suffix)]
        return found

    def read(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "navigation":
            self.pages.update(
                {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
            )
        elif kind == "script_finished":
            self.finished = msg.script_finished
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            name = element.WhichOneof("type")
            body = getattr(element, name)
            if name == "exception":
                self.exceptions.append(f"{body.type}: {body.message}")
                self.traces.append("\n".join(body.stack_trace))
            elif name in TEXT_ELEMENTS:
                self.texts.append(body.body)
            if getattr(body, "id", ""):
                self.widgets[body.id] = Widget(
                    name, getattr(body, "form_id", ""), getattr(body, "label", "")
                )


def state(widget_id: str, **value: object) -> WidgetState:
    """One widget's state as the browser sends it: `state(id, string_value="x")`."""
    out = WidgetState(id=widget_id)
    for name, v in value.items():
        setattr(out, name, v)
    return out


def rerun_message(
    query: str,
    states: Iterable[WidgetState] = (),
    *,
    page: str = "question",
    page_script_hash: str = "",
    fragment_id: str = "",
) -> bytes:
    """The bytes a browser sends to rerun `page` with `query` and these widget states."""
    msg = BackMsg()
    client = msg.rerun_script
    client.query_string = query
    client.page_name = page
    client.page_script_hash = page_script_hash
    client.fragment_id = fragment_id
    client.widget_states.widgets.extend(states)
    return msg.SerializeToString()


class Stream:
    """One session on `url` (http://127.0.0.1:PORT), opened as a same-origin browser tab."""

    def __init__(self, url: str) -> None:
        self.url = url.replace("http://", "ws://", 1) + "/_stcore/stream"
        self.origin = url

    def __enter__(self) -> Stream:
        self._open = connect(
            self.url, subprotocols=["streamlit"], origin=self.origin, max_size=None, open_timeout=30
        )
        self.ws: ClientConnection = self._open.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._open.__exit__(*exc)

    def send(self, frame: bytes | str) -> None:
        self.ws.send(frame)

    def render(self, frame: bytes) -> Render:
        """Send one rerun and read until the run ends, and any run an `st.rerun` in it
        started: a run that ends early for a rerun is followed by the next one."""
        self.send(frame)
        out = Render()
        while out.finished in (-1, ForwardMsg.FINISHED_EARLY_FOR_RERUN):
            msg = ForwardMsg()
            msg.ParseFromString(self.ws.recv(timeout=RENDER_S))
            out.read(msg)
        return out
