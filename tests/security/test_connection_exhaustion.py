"""Connection and HTTP exhaustion, attacked as found (issue 12, findings 3 and 4), against the
running service over loopback: the attacker connects from 127.0.0.1 (and other 127.x
addresses), the well-behaved client from 127.0.0.2 — different client IPs to the server.

- 1,000 idle TCP connections to the Thrift port (plain and SASL) used to take every slot;
- a handshake or first call trickled a byte at a time was bounded only per read;
- 40 connections sending an HTTP header line every 5 s, or 1,000 idle ones, held the HTTP
  endpoint's threads, so /healthz answered 503.

Every attack is bounded in connections and seconds. Honest clients use bounded time-outs;
nothing here asserts a speed.
"""

from __future__ import annotations

import http.client
import logging
import resource
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from tests.support.apache_thrift import load_apache_modules
from tests.support.security import make_pki, sasl_client
from tests.support.server import running_service

ATTACKER = "127.0.0.1"
HONEST = "127.0.0.2"
OTHER_ATTACKERS = ["127.0.0.3", "127.0.0.4", "127.0.0.5"]
FLOOD = 1000
USER, PASSWORD = "etl", "flood-test-password"
SASL = {"sasl_enabled": True, "sasl_users": {USER: PASSWORD}}
THRIFT_LOG = "hms_cache_proxy.server.thrift_server"
HTTP_LOG = "hms_cache_proxy.observability.http_intake"


# -- helpers -------------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def enough_file_descriptors() -> None:
    """The floods hold 1,000 client sockets in this process (the server runs here too)."""
    need = FLOOD + 1500
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"needs {need} file descriptors; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def connect_from(source: str, port: int, timeout: float = 5.0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    sock.settimeout(None)
    return sock


@contextmanager
def idle_flood(source: str, port: int, count: int = FLOOD) -> Iterator[list[socket.socket]]:
    """``count`` connections from ``source`` that never send a byte (closed afterwards)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            try:
                socks.append(connect_from(source, port))
            except OSError:  # a full accept queue may drop a SYN: the attacker's loss
                pass
        yield socks
    finally:
        for sock in socks:
            sock.close()


def is_closed(sock: socket.socket) -> bool:
    """The server closed (or reset) this connection, or answered on it (HTTP's 503 and 408:
    these clients sent nothing that deserves an answer, so one comes only with the close)."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def answer(sock: socket.socket) -> bytes | None:
    """What the server sent and then closed with (b"" for a bare close); None while open."""
    try:
        return sock.recv(200, socket.MSG_DONTWAIT)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def eventually(check: Callable[[], Any], timeout: float) -> Any:
    """Retry ``check`` until it holds, for at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def assert_all(values: Any) -> None:
    assert all(values)


def assert_equal(a: Any, b: Any) -> None:
    assert a == b


class SourceSocket(TSocket.TSocket):
    """Apache Thrift's client socket, connecting from a chosen loopback address."""

    def __init__(self, source: str, port: int, timeout: float) -> None:
        super().__init__("127.0.0.1", port)
        self.source = source
        self.setTimeout(timeout * 1000)

    def open(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(self._timeout)
        sock.bind((self.source, 0))
        sock.connect(("127.0.0.1", self.port))
        self.handle = sock


def honest_databases(port: int, secured: bool, source: str = HONEST) -> list[str]:
    """One well-behaved client's call (Apache Thrift's client; SASL PLAIN when ``secured``)."""
    if secured:
        client = sasl_client(
            port, USER, PASSWORD, timeout_ms=10_000, sock=SourceSocket(source, port, 10)
        )
        try:
            return list(client.get_all_databases())
        finally:
            client._oprot.trans.close()
    transport = TTransport.TBufferedTransport(SourceSocket(source, port, 10))
    client = load_apache_modules().ThriftHiveMetastore.Client(
        TBinaryProtocol.TBinaryProtocol(transport)
    )
    transport.open()
    try:
        return list(client.get_all_databases())
    finally:
        transport.close()


def http_get(port: int, path: str, source: str = HONEST, timeout: float = 5.0) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=timeout, source_address=(source, 0)
    )
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def metric(port: int, name: str, **labels: str) -> float:
    status, body = http_get(port, "/metrics")
    assert status == 200
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def log_lines(caplog: pytest.LogCaptureFixture, logger: str, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and text in r.getMessage()]


