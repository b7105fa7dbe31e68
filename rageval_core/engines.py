"""Engines: where a run's pipeline is built and called (docs/scale.md).

    Engine.open(source, workers, log) -> ask(question text) -> Answered
    ├── LocalEngine   the pipeline built once in this process, called from the run's threads
    └── RayEngine     one Ray actor per `concurrency` slot, each building the pipeline once

Only the pipeline call moves. Everything after it — redaction, declared scores, the judge
(and its on-disk cache and API key), metrics, the journal, shards, resume, object storage —
stays with the runner on the driver, so a Ray run writes exactly what a local run writes,
and no secret of the driver is ever sent to the cluster. An engine never writes a file.

A Ray worker that dies mid-question (`kill -9`, out of memory, a lost node) costs nothing:
the question is asked again on another worker, up to `ATTEMPTS` times, then recorded as a
`WorkerDied` error; a dead worker is replaced by a fresh one, within a budget, after which
the run stops (resumable) instead of feeding a cluster that kills every process.
"""

from __future__ import annotations

import importlib
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rageval_core.adapters import adapt
from rageval_core.config import PipelineSpec
from rageval_core.deadline import CallTimedOut, run_within
from rageval_core.errors import ConfigError, PipelineError
from rageval_core.models import PipelineOutput
from rageval_core.redact import Redactor
from rageval_core.runs.layout import positive_env_seconds

Pipeline = Callable[[str], Any]
# Set to the run's golden dataset (absolute path) while the factory runs, so a pipeline can
# index the corpus the run evaluates instead of a second, hand-kept path that can disagree.
DATASET_ENV = "RAGEVAL_DATASET"
# Tries of one question on Ray workers that die under it before it is recorded as an error.
ATTEMPTS = 3
# Fresh workers started in place of dead ones, per worker of the pool, before a run stops.
REPLACEMENTS_PER_WORKER = 2
# Where Ray reads a token-authenticated cluster's token (`RAY_AUTH_MODE=token`,
# docs/scale.md): its value is redacted from everything a run writes or logs.
RAY_TOKEN_ENV = "RAY_AUTH_TOKEN"
START_TIMEOUT_ENV = "RAGEVAL_RAY_START_TIMEOUT"
START_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class PipelineSource:
    """How to build a run's pipeline wherever it runs: the factory, the config's folder
    (importable, as is the driver's working directory) and the dataset it evaluates."""

    spec: PipelineSpec
    config_folder: Path
    dataset: Path
    cwd: Path


@dataclass(frozen=True)
class Answered:
    """The pipeline's reply to one question where it ran: its output, or the error it
    raised (`Type: message`, unredacted: the runner redacts), and the call's wall time."""

    output: PipelineOutput | None
    error: str | None
    wall_ms: float


Ask = Callable[[str], Answered]


class Engine(Protocol):
    name: str

    def open(
        self, source: PipelineSource, workers: int, log: Callable[[str], None]
    ) -> AbstractContextManager[Ask]:
        """Build the pipeline (once per worker); yield a thread-safe `ask`; tear down."""


def import_factory(name: str, config_folder: Path) -> Callable[..., Any]:
    """The function `module:function` names, the config folder and cwd importable."""
    for folder in (str(config_folder), os.getcwd()):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    module_name, _, func_name = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import runs user code: any error is a load failure
        raise PipelineError(
            f"cannot import pipeline module {module_name!r} "
            f"(searched {config_folder} and {os.getcwd()}): {type(exc).__name__}: {exc}"
        ) from exc
    factory = getattr(module, func_name, None)
    if not callable(factory):
        raise PipelineError(f"{module_name!r} has no function {func_name!r}")
    return factory


