"""Upstream mode: an instance with no database in front of another metastore, every call passed
through as the client sent it. The upstream is this project's server in database mode on
PostgreSQL; clients are Apache Thrift's (a different implementation from the server's)."""

from __future__ import annotations

import http.client
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from thrift.Thrift import TApplicationException

from hms_cache_proxy.app import Service, build_service
from hms_cache_proxy.config import Settings
from tests.integration.test_txn_calls import allocate, commit, open_txns, transactional_table
from tests.support.apache_thrift import apache_client
from tests.support.metastore import partition, table
from tests.support.server import ROOT, free_port, running_service

pytestmark = pytest.mark.postgres


@pytest.fixture
def upstream_port() -> int:
    return free_port()


@pytest.fixture
def upstream(pg_url: str, tmp_path: Path, upstream_port: int) -> Iterator[Service]:
    """This project's server in database mode (PostgreSQL): the metastore being fronted."""
    with running_service(pg_url, tmp_path / "warehouse", port=upstream_port) as svc:
        yield svc


def proxy_settings(upstream_uri: str, **overrides: Any) -> Settings:
    overrides.setdefault("metrics_port", None)
    return Settings(upstream_uri=upstream_uri, host="127.0.0.1", port=0, **overrides)


@pytest.fixture
def proxy(upstream: Service) -> Iterator[Service]:
    svc = build_service(proxy_settings(f"thrift://127.0.0.1:{upstream.port}"))
    svc.start_background()
    try:
        yield svc
    finally:
        svc.stop(grace_seconds=5)


@pytest.fixture
def connect(proxy: Service) -> Iterator[Any]:
    transports = []

    def _connect(port: int | None = None, **kwargs: Any) -> Any:
        client, transport = apache_client("127.0.0.1", port or proxy.port, **kwargs)
        transports.append(transport)
        return client

    yield _connect
    for t in transports:
        t.close()


@pytest.fixture
def client(connect: Any) -> Any:
    return connect()


def test_upstream_mode_opens_no_database(proxy: Service) -> None:
    assert proxy.database is None and proxy.store is None
    assert proxy.describe().startswith("upstream thrift://127.0.0.1:")


def test_databases_tables_and_partitions_pass_through(
    client: Any, T: Any, upstream: Service
) -> None:
    client.create_database(T.Database(name="sales", description="d", parameters={"k": "v"}))
    db = client.get_database("SALES")
    assert (db.name, db.description, db.parameters) == ("sales", "d", {"k": "v"})
    assert "sales" in client.get_all_databases()
    client.create_table(table(T, "sales", "orders", keys=["day:string"]))
    assert client.get_table("sales", "orders").partitionKeys[0].name == "day"
    client.add_partitions([partition(T, "sales", "orders", [d]) for d in ("1", "2", "3")])
    names = client.get_partition_names("sales", "orders", -1)
    assert names == ["day=1", "day=2", "day=3"]
    parts = client.get_partitions_by_names("sales", "orders", ["day=2"])
    assert [p.values for p in parts] == [["2"]]
    # what the upstream itself holds, asked directly
    direct, transport = apache_client("127.0.0.1", upstream.port)
    try:
        assert direct.get_partition_names("sales", "orders", -1) == names
    finally:
        transport.close()


def test_declared_exceptions_come_back_as_the_upstream_sent_them(client: Any, T: Any) -> None:
    with pytest.raises(T.NoSuchObjectException) as exc:
        client.get_database("absent")
    assert "absent" in exc.value.message
    assert client.get_all_databases() is not None  # the connection still serves


def test_a_transaction_opens_allocates_locks_and_commits(client: Any, T: Any) -> None:
    client.create_database(T.Database(name="acid"))
    transactional_table(client, T, "t", db="acid")
    (txn,) = open_txns(client, T, 1)
    write_ids = allocate(client, T, "t", [txn], db="acid")
    assert write_ids == {txn: 1}
    component = T.LockComponent(
        type=T.LockType.SHARED_WRITE,
        level=T.LockLevel.TABLE,
        dbname="acid",
        tablename="t",
        operationType=T.DataOperationType.INSERT,
        isTransactional=True,
    )
    resp = client.lock(
        T.LockRequest(component=[component], txnid=txn, user="u", hostname="h", agentInfo="x")
    )
    assert T.LockState._VALUES_TO_NAMES[resp.state] == "ACQUIRED"
    commit(client, T, txn)
    assert txn not in client.get_open_txns().open_txns


