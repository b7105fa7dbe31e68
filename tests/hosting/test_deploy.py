"""Deployment: the dashboard behind a path prefix, the Dockerfile, the Streamlit config.

Docker itself cannot run here (no engine), so the image is checked statically and the
command it runs (`rageval dashboard --host … --port …`) is started for real, with the
Dockerfile's own HEALTHCHECK command pointed at it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    joined = re.sub(
        r"\\\n",
        " ",
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")),
    )
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory, net):
    """`rageval dashboard` as the image runs it, under the path prefix /rageval."""
    port = net.free_port()
    results = tmp_path_factory.mktemp("empty-results")
    env = {**os.environ, "STREAMLIT_SERVER_BASE_URL_PATH": "rageval", "HOME": str(results)}
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "rageval"),
            "dashboard",
            "--results",
            str(results),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        net.wait_for(f"http://127.0.0.1:{port}/rageval/_stcore/health", timeout=60)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_health_under_base_url_path(served):
    base = f"http://127.0.0.1:{served}"
    r = httpx.get(f"{base}/rageval/_stcore/health")
    assert r.status_code == 200 and r.text == "ok"
    assert httpx.get(f"{base}/rageval/").status_code == 200
    assert httpx.get(f"{base}/_stcore/health").status_code == 404


def test_cors_is_not_open_to_other_sites(served):
    r = httpx.get(
        f"http://127.0.0.1:{served}/rageval/_stcore/health",
        headers={"Origin": "https://evil.example"},
    )
    assert r.headers.get("access-control-allow-origin") not in ("*", "https://evil.example")


def test_dockerfile_healthcheck_command_passes_against_the_server(served):
    (args,) = [a for op, a in instructions(DOCKERFILE) if op == "HEALTHCHECK"]
    command = args.split(" CMD ", 1)[1].replace("8501", str(served))
    env = {**os.environ, "STREAMLIT_SERVER_BASE_URL_PATH": "rageval"}
    argv = shlex.split(command)
    argv[0] = sys.executable
    ok = subprocess.run(argv, env=env, capture_output=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    env["STREAMLIT_SERVER_BASE_URL_PATH"] = "wrong-prefix"
    bad = subprocess.run(argv, env=env, capture_output=True, timeout=30)
    assert bad.returncode != 0


def test_dockerfile_runs_unprivileged_with_extras_and_healthcheck():
    ops = instructions(DOCKERFILE)
    assert ops[0] == ("FROM", "python:3.11-slim")
    users = [a for op, a in ops if op == "USER"]
    assert users, "no USER: the container would run as root"
    assert users[-1].split(":")[0] not in ("root", "0")
    assert any(op == "RUN" and 'pip install ".[s3,auth]"' in a for op, a in ops)
    assert any(op == "HEALTHCHECK" and "_stcore/health" in a for op, a in ops)
    (cmd,) = [a for op, a in ops if op == "CMD"]
    assert cmd.startswith('["rageval", "dashboard"') and '"0.0.0.0"' in cmd
    env = " ".join(a for op, a in ops if op == "ENV")
    assert "RAGEVAL_RESULTS=/results" in env
    # Secrets are run-time input, never baked into the image.
    assert not re.search(r"(PASSWORD|SECRET|TOKEN|KEY)\w*=", env)
    copied = " ".join(a for op, a in ops if op == "COPY")
    assert "secrets.toml" not in copied and "results" not in copied.split()


def test_dockerignore_keeps_secrets_and_results_out():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", "results", ".streamlit/secrets.toml", ".env"} <= ignored


def test_streamlit_config_fit_for_a_proxy():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["enableXsrfProtection"] is True
    assert cfg["server"]["enableCORS"] is True
    assert cfg["browser"]["gatherUsageStats"] is False
    assert "baseUrlPath" in (ROOT / ".streamlit" / "config.toml").read_text()
    assert ".streamlit/secrets.toml" in (ROOT / ".gitignore").read_text()