def load_pipeline(spec: PipelineSpec, config_folder: Path, dataset: Path) -> Pipeline:
    """Import `module:function` (config folder and cwd importable), call it with params,
    with `$RAGEVAL_DATASET` naming the run's dataset for the length of that call. A
    framework object it returns is wrapped by its adapter (`adapters`)."""
    factory = import_factory(spec.factory, config_folder)
    saved = os.environ.get(DATASET_ENV)
    os.environ[DATASET_ENV] = str(dataset)
    try:
        pipeline = factory(**spec.params)
    except Exception as exc:
        raise PipelineError(
            f"{spec.factory}(**params) failed: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        if saved is None:
            del os.environ[DATASET_ENV]
        else:
            os.environ[DATASET_ENV] = saved
    pipeline = adapt(pipeline)
    if not callable(pipeline):
        raise PipelineError(
            f"{spec.factory} returned {type(pipeline).__name__}; expected a callable(question) "
            "or a LlamaIndex, LangChain or Haystack object (docs/pipeline.md)"
        )
    return pipeline


def timed_out(seconds: float) -> str:
    """The error of a question whose pipeline call outlived `pipeline.timeout_s`."""
    return (
        f"QuestionTimeout: the pipeline gave no answer within {seconds:g} s "
        "(pipeline.timeout_s / --question-timeout); the call was abandoned"
    )


def ask(pipeline: Pipeline, question: str, timeout_s: float | None = None) -> Answered:
    """Call the user's pipeline once; anything it raises is that question's error —
    `SystemExit` and `KeyboardInterrupt` too (an app calling `sys.exit()` must not end the
    run). A real Ctrl-C reaches only the main thread, never the pool's: there it is
    raised. After `timeout_s` the call is abandoned (`deadline.run_within`: it goes on in
    the background, its answer dropped) and the question is a `QuestionTimeout` error."""
    start = time.perf_counter()
    try:
        out = PipelineOutput.from_value(run_within(timeout_s, pipeline, question))
        error = None
    except CallTimedOut as exc:
        out, error = None, timed_out(exc.seconds)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:
        if (
            isinstance(exc, KeyboardInterrupt)
            and threading.current_thread() is threading.main_thread()
        ):
            raise
        out, error = None, f"{type(exc).__name__}: {exc}"
    return Answered(out, error, (time.perf_counter() - start) * 1000)


@dataclass(frozen=True)
class LocalEngine:
    """The pipeline in this process, shared by the run's threads (the default)."""

    name: str = "local"

    @contextmanager
    def open(
        self, source: PipelineSource, workers: int, log: Callable[[str], None]
    ) -> Iterator[Ask]:
        pipeline = load_pipeline(source.spec, source.config_folder, source.dataset)
        yield lambda question: ask(pipeline, question, source.spec.timeout_s)


# ---------------------------------------------------------------------------- Ray


class PipelineWorker:
    """A Ray actor (wrapped with `ray.remote` by `RayEngine`): builds the pipeline once,
    then answers one question at a time. A build failure is kept and reported by
    `ready()`, so the driver shows one line instead of Ray's remote traceback."""

    def __init__(self, source: PipelineSource):
        # A worker starts in the node's own working directory: make the driver's (and the
        # config's) folder importable where they exist, as a local run does.
        if source.cwd.is_dir() and str(source.cwd) not in sys.path:
            sys.path.insert(0, str(source.cwd))
        self._pipeline: Pipeline | None = None
        self._error: str | None = None
        try:
            self._pipeline = load_pipeline(source.spec, source.config_folder, source.dataset)
        except PipelineError as exc:
            self._error = f"{exc.message} (on Ray node {_hostname()}, pid {os.getpid()})"

    def ready(self) -> str | None:
        return self._error

    def ask(self, question: str) -> Answered:
        if self._pipeline is None:
            return Answered(None, f"PipelineError: {self._error}", 0.0)
        return ask(self._pipeline, question)

    def where(self) -> tuple[str, int]:
        """(Ray node id, process id): which process answers, for logs and tests."""
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()


def _hostname() -> str:
    return os.uname().nodename if hasattr(os, "uname") else "?"


def import_ray() -> Any:
    """Ray, or a ConfigError saying how to install it (it is an optional extra)."""
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise ConfigError(
            f"--engine ray needs Ray, which is not installed ({exc.msg}): "
            "pip install 'rageval[ray]'"
        ) from None


@dataclass(frozen=True)
class RayEngine:
    """Questions on a Ray cluster: `address` as `ray.init` takes it (None starts a local
    one, unless `RAY_ADDRESS` names one); `cpus`/`gpus` are reserved by each worker (None:
    Ray's default, one CPU to be placed and none held)."""

    address: str | None = None
    cpus: float | None = None
    gpus: float | None = None
    name: str = "ray"

    @contextmanager
    def open(
        self, source: PipelineSource, workers: int, log: Callable[[str], None]
    ) -> Iterator[Ask]:
        ray = import_ray()
        connected_here = not ray.is_initialized()
        if connected_here:
            self._connect(ray)
        pool = None
        try:
            pool = _ActorPool(ray, self._worker_class(ray), source, workers, log)
            yield pool.ask
        finally:
            if pool is not None:
                pool.close()
            if connected_here:
                ray.shutdown()

    def _connect(self, ray: Any) -> None:
        # ERROR: Ray's start-up warnings would break "one clear line on stderr".
        kwargs: dict[str, Any] = {"logging_level": logging.ERROR, "configure_logging": True}
        if self.address is None and not os.environ.get("RAY_ADDRESS"):
            kwargs["include_dashboard"] = False
        try:
            ray.init(address=self.address, **kwargs)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError…
            where = self.address or os.environ.get("RAY_ADDRESS") or "a new local cluster"
            why = Redactor.for_env([RAY_TOKEN_ENV]).text(f"{type(exc).__name__}: {exc}")
            raise ConfigError(f"--engine ray: cannot connect to {where}: {why}") from None

    def _worker_class(self, ray: Any) -> Any:
        # SPREAD: a pool sized by concurrency uses every node, not the first with room.
        options: dict[str, Any] = {"scheduling_strategy": "SPREAD", "max_restarts": 0}
        if self.cpus is not None:
            options["num_cpus"] = self.cpus
        if self.gpus is not None:
            options["num_gpus"] = self.gpus
        return ray.remote(PipelineWorker).options(**options)


_BROKEN = object()  # in the idle queue instead of a worker: the pool cannot go on


class _ActorPool:
    """`workers` PipelineWorker actors lent to the run's threads one question at a time."""

    def __init__(
        self,
        ray: Any,
        worker: Any,
        source: PipelineSource,
        workers: int,
        log: Callable[[str], None],
    ):
        self._ray, self._worker, self._source, self._log = ray, worker, source, log
        self._idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._replacements_left = REPLACEMENTS_PER_WORKER * workers
        self._lost = (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError)
        self._broken: str | None = None
        self._timeout = source.spec.timeout_s
        self._actors = [worker.remote(source) for _ in range(workers)]
        try:
            self._start(workers)
        except BaseException:
            self.close()  # a driver that stays connected must not keep them alive
            raise
        for actor in self._actors:
            self._idle.put(actor)

    def _start(self, workers: int) -> None:
        """Wait until every worker has built its pipeline; one clear error if one cannot."""
        # A request the cluster can never satisfy (GPUs it lacks) must end in an error.
        timeout = positive_env_seconds(START_TIMEOUT_ENV, START_TIMEOUT_S)
        ready = [a.ready.remote() for a in self._actors]
        done, waiting = self._ray.wait(ready, num_returns=len(ready), timeout=timeout)
        if waiting:
            raise ConfigError(
                f"--engine ray: only {len(done)} of {workers} Ray workers started within "
                f"{timeout:g} s (${START_TIMEOUT_ENV}); the cluster lacks the resources asked for "
                f"(available: {self._ray.available_resources()})"
            )
        try:
            errors = self._ray.get(done)
        except self._lost as exc:
            raise PipelineError(f"a Ray worker died while building the pipeline: {exc}") from None
        failed = [e for e in errors if e]
        if failed:
            raise PipelineError(failed[0])
        nodes = {n for n, _ in self._ray.get([a.where.remote() for a in self._actors])}
        self._log(f"ray: {workers} worker(s) on {len(nodes)} node(s)")

    def ask(self, question: str) -> Answered:
        """The question's answer from the first worker that lives through it."""
        for _ in range(ATTEMPTS):
            actor = self._idle.get()
            if actor is _BROKEN:
                self._idle.put(_BROKEN)  # wake the next thread waiting for a worker
                raise PipelineError(self._broken or "the Ray workers are gone")
            try:
                answered = self._ray.get(actor.ask.remote(question), timeout=self._timeout)
            except self._ray.exceptions.GetTimeoutError:
                # The actor is stuck in the call: kill it, a fresh one takes its place.
                self._idle.put(self._replace(actor, died=False))
                return Answered(None, timed_out(self._timeout), self._timeout * 1000)
            except self._lost:
                self._idle.put(self._replace(actor))
                continue
            except self._ray.exceptions.RayTaskError as exc:  # e.g. a reply Ray cannot pickle
                answered = Answered(None, f"RayTaskError: {exc.cause or exc}", 0.0)
            self._idle.put(actor)
            return answered
        return Answered(
            None,
            f"WorkerDied: the Ray worker running this question died {ATTEMPTS} times "
            "(killed, out of memory, or its node lost); recorded instead of retried again",
            0.0,
        )

    def _replace(self, dead: Any, died: bool = True) -> Any:
        """A fresh worker in place of `dead`; `_BROKEN` once the budget for workers that
        `died` is spent (a worker killed for its timeout does not count), which stops
        every thread that asks next (none may wait for ever on an empty pool)."""
        self._kill(dead)
        with self._lock:
            if dead in self._actors:
                self._actors.remove(dead)
            if died and self._replacements_left <= 0:
                self._broken = (
                    "Ray workers keep dying (every replacement used up): stopping the run; "
                    "the questions finished are kept, resume it once the cluster is healthy"
                )
                return _BROKEN
            self._replacements_left -= died
            fresh = self._worker.remote(self._source)
            self._actors.append(fresh)
        self._log(
            "ray: a worker died mid-question; started a fresh one, asking again"
            if died
            else "ray: a worker outlived the question timeout; killed it, started a fresh one"
        )
        return fresh

    def _kill(self, actor: Any) -> None:
        try:
            self._ray.kill(actor, no_restart=True)
        except Exception:  # already gone: the point was only to be sure
            pass

    def close(self) -> None:
        with self._lock:
            actors, self._actors = self._actors, []
        for actor in actors:
            self._kill(actor)