def test_a_method_this_project_does_not_implement_is_answered_by_the_upstream(
    client: Any, T: Any, upstream: Service
) -> None:
    direct, transport = apache_client("127.0.0.1", upstream.port)
    try:
        with pytest.raises(T.TApplicationException) as want:
            direct.get_type("x")
    finally:
        transport.close()
    with pytest.raises(T.TApplicationException) as got:
        client.get_type("x")
    assert (got.value.type, got.value.message) == (want.value.type, want.value.message)


def _raw_call(port: int, name: str, seqid: int) -> tuple[int, int, int, str]:
    """A call of ``name`` with empty arguments sent as bytes; the reply's type and seqid, and
    the TApplicationException's type and message."""
    from thrift.protocol.TBinaryProtocol import TBinaryProtocol
    from thrift.Thrift import TApplicationException
    from thrift.transport.TSocket import TSocket

    raw = name.encode()
    msg = struct.pack("!iI", -2147418112 | 1, len(raw)) + raw + struct.pack("!i", seqid) + b"\0"
    sock = TSocket("127.0.0.1", port)
    sock.setTimeout(30_000)
    sock.open()
    try:
        sock.write(msg)
        proto = TBinaryProtocol(sock)
        _, mtype, got_seqid = proto.readMessageBegin()
        exc = TApplicationException()
        exc.read(proto)
        return mtype, got_seqid, exc.type, exc.message
    finally:
        sock.close()


def test_a_method_of_no_known_idl_gets_the_upstreams_answer_with_the_clients_seqid(
    proxy: Service, upstream: Service
) -> None:
    got = _raw_call(proxy.port, "get_something_from_hive_9", 4242)
    assert got == _raw_call(upstream.port, "get_something_from_hive_9", 4242)
    assert got == (3, 4242, 1, "Invalid method name: 'get_something_from_hive_9'")


def test_set_ugi_reaches_the_upstream_for_the_calls_of_that_connection(
    connect: Any, T: Any
) -> None:
    bob = connect()
    assert "bob" in bob.set_ugi("bob", ["staff"])
    bob.create_database(T.Database(name="bobs"))
    anonymous = connect()
    anonymous.create_database(T.Database(name="nobodys"))
    carol = connect()
    carol.set_ugi("carol", [])
    carol.create_database(T.Database(name="carols"))
    bob.create_database(T.Database(name="bobs2"))  # bob's connection keeps bob
    owners = {n: anonymous.get_database(n).ownerName for n in ("bobs", "carols", "bobs2")}
    assert owners == {"bobs": "bob", "carols": "carol", "bobs2": "bob"}
    assert anonymous.get_database("nobodys").ownerName != "bob"


