"""Fixtures for hosting tests: a real S3 API (moto_server on 127.0.0.1) and demo runs."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout} s")


@pytest.fixture(scope="session")
def s3_endpoint():
    """A moto S3 server on a free port; the standard AWS_* variables point at it."""
    port = free_port()
    proc = subprocess.Popen(
        [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing-key-id",
        "AWS_SECRET_ACCESS_KEY": "testing-secret-key",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        wait_for(endpoint)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def bucket(s3_endpoint, request):
    """A fresh, empty bucket per test (fsspec's instance cache cleared so listings are new)."""
    import boto3
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    name = "rageval-" + request.node.name.lower().replace("_", "-")[:40].strip("-")
    name = "".join(c for c in name if c.isalnum() or c == "-")
    boto3.client("s3").create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="session")
def demo_results(tmp_path_factory) -> Path:
    """A copy of the demo runs committed under results/ (what `rageval demo` writes)."""
    committed = Path(__file__).resolve().parents[2] / "results"
    out = tmp_path_factory.mktemp("demo") / "results"
    shutil.copytree(committed, out, ignore=shutil.ignore_patterns(".rageval"))
    return out


@pytest.fixture
def demo_copy(demo_results, tmp_path) -> Path:
    """A private copy of the demo runs a test may change."""
    out = tmp_path / "results"
    shutil.copytree(demo_results, out, ignore=shutil.ignore_patterns(".rageval"))
    return out


@pytest.fixture(scope="session")
def net():
    """`net.free_port()` and `net.wait_for(url)` for tests that start their own servers."""
    import types

    return types.SimpleNamespace(free_port=free_port, wait_for=wait_for)


XSS = (
    '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script></script>'
    '<svg onload="window.__xss=3"><b id="xss-bold">bold</b>"\'><a href="javascript:alert(1)">x</a>'
)


def poison_run(run_dir: Path, payload: str = XSS) -> None:
    """Put `payload` into every model-written text field of a run's rows."""
    import pyarrow.parquet as pq

    from rageval_core.runs.atomic import write_parquet
    from rageval_core.runs.rows import rows_to_table

    path = run_dir / "questions.parquet"
    rows = pq.read_table(path).to_pylist()
    for r in rows:
        r["answer"] = f"{payload} {r['answer']}"
        r["unsupported_claims"] = [payload, *(r["unsupported_claims"] or [])]
        r["claims"] = [
            {
                "text": payload,
                "verdict": "unsupported",
                "evidence_chunk_id": payload,
                "evidence": payload,
                "reason": payload,
            },
            *(r["claims"] or []),
        ]
        r["retrieved_texts"] = [payload + t for t in r["retrieved_texts"] or []]
        r["error"] = r["error"] and payload
    write_parquet(path, rows_to_table(rows))


@pytest.fixture(scope="session")
def poisoned_results(demo_results, tmp_path_factory) -> Path:
    """The demo runs with an XSS payload in every answer, claim, reason and chunk text."""
    out = tmp_path_factory.mktemp("poisoned") / "results"
    shutil.copytree(demo_results, out, ignore=shutil.ignore_patterns(".rageval"))
    for run in out.iterdir():
        if not run.name.startswith("."):
            poison_run(run)
    return out