# -- the Thrift port -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("secured", [False, True], ids=["plain", "sasl"])
def test_idle_flood_from_one_address_leaves_other_clients_served(
    sqlite_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, secured: bool
) -> None:
    """1,000 idle connections from one address: it gets its share (128) and the rest are
    closed at once; a client from another address is served throughout, and /healthz and
    /metrics answer; the admitted idle connections are cut at the handshake (SASL) or
    first-call deadline, after which the attacker's address is served again."""
    caplog.set_level(logging.INFO, logger=THRIFT_LOG)
    deadline = {"handshake_timeout_seconds": 3} if secured else {"first_call_timeout_seconds": 3}
    settings = {**(SASL if secured else {}), **deadline}
    with running_service(sqlite_url, tmp_path / "wh", metrics_port=0, **settings) as svc:
        share = svc.settings.max_connections_per_client
        assert (svc.settings.max_connections, share) == (1000, 128)  # the shipped defaults
        with idle_flood(ATTACKER, svc.port) as flood:
            assert len(flood) > 900

            def refused_at_once() -> None:
                assert sum(is_closed(s) for s in flood) >= len(flood) - share

            eventually(refused_at_once, timeout=5)  # the metric below tells refusals from cuts
            assert svc.server.admission.held_by(ATTACKER) <= share
            assert honest_databases(svc.port, secured) == ["default"]
            assert http_get(svc.metrics_port, "/healthz")[0] == 200
            refused = metric(
                svc.metrics_port,
                "hms_connections_refused_total",
                endpoint="thrift",
                reason="max_connections_per_client",
            )
            assert refused >= len(flood) - share

            # the admitted idle connections go at the deadline, not at the 600 s idle time-out
            eventually(lambda: assert_all(is_closed(s) for s in flood), timeout=15)
            eventually(lambda: assert_equal(svc.server.admission.held_by(ATTACKER), 0), 5)
            assert honest_databases(svc.port, secured, source=ATTACKER) == ["default"]
            stage = "handshake_timeout" if secured else "first_call_timeout"
            cut = metric(
                svc.metrics_port, "hms_connections_timed_out_total", endpoint="thrift", reason=stage
            )
            assert cut >= share

    # hundreds of refusals, a handful of log lines
    refusals = log_lines(caplog, THRIFT_LOG, "refusing a connection from 127.0.0.1")
    assert 1 <= len(refusals) <= 3
    assert "max_connections_per_client = 128" in refusals[0]
    setting = "handshake_timeout_seconds" if secured else "first_call_timeout_seconds"
    assert 1 <= len(log_lines(caplog, THRIFT_LOG, setting)) <= 3


