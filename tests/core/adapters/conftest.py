"""Adapter tests run offline: any connection to a non-loopback address fails the test
(naming where it went), so a library that downloads or phones home at run time shows."""

from __future__ import annotations

import socket

import pytest


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    attempts: list[object] = []
    connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in (
            "127.0.0.1",
            "::1",
            "localhost",
        ):
            attempts.append(address)
            raise OSError(f"test is offline: connect to {address!r} refused")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    yield attempts
    assert not attempts, f"tried the network: {attempts}"
