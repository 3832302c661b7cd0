"""The Thrift endpoint under good and bad clients: wire options, unknown methods, garbage,
oversized messages, fb303, concurrency. Real sockets and Apache Thrift's Python client."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TMessageType
from thrift.transport import TSocket, TTransport

from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.server import running_service


def _raw(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.settimeout(5)
    return s


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    except (TimeoutError, ConnectionResetError):
        pass
    return b"".join(chunks)


def test_unknown_method_answers_and_connection_stays_usable(service: object) -> None:
    mods = load_apache_modules()
    sock = TSocket.TSocket("127.0.0.1", service.port)  # type: ignore[attr-defined]
    trans = TTransport.TBufferedTransport(sock)
    proto = TBinaryProtocol.TBinaryProtocol(trans)
    trans.open()
    try:
        proto.writeMessageBegin("no_such_method", TMessageType.CALL, 7)
        proto.writeStructBegin("args")
        proto.writeFieldStop()
        proto.writeStructEnd()
        proto.writeMessageEnd()
        trans.flush()
        name, mtype, seqid = proto.readMessageBegin()
        assert (name, mtype, seqid) == ("no_such_method", TMessageType.EXCEPTION, 7)
        exc = TApplicationException()
        exc.read(proto)
        proto.readMessageEnd()
        assert exc.type == TApplicationException.UNKNOWN_METHOD
        assert exc.message == "Invalid method name: 'no_such_method'"
        # the same connection still answers real calls
        client = mods.ThriftHiveMetastore.Client(proto)
        assert client.get_all_databases() == ["default"]
    finally:
        trans.close()


def test_garbage_closes_only_that_connection(service: object, client: object) -> None:
    port = service.port  # type: ignore[attr-defined]
    bad = _raw(port)
    bad.sendall(b"\x80\x01\x00\x01" + b"\xff" * 64)  # strict header, then nonsense
    bad.shutdown(socket.SHUT_WR)
    _read_all(bad)  # the server answers or closes; it must not hang
    bad.close()
    truncated = _raw(port)
    truncated.sendall(struct.pack("!i", -2147418111) + struct.pack("!i", 9) + b"get_ta")
    truncated.close()
    assert client.get_all_databases() == ["default"]  # type: ignore[attr-defined]


def test_wrong_field_types_are_skipped_not_fatal(service: object) -> None:
    """A call whose arguments have unexpected types is read (fields skipped) and answered."""
    sock = TSocket.TSocket("127.0.0.1", service.port)  # type: ignore[attr-defined]
    trans = TTransport.TBufferedTransport(sock)
    proto = TBinaryProtocol.TBinaryProtocol(trans)
    trans.open()
    try:
        proto.writeMessageBegin("get_database", TMessageType.CALL, 1)
        proto.writeStructBegin("args")
        proto.writeFieldBegin("name", 8, 1)  # i32 where a string is declared
        proto.writeI32(42)
        proto.writeFieldEnd()
        proto.writeFieldStop()
        proto.writeStructEnd()
        proto.writeMessageEnd()
        trans.flush()
        mods = load_apache_modules()
        client = mods.ThriftHiveMetastore.Client(proto)
        with pytest.raises(mods.ttypes.MetaException):
            client.recv_get_database()
        assert client.get_all_databases() == ["default"]
    finally:
        trans.close()


def test_oversized_message_is_refused(tmp_path: object, sqlite_url: str) -> None:
    with running_service(sqlite_url, tmp_path / "wh", max_message_bytes=64 * 1024) as svc:  # type: ignore[operator]
        s = _raw(svc.port)
        name = b"get_database"
        header = struct.pack("!i", -2147418111) + struct.pack("!i", len(name)) + name
        header += struct.pack("!i", 1)  # seqid
        # field 1, string, declared length 100 MB, then send 1 MB of it
        header += b"\x0b" + struct.pack("!h", 1) + struct.pack("!i", 100 * 1024 * 1024)
        s.sendall(header)
        try:
            for _ in range(16):
                s.sendall(b"a" * 65536)
        except OSError:
            pass  # closed by the server, as it should be
        assert _read_all(s) == b""
        s.close()
        client, trans = apache_client("127.0.0.1", svc.port)
        try:
            assert client.get_all_databases() == ["default"]
        finally:
            trans.close()


def test_framed_transport_and_compact_protocol(tmp_path: object, sqlite_url: str) -> None:
    for kwargs in ({"transport": "framed"}, {"protocol": "compact"}):
        with running_service(sqlite_url, tmp_path / "wh", **kwargs) as svc:  # type: ignore[operator]
            client, trans = apache_client(
                "127.0.0.1",
                svc.port,
                framed=kwargs.get("transport") == "framed",
                compact=kwargs.get("protocol") == "compact",
            )
            try:
                assert client.get_all_databases() == ["default"]
                assert client.get_database("default").name == "default"
            finally:
                trans.close()


def test_fb303_calls(service: object, client: object) -> None:
    mods = load_apache_modules()
    c = client
    assert c.getStatus() == mods.fb303_ttypes.fb_status.ALIVE  # type: ignore[attr-defined]
    assert c.getName() == "hms-cache-proxy"  # type: ignore[attr-defined]
    assert 0 < c.aliveSince() <= int(time.time())  # type: ignore[attr-defined]
    assert isinstance(c.getCounters(), dict)  # type: ignore[attr-defined]
    c.shutdown()  # type: ignore[attr-defined]  # oneway: ends the session, never the server
    other, trans = apache_client("127.0.0.1", service.port)  # type: ignore[attr-defined]
    try:
        assert other.get_all_databases() == ["default"]
    finally:
        trans.close()


def test_session_and_config_calls(client: object, T: object) -> None:
    c = client
    assert c.set_ugi("alice", ["eng"]) == ["eng", "alice"]  # type: ignore[attr-defined]
    assert c.get_config_value("hive.metastore.warehouse.dir", "x").startswith("file:")  # type: ignore[attr-defined]
    assert c.get_config_value("hive.no.such.key", "fallback") == "fallback"  # type: ignore[attr-defined]
    with pytest.raises(T.ConfigValSecurityException):  # type: ignore[attr-defined]
        c.get_config_value("javax.jdo.option.ConnectionPassword", "")  # type: ignore[attr-defined]
    key = "hive.metastore.disallow.incompatible.col.type.changes"
    c.setMetaConf(key, "false")  # type: ignore[attr-defined]
    assert c.getMetaConf(key) == "false"  # type: ignore[attr-defined]
    with pytest.raises(T.MetaException):  # type: ignore[attr-defined]
        c.setMetaConf("javax.jdo.option.ConnectionURL", "x")  # type: ignore[attr-defined]
    uuid1 = c.get_metastore_db_uuid()  # type: ignore[attr-defined]
    assert len(uuid1) == 36 and c.get_metastore_db_uuid() == uuid1  # type: ignore[attr-defined]


def test_meta_conf_is_per_connection(connect: object) -> None:
    a, b = connect(), connect()  # type: ignore[operator]
    key = "hive.metastore.try.direct.sql"
    a.setMetaConf(key, "false")
    assert a.getMetaConf(key) == "false"
    assert b.getMetaConf(key) == "true"


def test_many_concurrent_clients(service: object, T: object) -> None:
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            c, trans = apache_client("127.0.0.1", service.port)  # type: ignore[attr-defined]
            try:
                name = f"conc_{i}"
                c.create_database(T.Database(name=name, description=str(i)))  # type: ignore[attr-defined]
                for _ in range(20):
                    assert c.get_database(name).description == str(i)
                assert name in c.get_all_databases()
            finally:
                trans.close()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    c, trans = apache_client("127.0.0.1", service.port)  # type: ignore[attr-defined]
    try:
        assert sorted(d for d in c.get_all_databases() if d.startswith("conc_")) == sorted(
            f"conc_{i}" for i in range(16)
        )
    finally:
        trans.close()
