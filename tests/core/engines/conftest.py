"""A real two-node Ray cluster on this machine, and a pipeline that can be told to die.

The cluster is two `ray start --block` processes (a head and a second node), each with
its own CPU, every file under the test's temp dir (`RAY_TMPDIR`, so nothing lands in
/tmp/ray), and Ray's state isolated (`isolated_ray_env`: home, auth mode, no inherited
token), so a `~/.ray/auth_token` a local `--engine ray` run left cannot change them.
Stopping a `--block` process stops its node; whatever of ours survives that (found by the
temp dir in its command line) is killed by pid. Other Ray users on the machine are never
touched.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import import_or_skip_unless_ci

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[3]
SECRET_ENV = "RAGEVAL_RAY_TEST_SECRET"
SECRET = "sk-raytest-0123456789abcdef"
RAY_TOKEN = "0123456789abcdef" * 4  # the cluster's token (what Ray generates: 64 hex)

# Question "What is fact N?" -> chunk fN. `calls` gets one line per call: the node's tag,
# the process id, the question number. Question `hold_first` waits on its first attempt
# (for the test to kill -9 that worker); `always_dies` kills its worker every time.
RAY_PIPELINE = """
import os
import signal
import time


def build(calls, delay=0.05, hold_first=None, always_dies=None, fail_n=None,
          secret_env=None):
    secret = os.environ.get(secret_env) if secret_env else None

    def pipe(question):
        n = int(question.rstrip("?").split()[-1]) if "fact" in question else 0
        with open(calls, "a") as fh:  # one short O_APPEND write: lines never interleave
            fh.write(f"{os.environ.get('RAGEVAL_NODE_TAG')} {os.getpid()} {n}\\n")
        if n == always_dies:
            os.kill(os.getpid(), signal.SIGKILL)
        held = f"{calls}.held"
        if n == hold_first and not os.path.exists(held):
            with open(f"{held}.tmp", "w") as fh:
                fh.write(str(os.getpid()))
            os.rename(f"{held}.tmp", held)
            time.sleep(120)
        time.sleep(delay)
        if n == fail_n:
            raise ValueError(f"cannot answer question {n}, key={secret}")
        if n == 0:
            return {"answer": "I don't know.", "retrieved": [], "retrieval_ms": 1.0,
                    "generation_ms": 2.0}
        ids = [f"f{n}", f"f{n % 30 + 1}"]
        return {
            "answer": f"Fact {n} is {n * 7}.",
            "retrieved": [{"id": i, "text": f"Fact {i[1:]} is {int(i[1:]) * 7}.",
                           "score": 1.0} for i in ids],
            "retrieval_ms": 10.0, "generation_ms": 20.0, "input_tokens": 100,
            "output_tokens": 10,
        }

    return pipe
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def isolated_ray_env(temp: Path, token: str | None = None) -> dict[str, str]:
    """This process's environment with Ray's state of its own: a home under `temp` (Ray
    2.60 reads and writes `~/.ray/auth_token`), an explicit auth mode — token with
    `token`, else disabled — and no token or cluster address inherited from the user."""
    home = temp / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(home), RAY_AUTH_MODE="token" if token else "disabled")
    if token:
        env["RAY_AUTH_TOKEN"] = token
    return env


class RayCluster:
    """`address` to pass as --ray-address; `env` for every process that talks to it. With
    `token`, the cluster uses Ray's token authentication and `env` carries the token."""

    def __init__(self, temp: Path, token: str | None = None, nodes: int = 2):
        self.temp = temp
        self.n_nodes = nodes
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        self.env = {
            **isolated_ray_env(temp, token),
            "RAY_TMPDIR": str(temp),
            "RAY_USAGE_STATS_ENABLED": "0",
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
            SECRET_ENV: SECRET,
        }
        common = [
            "--block",
            "--num-cpus=1",
            "--node-ip-address=127.0.0.1",
            f"--temp-dir={temp}",
            # Both nodes share this machine: each needs its own agent port.
            f"--dashboard-agent-listen-port={free_port()}",
        ]
        self._common = common
        self._port = port
        self.nodes: list[subprocess.Popen] = []

    def start(self) -> None:
        common, port = self._common, self._port
        self._start("head", ["--head", f"--port={port}", "--include-dashboard=false", *common])
        self._wait_for_port(port)
        if self.n_nodes == 2:
            self._start("second", [f"--address={self.address}", *common])
        self._wait_for_nodes(self.n_nodes)

    def _start(self, tag: str, args: list[str]) -> None:
        log = open(self.temp / f"{tag}.log", "w")  # noqa: SIM115 - closed with the process
        self.nodes.append(
            subprocess.Popen(
                [str(BIN / "ray"), "start", *args],
                env={**self.env, "RAGEVAL_NODE_TAG": tag},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        log.close()

    def _wait_for_port(self, port: int, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.nodes[0].poll() is None, (self.temp / "head.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"the Ray head did not listen on {port} within {timeout} s")

    def _wait_for_nodes(self, n: int, timeout: float = 180.0) -> None:
        """Both raylets registered: ask the head with a short-lived driver process."""
        probe = (
            "import ray, sys, time\n"
            f"ray.init(address={self.address!r}, logging_level='ERROR')\n"
            f"deadline = time.monotonic() + {timeout}\n"
            f"while sum(n['Alive'] for n in ray.nodes()) < {n}:\n"
            "    assert time.monotonic() < deadline, ray.nodes()\n"
            "    time.sleep(0.2)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout + 60,
        )
        assert done.returncode == 0, done.stderr[-2000:]

    def ours(self) -> list[int]:
        """Pids of processes of this cluster still alive (their command line names our dir)."""
        pids = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if str(self.temp).encode() in cmdline:
                pids.append(int(proc.name))
        return pids

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.send_signal(signal.SIGTERM)
        for node in reversed(self.nodes):
            try:
                node.wait(timeout=60)
            except subprocess.TimeoutExpired:
                node.kill()
                node.wait()
        for pid in self.ours():  # a straggler of ours: stop it by its own pid
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@contextmanager
def running(cluster: RayCluster) -> Iterator[RayCluster]:
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
    assert not cluster.ours(), "Ray processes of the test cluster outlived it"


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory) -> Iterator[RayCluster]:
    """One two-node cluster for every Ray test (starting one takes ~20 s on 2 cores)."""
    import_or_skip_unless_ci("ray", "pip install 'rageval[ray]'")
    # A short root: Ray's socket paths under it must stay within the 107-byte limit.
    with running(RayCluster(tmp_path_factory.mktemp("ray", numbered=True))) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def ray_token_cluster(tmp_path_factory) -> Iterator[RayCluster]:
    """A one-node cluster with Ray's token authentication (`RAY_AUTH_MODE=token`)."""
    import_or_skip_unless_ci("ray", "pip install 'rageval[ray]'")
    temp = tmp_path_factory.mktemp("rayt", numbered=True)
    with running(RayCluster(temp, token=RAY_TOKEN, nodes=1)) as cluster:
        yield cluster
