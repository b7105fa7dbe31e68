"""The fuzz suite's deadlines (issue 35): peers that stall in any shape and pipelines that
hang on any set of questions end in bounded time, with the stall named where it happened.

Every wait here is itself bounded (a thread joined, a process killed), so a deadline that
goes missing fails in seconds instead of hanging the suite. `RAGEVAL_FUZZ_EXAMPLES=N`
runs N examples of each (the long profile, `bench/fuzz_long.py`)."""

from __future__ import annotations

import itertools
import socket
import subprocess
import threading
import time

import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rageval_core.judges import make_judge
from rageval_core.models import JudgeInput, RetrievedChunk
from tests.core.runner.conftest import Toy
from tests.fuzz.harness import fuzz_settings

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n"
BODY = b'{"choices": [{"message": {"content": "{\\"claims\\": ['


class StallServer:
    """A raw server on 127.0.0.1 that sends `prefix` of a reply (bytes of its status line,
    headers and a body cut short) one chunk of `step` bytes every `every_s` seconds, then
    holds the connection open without a word: every stalling shape a peer can take."""

    def __init__(self, prefix: bytes, step: int, every_s: float):
        self.prefix, self.step, self.every_s = prefix, step, every_s
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.05)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._stall, args=(conn,), daemon=True).start()

    def _stall(self, conn: socket.socket) -> None:
        with conn:
            for i in range(0, len(self.prefix), self.step):
                if self._stop.wait(self.every_s):
                    return
                try:
                    conn.sendall(self.prefix[i : i + self.step])
                except OSError:
                    return
            self._stop.wait()  # then nothing, for as long as the server lives

    def __enter__(self) -> StallServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._sock.close()


def bounded(fn, limit_s: float):
    box: dict = {}
    thread = threading.Thread(target=lambda: box.update(value=fn()), daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(limit_s)
    assert not thread.is_alive(), f"still running after {limit_s} s: a wait without a deadline"
    return box["value"], time.monotonic() - start


INPUT = JudgeInput(
    question="When did the museum open?",
    answer="The museum opened in 1998.",
    retrieved=(RetrievedChunk("museum#1", "The museum opened in 1998 in Lyon."),),
    reference_answer="1998",
)


@fuzz_settings(ci=6)
@given(
    cut=st.integers(0, len(HEAD) + len(BODY)),
    step=st.integers(1, 40),
    every_s=st.floats(0.0, 0.2),
    timeout_s=st.floats(0.3, 1.0),
    retries=st.integers(0, 1),
)
def test_a_judge_call_against_any_stall_ends_at_its_deadline(
    cut, step, every_s, timeout_s, retries
):
    """Silent after the connection, after part of the headers, after the headers, mid-body;
    dripping fast or slow: each attempt ends at `timeout_s`, the call is a judge error."""
    prefix = (HEAD + BODY)[:cut]
    with StallServer(prefix, step, every_s) as srv:
        judge = make_judge(
            {
                "kind": "openai",
                "base_url": srv.base_url,
                "model": "m",
                "timeout_s": timeout_s,
                "max_retries": retries,
                "backoff_base_s": 0.01,
                "cache": False,
            }
        )
        result, took = bounded(lambda: judge.judge(INPUT), limit_s=(retries + 1) * timeout_s + 10)
    assert result.error is not None
    assert took < (retries + 1) * (timeout_s + 0.5) + 1.0


RUNS = itertools.count()  # one run id per example: hypothesis may repeat an example


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Toy:
    return Toy(tmp_path_factory.mktemp("toy"))


@fuzz_settings(ci=2)
@given(
    hold_from=st.integers(26, 31),
    concurrency=st.sampled_from([1, 2, 4]),
    timeout_s=st.sampled_from([0.3, 0.6]),
)
def test_a_run_whose_pipeline_hangs_on_any_questions_ends_and_keeps_the_rest(
    toy, hold_from, concurrency, timeout_s
):
    """Questions q`hold_from`… hang for ever: each is its own QuestionTimeout, every other
    question is answered, and the run ends in bounded time."""
    hold = toy.root / "hold"
    hold.touch()
    run_id = f"hung-{next(RUNS)}"
    config = toy.config(params={"hold": str(hold), "hold_from": hold_from}, concurrency=concurrency)
    proc = toy.cli(
        "run", str(config), "--results", "results", "--run-id", run_id, "--no-progress",
        "--question-timeout", str(timeout_s),
    )  # fmt: skip
    try:
        _, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the run was still going after 90 s")
    assert proc.returncode == 0, err
    got = {
        r["question_id"]: r
        for r in pq.read_table(toy.results / run_id / "questions.parquet").to_pylist()
    }
    hung = {q for q, r in got.items() if r["error"]}
    assert hung == {f"q{n:03d}" for n in range(hold_from, 31)}
    assert all("QuestionTimeout" in got[q]["error"] for q in hung)
    assert all(r["answer"] for q, r in got.items() if q not in hung)