def test_upstream_down_fails_the_call_naming_it_and_the_next_call_after_it_is_back_works(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    port = free_port()
    proxy = build_service(proxy_settings(f"thrift://127.0.0.1:{port}"))
    proxy.start_background()
    client, transport = apache_client("127.0.0.1", proxy.port)
    try:
        with pytest.raises(T.MetaException) as exc:  # get_all_databases declares MetaException
            client.get_all_databases()
        assert f"thrift://127.0.0.1:{port}" in exc.value.message
        with pytest.raises(T.TApplicationException) as app_exc:  # declares none
            client.get_current_notificationEventId()
        assert f"thrift://127.0.0.1:{port}" in app_exc.value.message
        with running_service(pg_url, tmp_path / "warehouse", port=port):
            client.create_database(T.Database(name="first"))
            assert client.get_database("first").name == "first"
    finally:
        transport.close()
        proxy.stop(grace_seconds=5)


def test_an_upstream_restart_fails_at_most_the_call_in_flight(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    port = free_port()
    proxy = build_service(proxy_settings(f"thrift://127.0.0.1:{port}"))
    proxy.start_background()
    client, transport = apache_client("127.0.0.1", proxy.port)
    try:
        with running_service(pg_url, tmp_path / "warehouse", port=port):
            client.set_ugi("bob", [])
            client.create_database(T.Database(name="before"))
        # the upstream is gone and back: the pooled connection was cut while idle
        with running_service(pg_url, tmp_path / "warehouse", port=port):
            assert client.get_database("before").name == "before"
            client.create_database(T.Database(name="after"))
            # set_ugi was replayed on the new upstream connection
            assert client.get_database("after").ownerName == "bob"
        assert proxy.upstream is not None
    finally:
        transport.close()
        proxy.stop(grace_seconds=5)


def test_framed_upstream_and_framed_clients(pg_url: str, tmp_path: Path, T: Any) -> None:
    with running_service(pg_url, tmp_path / "warehouse", transport="framed") as upstream:
        settings = proxy_settings(
            f"thrift://127.0.0.1:{upstream.port}", transport="framed", upstream_transport="framed"
        )
        proxy = build_service(settings)
        proxy.start_background()
        client, transport = apache_client("127.0.0.1", proxy.port, framed=True)
        try:
            client.create_database(T.Database(name="framed"))
            assert client.get_database("framed").name == "framed"
        finally:
            transport.close()
            proxy.stop(grace_seconds=5)


def test_upstream_connections_are_reused_and_bounded(
    upstream: Service, connect: Any, T: Any
) -> None:
    proxy = build_service(
        proxy_settings(f"thrift://127.0.0.1:{upstream.port}", upstream_max_connections=1)
    )
    proxy.start_background()
    try:
        clients = [connect(proxy.port) for _ in range(3)]
        for i, c in enumerate(clients):
            c.set_ugi(f"user{i}", [])
            c.create_database(T.Database(name=f"db{i}"))
        for i, c in enumerate(clients):
            assert c.get_database(f"db{i}").ownerName == f"user{i}"
        assert proxy.upstream is not None and proxy.upstream.open_connections == 1
    finally:
        proxy.stop(grace_seconds=5)


def test_serve_with_upstream_opens_no_database_file_and_names_the_upstream(
    upstream: Service, tmp_path: Path, T: Any
) -> None:
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT), HMS_CACHE_PROXY_METRICS_PORT="off")
    log = tmp_path / "proxy.log"
    cmd = [sys.executable, "-m", "hms_cache_proxy", "serve", "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--upstream", f"thrift://127.0.0.1:{upstream.port}"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        client = None
        for _ in range(300):
            assert proc.poll() is None, log.read_text()
            try:
                client, transport = apache_client("127.0.0.1", port)
                break
            except Exception:  # noqa: BLE001 - not listening yet
                time.sleep(0.1)
        assert client is not None, log.read_text()
        try:
            client.create_database(T.Database(name="from_cli"))
            assert client.get_database("from_cli").name == "from_cli"
        finally:
            transport.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == 0, log.read_text()  # SIGTERM: a clean stop
    assert f"on upstream thrift://127.0.0.1:{upstream.port} (pass-through)" in log.read_text()
    assert not (tmp_path / "hms-cache-proxy.db").exists()  # the default database never opened


def test_healthz_follows_and_names_the_upstream_and_metrics_count_its_calls(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    port = free_port()
    settings = proxy_settings(f"thrift://127.0.0.1:{port}", metrics_port=0, health_cache_seconds=0)
    proxy = build_service(settings)
    proxy.start_background()

    def get(path: str) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.metrics_port, timeout=30)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()

    try:
        status, body = get("/healthz")
        down = json.loads(body)
        assert status == 503 and down["upstream"] == "error" and "database" not in down
        assert down["reason"].startswith("upstream: ")
        assert f"cannot connect to upstream thrift://127.0.0.1:{port}" in down["reason"]
        status, body = get("/readyz")  # ready once serving; nothing in it speaks of a database
        assert status == 200 and json.loads(body)["reason"] is None and "database" not in body
        with running_service(pg_url, tmp_path / "warehouse", port=port):
            status, body = get("/healthz")
            up = json.loads(body)
            assert status == 200 and up["upstream"] == "ok" and "upstream_seconds" in up
            assert "database" not in up and "database_seconds" not in up
            client, transport = apache_client("127.0.0.1", proxy.port)
            try:
                client.get_all_databases()
            finally:
                transport.close()
        _, text = get("/metrics")
        assert 'hms_upstream_calls_total{method="get_all_databases",outcome="ok"}' in text
        assert 'hms_upstream_call_seconds_count{method="get_all_databases"}' in text
        assert "hms_upstream_connections" in text
    finally:
        proxy.stop(grace_seconds=5)


def test_the_sasl_user_reaches_the_upstream_when_the_client_sends_no_set_ugi(
    upstream: Service,
) -> None:
    from hms_cache_proxy.idl import hms
    from tests.support.security import sasl_client

    settings = proxy_settings(
        f"thrift://127.0.0.1:{upstream.port}", sasl_enabled=True, sasl_users={"alice": "pw"}
    )
    proxy = build_service(settings)
    proxy.start_background()
    try:
        client = sasl_client(proxy.port, "alice", "pw")
        try:
            client.create_database(hms.Database(name="alices"))
            assert client.get_database("alices").ownerName == "alice"
        finally:
            client.close()
    finally:
        proxy.stop(grace_seconds=5)


def test_tls_to_the_upstream_checks_its_certificate(pg_url: str, tmp_path: Path, T: Any) -> None:
    from tests.support.security import make_pki

    pki = make_pki(tmp_path / "pki")
    tls = {"tls_cert_file": str(pki.server_cert), "tls_key_file": str(pki.server_key)}
    with running_service(pg_url, tmp_path / "warehouse", **tls) as upstream:
        uri = f"thrift://127.0.0.1:{upstream.port}"
        trusted = build_service(
            proxy_settings(uri, upstream_tls=True, upstream_tls_ca_file=str(pki.ca))
        )
        wrong_ca = build_service(
            proxy_settings(uri, upstream_tls=True, upstream_tls_ca_file=str(pki.other_ca))
        )
        for svc in (trusted, wrong_ca):
            svc.start_background()
        try:
            client, transport = apache_client("127.0.0.1", trusted.port)
            try:
                client.create_database(T.Database(name="over_tls"))
                assert client.get_database("over_tls").name == "over_tls"
            finally:
                transport.close()
            client, transport = apache_client("127.0.0.1", wrong_ca.port)
            try:
                with pytest.raises(T.MetaException) as exc:
                    client.get_all_databases()
                assert "TLS handshake failed: CERTIFICATE_VERIFY_FAILED" in exc.value.message
            finally:
                transport.close()
        finally:
            for svc in (trusted, wrong_ca):
                svc.stop(grace_seconds=5)


def test_mutual_tls_to_the_upstream_shows_the_client_certificate(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    """An upstream that requires a client certificate serves a proxy that shows one signed by
    the CA it trusts, and refuses one that shows none."""
    from tests.support.security import make_pki

    pki = make_pki(tmp_path / "pki")
    tls = {
        "tls_cert_file": str(pki.server_cert),
        "tls_key_file": str(pki.server_key),
        "tls_ca_file": str(pki.ca),
        "tls_client_auth": "required",
    }
    with running_service(pg_url, tmp_path / "warehouse", **tls) as upstream:
        uri = f"thrift://127.0.0.1:{upstream.port}"
        server_checked = {"upstream_tls": True, "upstream_tls_ca_file": str(pki.ca)}
        with_cert = build_service(
            proxy_settings(
                uri,
                upstream_tls_cert_file=str(pki.client_cert),
                upstream_tls_key_file=str(pki.client_key),
                **server_checked,
            )
        )
        without_cert = build_service(proxy_settings(uri, **server_checked))
        for svc in (with_cert, without_cert):
            svc.start_background()
        try:
            client, transport = apache_client("127.0.0.1", with_cert.port)
            try:
                client.create_database(T.Database(name="over_mutual_tls"))
                assert client.get_database("over_mutual_tls").name == "over_mutual_tls"
            finally:
                transport.close()
            client, transport = apache_client("127.0.0.1", without_cert.port)
            try:
                with pytest.raises(T.MetaException) as exc:
                    client.get_all_databases()
                # The upstream's refusal arrives as its alert or, when it closes first, as an
                # EOF: either way the call fails naming the upstream and TLS.
                assert f"upstream {uri}: TLS handshake failed" in exc.value.message
            finally:
                transport.close()
        finally:
            for svc in (with_cert, without_cert):
                svc.stop(grace_seconds=5)


def test_a_refused_client_certificate_names_the_settings_that_give_one() -> None:
    import ssl

    from hms_cache_proxy.server.upstream import _tls_error_text

    alert = ssl.SSLError(1, "[SSL: TLSV13_ALERT_CERTIFICATE_REQUIRED] certificate required")
    assert "set upstream_tls_cert_file and upstream_tls_key_file" in _tls_error_text(alert)
    other = ssl.SSLError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    assert "upstream_tls_cert_file" not in _tls_error_text(other)


def test_a_bad_upstream_client_certificate_stops_the_start(tmp_path: Path) -> None:
    from hms_cache_proxy.server.tls import TlsConfigError
    from tests.support.security import make_pki

    pki = make_pki(tmp_path / "pki")
    settings = proxy_settings(
        "thrift://127.0.0.1:1",
        upstream_tls=True,
        upstream_tls_cert_file=str(pki.client_cert),
        upstream_tls_key_file=str(pki.server_key),
    )
    with pytest.raises(TlsConfigError, match="upstream_tls_key_file|does not belong"):
        build_service(settings)


def test_sasl_plain_login_to_the_upstream(pg_url: str, tmp_path: Path, T: Any) -> None:
    sasl = {"sasl_enabled": True, "sasl_users": {"proxy": "secret"}}
    with running_service(pg_url, tmp_path / "warehouse", **sasl) as upstream:
        uri = f"thrift://127.0.0.1:{upstream.port}"
        good = build_service(
            proxy_settings(uri, upstream_sasl_user="proxy", upstream_sasl_password="secret")
        )
        bad = build_service(
            proxy_settings(uri, upstream_sasl_user="proxy", upstream_sasl_password="wrong")
        )
        for svc in (good, bad):
            svc.start_background()
        try:
            client, transport = apache_client("127.0.0.1", good.port)
            try:
                client.create_database(T.Database(name="over_sasl"))
                assert client.get_database("over_sasl").name == "over_sasl"
            finally:
                transport.close()
            client, transport = apache_client("127.0.0.1", bad.port)
            try:
                with pytest.raises(T.MetaException) as exc:
                    client.get_all_databases()
                assert "authentication failed for user 'proxy'" in exc.value.message
                assert uri in exc.value.message
            finally:
                transport.close()
        finally:
            for svc in (good, bad):
                svc.stop(grace_seconds=5)


class _DyingUpstream:
    """A listener that takes one call and then closes the connection without a reply (an
    upstream that crashes mid-call), or holds it unanswered (``close=False``). It serves one
    connection: the proxies of the tests using it run without the cache (whose event poller
    would open a connection of its own first)."""

    def __init__(self, port: int, close: bool = True) -> None:
        self.sock = socket.create_server(("127.0.0.1", port))
        self.close_it = close
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        conn.recv(65536)  # the call
        if self.close_it:
            conn.close()
        else:
            self.held.append(conn)

    def stop(self) -> None:
        self.sock.close()
        self.thread.join(timeout=30)
        for conn in self.held:
            conn.close()


def test_an_upstream_dying_mid_call_fails_that_call_and_the_next_one_works(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    port = free_port()
    # Pass-through alone: the cache's poller would open a connection of its own to the upstream.
    proxy = build_service(proxy_settings(f"thrift://127.0.0.1:{port}", upstream_cache=False))
    proxy.start_background()
    client, transport = apache_client("127.0.0.1", proxy.port)
    try:
        dying = _DyingUpstream(port)
        try:
            with pytest.raises(T.MetaException) as exc:
                client.get_all_databases()
        finally:
            dying.stop()
        assert exc.value.message == (
            f"upstream thrift://127.0.0.1:{port}: the upstream closed the connection"
        )
        with running_service(pg_url, tmp_path / "warehouse", port=port):
            assert client.get_all_databases() is not None
    finally:
        transport.close()
        proxy.stop(grace_seconds=5)


def test_an_upstream_that_does_not_answer_fails_the_call_after_upstream_timeout_seconds(
    T: Any,
) -> None:
    port = free_port()
    proxy = build_service(
        proxy_settings(
            f"thrift://127.0.0.1:{port}", upstream_timeout_seconds=0.5, upstream_cache=False
        )
    )
    proxy.start_background()
    client, transport = apache_client("127.0.0.1", proxy.port)
    silent = _DyingUpstream(port, close=False)
    try:
        with pytest.raises(T.MetaException) as exc:
            client.get_all_databases()
        assert "no reply within 0.5 s (upstream_timeout_seconds)" in exc.value.message
    finally:
        silent.stop()
        transport.close()
        proxy.stop(grace_seconds=5)


def test_a_call_finding_every_upstream_connection_busy_fails_after_upstream_pool_wait_seconds(
    T: Any,
) -> None:
    port = free_port()
    settings = proxy_settings(
        f"thrift://127.0.0.1:{port}",
        upstream_max_connections=1,
        upstream_pool_wait_seconds=0.5,
        upstream_cache=False,
    )
    proxy = build_service(settings)
    proxy.start_background()
    silent = _DyingUpstream(port, close=False)  # takes the one connection's call, never answers
    holder, holder_transport = apache_client("127.0.0.1", proxy.port)
    client, transport = apache_client("127.0.0.1", proxy.port)
    held_errors: list[BaseException] = []

    def held_call() -> None:
        try:
            holder.get_all_databases()
        except BaseException as exc:  # noqa: BLE001 - it fails once the upstream goes away
            held_errors.append(exc)

    holding = threading.Thread(target=held_call, daemon=True)
    holding.start()
    try:
        deadline = time.monotonic() + 60
        while not silent.held:  # the held call reached the upstream: its connection is busy
            assert time.monotonic() < deadline, "the held call never reached the upstream"
            time.sleep(0.01)
        busy = f"upstream thrift://127.0.0.1:{port}: every upstream connection is busy"
        with pytest.raises(T.MetaException) as meta:  # get_database declares MetaException
            client.get_database("any")
        assert meta.value.message.startswith(busy)
        assert "upstream_pool_wait_seconds" in meta.value.message
        with pytest.raises(TApplicationException) as app:  # declares no exception at all
            client.get_current_notificationEventId()
        assert app.value.type == TApplicationException.INTERNAL_ERROR
        assert str(app.value.message).startswith(busy)
        assert "upstream_pool_wait_seconds" in str(app.value.message)
        assert holding.is_alive()  # the held call was waited beside, not failed
    finally:
        silent.stop()
        holding.join(timeout=60)
        holder_transport.close()
        transport.close()
        proxy.stop(grace_seconds=5)
    assert held_errors  # it ended when the upstream closed its connection


def test_concurrent_clients_share_a_bounded_pool(upstream: Service, T: Any) -> None:
    proxy = build_service(
        proxy_settings(f"thrift://127.0.0.1:{upstream.port}", upstream_max_connections=2)
    )
    proxy.start_background()
    errors: list[BaseException] = []

    def work(i: int) -> None:
        client, transport = apache_client("127.0.0.1", proxy.port)
        try:
            client.create_database(T.Database(name=f"c{i}"))
            for _ in range(20):
                assert client.get_database(f"c{i}").name == f"c{i}"
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            transport.close()

    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors
        assert proxy.upstream is not None and 1 <= proxy.upstream.open_connections <= 2
    finally:
        proxy.stop(grace_seconds=5)


def test_compact_protocol_clients_through_to_a_compact_upstream(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    with running_service(pg_url, tmp_path / "warehouse", protocol="compact") as upstream:
        proxy = build_service(
            proxy_settings(f"thrift://127.0.0.1:{upstream.port}", protocol="compact")
        )
        proxy.start_background()
        client, transport = apache_client("127.0.0.1", proxy.port, compact=True)
        try:
            client.set_ugi("dora", [])
            client.create_database(T.Database(name="compact"))
            assert client.get_database("compact").ownerName == "dora"
            with pytest.raises(T.NoSuchObjectException):
                client.get_database("absent")
        finally:
            transport.close()
            proxy.stop(grace_seconds=5)
