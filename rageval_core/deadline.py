"""Deadlines on every wait for someone else: an HTTP call, a pipeline call that may hang.

    within(seconds)          every socket operation of an httpx client built on `transport()`
                             in this thread shares what is left of one total deadline
    transport(**kwargs)      that httpx transport
    run_within(s, fn, *a)    fn(*a) on a daemon thread; `CallTimedOut` after s seconds

httpx's own timeouts bound each socket operation, not the call: a server that drips its
status line and headers a byte every half second never trips a 2 s read timeout. Here
each read, write and connect is given only the time left until the call's deadline.

A Python thread cannot be killed, so `run_within` abandons a late call rather than
stopping it: it keeps running in the background until it returns by itself (its result is
dropped), and as a daemon thread it never holds the process at exit. This module must
never retry, log or know what the call is for.
"""

from __future__ import annotations

import contextvars
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, wait
from contextlib import contextmanager
from typing import Any, TypeVar

import httpcore
import httpx

T = TypeVar("T")

_local = threading.local()


class CallTimedOut(TimeoutError):
    """A call did not finish within its deadline (and was abandoned, `run_within`)."""

    def __init__(self, seconds: float):
        super().__init__(f"no answer within {seconds:g} s (deadline)")
        self.seconds = seconds


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Bound every socket operation of `transport()` clients in this thread, inside the
    block, by one deadline `seconds` from now (nested blocks keep the earlier one)."""
    saved = getattr(_local, "deadline", None)
    mine = time.monotonic() + seconds
    _local.deadline = mine if saved is None else min(saved, mine)
    try:
        yield
    finally:
        _local.deadline = saved


def _left(timeout: float | None, late: type[Exception]) -> float | None:
    """The per-operation timeout cut to what is left of the deadline; `late` once none is."""
    deadline = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise late("total deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, left))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend):
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, left, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, left, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def transport(**kwargs: Any) -> httpx.HTTPTransport:
    """An `httpx.HTTPTransport(**kwargs)` whose sockets honour `within`."""
    t = httpx.HTTPTransport(**kwargs)
    # httpx builds its httpcore pool without a way to pass a network backend; the pool
    # keeps it in this attribute (httpcore 1.x), and the drip tests fail if that changes.
    pool = t._pool
    pool._network_backend = _Backend(pool._network_backend)
    return t


def run_within(seconds: float | None, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)`, or `CallTimedOut` once `seconds` pass (None: no deadline, called here).

    The call runs on a fresh daemon thread with this thread's context variables (tracing
    spans stay nested); whatever it raises — `SystemExit` and `KeyboardInterrupt` too, a
    thread other than the main one never receives a real Ctrl-C — is raised here."""
    if seconds is None:
        return fn(*args)
    future: Future[T] = Future()
    context = contextvars.copy_context()

    def call() -> None:
        try:
            future.set_result(context.run(fn, *args))
        except BaseException as exc:  # handed to the waiting thread, whatever it is
            future.set_exception(exc)

    threading.Thread(target=call, name="rageval-deadline", daemon=True).start()
    # Not `future.result(timeout)`: a TimeoutError the call itself raises is its own.
    if not wait([future], timeout=seconds).done:
        raise CallTimedOut(seconds)
    return future.result()
