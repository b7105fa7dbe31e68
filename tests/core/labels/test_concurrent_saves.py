"""Two reviewers saving at the same moment both keep their labels: threads of one
dashboard process, and two processes (two dashboard replicas on one shared folder)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from rageval_core.labels import LabelStore
from tests.core.labels.helpers import SAVER, label

ROOT = Path(__file__).resolve().parents[3]


def test_threads_saving_at_once_all_keep_their_labels(tmp_path):
    store = LabelStore(str(tmp_path))  # one store shared by every session thread
    barrier = threading.Barrier(16)

    def save(i: int) -> None:
        barrier.wait()
        for k in range(5):
            store.save([label(f"q{k}", "Same claim.", "supported", reviewer=f"r{i}")])

    threads = [threading.Thread(target=save, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(list(tmp_path.rglob("*.jsonl"))) == 80
    got = store.load()
    assert len(got.labels) == 80 and got.problems == ()
    assert len(got.for_question("a" * 64, "q0")["same claim"]) == 16


def test_two_processes_saving_at_once_both_keep_their_labels(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    start = time.time() + 1.5
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SAVER, str(tmp_path), who, str(start)], env=env, cwd=ROOT
        )
        for who in ("ann", "bob")
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    got = LabelStore(str(tmp_path)).load()
    assert got.problems == ()
    assert sorted({lab.reviewer for lab in got.labels}) == ["ann", "bob"]
    assert len(got.labels) == 80