def test_reserved_slots_stay_for_clients_holding_few(
    sqlite_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Hosts at their share fill the pool up to the reserve; the reserve is left to clients
    holding fewer than reserved_connections_per_client, so a new client still gets in."""
    limits = {
        "max_connections": 40,
        "max_connections_per_client": 16,
        "reserved_connections": 8,
        "reserved_connections_per_client": 2,
    }
    with (
        running_service(sqlite_url, tmp_path / "wh", metrics_port=0, **limits) as svc,
        idle_flood(ATTACKER, svc.port, 30) as a,
        idle_flood(OTHER_ATTACKERS[0], svc.port, 30) as b,
        idle_flood(OTHER_ATTACKERS[1], svc.port, 30) as c,
    ):
        adm = svc.server.admission

        def settled() -> None:  # 16 + 16 fill up to the reserve; the third host gets 2
            assert sum(not is_closed(s) for s in a + b + c) == 34
            held = [adm.held_by(ATTACKER), adm.held_by(OTHER_ATTACKERS[0])]
            assert held == [16, 16] and adm.held_by(OTHER_ATTACKERS[1]) == 2

        eventually(settled, timeout=10)
        assert honest_databases(svc.port, secured=False) == ["default"]
        assert http_get(svc.metrics_port, "/healthz")[0] == 200
        by_reserve = metric(
            svc.metrics_port,
            "hms_connections_refused_total",
            endpoint="thrift",
            reason="reserved_connections",
        )
        assert by_reserve == 28  # the third host's 28 beyond its 2 (the others: their share)
    assert log_lines(caplog, THRIFT_LOG, "only the 8 reserved slots are left")


def trickle(sock: socket.socket, data: bytes, interval: float, stop: float) -> bool:
    """Send ``data`` a byte per ``interval`` seconds; False when the server closed first."""
    end = time.monotonic() + stop
    for byte in data:
        if time.monotonic() > end:
            return True
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return False
        time.sleep(interval)
        if is_closed(sock):
            return False
    return True


def _client_hello() -> bytes:
    """The first flight of a real TLS client."""
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["tls", "sasl", "first_call"])
def test_trickled_handshake_or_first_call_is_cut_at_the_deadline(
    sqlite_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, stage: str
) -> None:
    """A byte every 0.3 s keeps a per-read time-out (message_timeout_seconds, 60 s) happy
    forever; the whole deadline (2 s here) cuts the connection anyway."""
    caplog.set_level(logging.INFO, logger=THRIFT_LOG)
    settings: dict[str, Any] = {
        "handshake_timeout_seconds": 2,
        "first_call_timeout_seconds": 2,
        "message_timeout_seconds": 60,
    }
    if stage == "tls":
        pki = make_pki(tmp_path / "pki")
        settings |= {"tls_cert_file": str(pki.server_cert), "tls_key_file": str(pki.server_key)}
        data = _client_hello()
    elif stage == "sasl":
        settings |= SASL
        plain = b"\x00" + USER.encode() + b"\x00" + PASSWORD.encode()
        data = b"\x01" + struct.pack(">I", 5) + b"PLAIN" + b"\x02" + struct.pack(">I", len(plain))
        data += plain
    else:
        buf = TTransport.TMemoryBuffer()
        load_apache_modules().ThriftHiveMetastore.Client(
            TBinaryProtocol.TBinaryProtocol(buf)
        ).send_get_all_databases()
        data = buf.getvalue()
    assert len(data) * 0.3 > 8  # the trickle would outlast the deadline by far
    with running_service(sqlite_url, tmp_path / "wh", **settings) as svc:
        sock = connect_from(ATTACKER, svc.port)
        try:
            finished = trickle(sock, data, interval=0.3, stop=12)
            assert not finished, "the server let the trickle go on"
        finally:
            sock.close()
        if stage != "tls":
            assert honest_databases(svc.port, secured=stage == "sasl") == ["default"]
    setting = "first_call_timeout_seconds" if stage == "first_call" else "handshake_timeout"
    assert log_lines(caplog, THRIFT_LOG, setting), caplog.text


# -- the HTTP endpoint ---------------------------------------------------------------------------


def _probe_until(port: int, stop: threading.Event, answers: list[tuple[str, int | str]]) -> None:
    while not stop.is_set():
        for path in ("/healthz", "/metrics"):
            try:
                answers.append((path, http_get(port, path, timeout=5)[0]))
            except OSError as exc:
                answers.append((path, f"{type(exc).__name__}: {exc}"))
        stop.wait(0.5)


@pytest.mark.slow
def test_http_answers_while_40_clients_trickle_headers(
    sqlite_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """40 connections each sending a header line every 5 s (10 from each of four addresses,
    all within their share), reconnecting whenever cut, for 16 s: /healthz and /metrics keep
    answering 200 to another client, and the trickling connections are cut after
    http_request_timeout_seconds (5 s) from connect with 408."""
    caplog.set_level(logging.INFO, logger=HTTP_LOG)
    with running_service(sqlite_url, tmp_path / "wh", metrics_port=0) as svc:
        port = svc.metrics_port
        assert svc.settings.http_request_timeout_seconds == 5  # the shipped default
        sources = [ATTACKER, *OTHER_ATTACKERS]
        stop = threading.Event()
        cut: list[bytes] = []

        def slow_client(source: str) -> None:
            while not stop.is_set():
                try:
                    sock = connect_from(source, port)
                except OSError:
                    stop.wait(0.5)
                    continue
                with sock:
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                    n = 0
                    while not stop.wait(5.0):
                        got = answer(sock)
                        if got is not None:
                            cut.append(got)
                            break
                        try:
                            sock.sendall(f"X-Slow-{n}: {n}\r\n".encode())
                        except OSError:
                            cut.append(b"")
                            break
                        n += 1

        attackers = [
            threading.Thread(target=slow_client, args=(sources[i % 4],), daemon=True)
            for i in range(40)
        ]
        for t in attackers:
            t.start()
        answers: list[tuple[str, int | str]] = []
        prober = threading.Thread(target=_probe_until, args=(port, stop, answers), daemon=True)
        time.sleep(1.0)  # every attacker connected
        prober.start()
        time.sleep(15.0)
        stop.set()
        prober.join(timeout=30)
        for t in attackers:
            t.join(timeout=30)
        assert answers and all(status == 200 for _, status in answers), answers
        assert len(cut) >= 40  # each attacker's first connection was cut by the deadline
        assert any(reply.startswith(b"HTTP/1.0 408") for reply in cut)
        timed_out = metric(
            port, "hms_connections_timed_out_total", endpoint="http", reason="request_timeout"
        )
        assert timed_out >= 40
    lines = log_lines(caplog, HTTP_LOG, "no whole request within 5 s")
    assert 1 <= len(lines) <= 3


@pytest.mark.slow
def test_http_answers_during_an_idle_flood(
    sqlite_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """1,000 idle connections to the HTTP port from one address: past its share (16) they
    are refused at once; /healthz and /metrics answer another client; the admitted ones are
    cut by the request deadline."""
    caplog.set_level(logging.INFO, logger=HTTP_LOG)
    with running_service(sqlite_url, tmp_path / "wh", metrics_port=0) as svc:
        port = svc.metrics_port
        share = svc.settings.http_max_connections_per_client
        refused_label = {"endpoint": "http", "reason": "max_connections_per_client"}
        cut_label = {"endpoint": "http", "reason": "request_timeout"}
        # The registry is the process's: earlier tests' counts are in it.
        refused_before = metric(port, "hms_connections_refused_total", **refused_label)
        cut_before = metric(port, "hms_connections_timed_out_total", **cut_label)
        with idle_flood(ATTACKER, port) as flood:
            assert len(flood) > 900
            eventually(
                lambda: assert_all([sum(is_closed(s) for s in flood) >= len(flood) - share]),
                timeout=8,  # the metric below tells refusals from cuts
            )
            for path in ("/healthz", "/metrics"):
                assert http_get(port, path, timeout=5)[0] == 200
            eventually(lambda: assert_all(is_closed(s) for s in flood), timeout=15)
            refused = metric(port, "hms_connections_refused_total", **refused_label)
            refused -= refused_before
            cut = metric(port, "hms_connections_timed_out_total", **cut_label) - cut_before
            # Every flood connection was either refused at once or admitted within the share and
            # cut by the deadline. On a loaded host the accept loop may still be draining the
            # backlog when the first admitted ones are cut, so their places are taken again by
            # a few more; the rest of the flood is refused.
            assert refused + cut >= len(flood)
            assert share <= cut <= 4 * share
            assert refused >= len(flood) - 4 * share
            assert http_get(port, "/healthz", source=ATTACKER)[0] == 200  # its share is back
    refusals = log_lines(caplog, HTTP_LOG, "refusing an HTTP connection from 127.0.0.1")
    assert 1 <= len(refusals) <= 3
