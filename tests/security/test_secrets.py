"""A judge API key named in the config (`api_key_env`) never lands in a manifest, a result
row, a log line, the report or the dashboard — even when the endpoint echoes it back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rageval_core.runs.layout import RESULTS_ENV

SECRET = "sk-test-DO-NOT-LEAK-8f3a9c2e71"
ENV_NAME = "RAGEVAL_TEST_JUDGE_KEY"
EXAMPLE = Path(__file__).resolve().parents[2] / "rageval_core" / "example"


class EchoingAuthError(BaseHTTPRequestHandler):
    """A chat-completions endpoint that rejects the key and quotes it, as some APIs do."""

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length") or 0))
        key = self.headers.get("authorization", "")
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}})
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def leaky_run(tmp_path_factory):
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoingAuthError)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = tmp_path_factory.mktemp("secret-run")
    config = work / "judged.yaml"
    config.write_text(
        f"""name: judged
dataset: {EXAMPLE / "dataset.yaml"}
pipeline:
  factory: rageval_core.example.pipeline:build
  params: {{top_k: 5}}
judge:
  kind: openai
  base_url: http://127.0.0.1:{server.server_address[1]}/v1
  model: test-model
  api_key_env: {ENV_NAME}
  max_retries: 0
  concurrency: 8
concurrency: 8
tags: [secrets-test]
"""
    )
    results = work / "results"
    # The judge's reply cache (the user's cache folder) inside `work`, so it is searched too.
    env = {**os.environ, ENV_NAME: SECRET, "XDG_CACHE_HOME": str(work / "cache")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rageval_core.cli",
            "run",
            str(config),
            "--results",
            str(results),
            "--run-id",
            "judged",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=300,
    )
    server.shutdown()
    server.server_close()
    return work, results, done


def test_run_hit_the_echoing_endpoint(leaky_run):
    _, results, done = leaky_run
    assert done.returncode == 0, done.stderr
    rows = (results / "judged" / "questions.parquet").read_bytes()
    assert b"Incorrect API key provided" in rows  # the error was recorded …


def test_secret_absent_from_every_file_and_log(leaky_run):
    work, results, done = leaky_run
    assert SECRET not in done.stdout + done.stderr
    for path in work.rglob("*"):  # manifests, rows, summary, judge cache, the config
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    manifest = json.loads((results / "judged" / "manifest.json").read_text())
    assert manifest["config"]["judge"]["api_key_env"] == ENV_NAME  # the name, not the key


def test_secret_absent_from_report(leaky_run, tmp_path):
    _, results, _ = leaky_run
    out = tmp_path / "report.html"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rageval_core.cli",
            "report",
            "judged",
            "--results",
            str(results),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, ENV_NAME: SECRET},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert SECRET not in out.read_text() and SECRET not in done.stdout + done.stderr


def test_secret_absent_from_dashboard(leaky_run, helpers, monkeypatch, tmp_path):
    _, results, _ = leaky_run
    monkeypatch.setenv(RESULTS_ENV, str(results))
    monkeypatch.setenv(ENV_NAME, SECRET)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(helpers.ENTRY, default_timeout=60)
    at.query_params.update({"run": "judged", "question": "q001"})
    at.run()
    for page in helpers.PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, page
        source = " ".join(t for _, _, t in helpers.page_strings(at))
        source += " ".join(df.value.to_csv() for df in at.dataframe)
        source += " ".join(str(c.proto) for c in at.get("plotly_chart"))
        assert SECRET not in source, page
