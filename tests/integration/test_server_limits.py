"""The Thrift endpoint's limits, one by one, over real sockets.

Each refused request must cost its client the connection (closed promptly, one log line that
names the setting) and nothing else: a second client is served before and after. Arguments that
are readable but wrong get a PROTOCOL_ERROR answer and the connection stays usable. Sizes are
checked before anything is allocated: a declared 2 GB string must not move the server's memory.
"""

from __future__ import annotations

import logging
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TMessageType
from thrift.transport import TSocket, TTransport

from hms_cache_proxy.server import wire_decode
from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.server import running_service

LIMITS = {
    "max_message_bytes": 256 * 1024,
    "max_string_bytes": 4096,
    "max_container_elements": 100,
}

# -- building raw requests ---------------------------------------------------------------------

STOP = b"\x00"
T_BOOL, T_I32, T_STRING, T_STRUCT, T_MAP, T_SET, T_LIST = 2, 8, 11, 12, 13, 14, 15


def message(name: str, body: bytes, seqid: int = 1, mtype: int = TMessageType.CALL) -> bytes:
    n = name.encode()
    return struct.pack("!iI", -2147418112 | mtype, len(n)) + n + struct.pack("!i", seqid) + body


def field(ftype: int, fid: int, payload: bytes) -> bytes:
    return struct.pack("!bh", ftype, fid) + payload


def string(data: bytes, declared: int | None = None) -> bytes:
    return struct.pack("!i", len(data) if declared is None else declared) + data


def list_of(etype: int, items: list[bytes], declared: int | None = None) -> bytes:
    return struct.pack("!bi", etype, len(items) if declared is None else declared) + b"".join(items)


def get_database(name: bytes, declared: int | None = None) -> bytes:
    return message("get_database", field(T_STRING, 1, string(name, declared)) + STOP)


def get_partitions_by_names(names: list[bytes], declared: int | None = None) -> bytes:
    body = field(T_STRING, 1, string(b"default")) + field(T_STRING, 2, string(b"t"))
    body += field(T_LIST, 3, list_of(T_STRING, [string(n) for n in names], declared))
    return message("get_partitions_by_names", body + STOP)


# -- talking to the server -------------------------------------------------------------------


def raw(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.settimeout(10)
    return s


def send(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
    except OSError:
        pass  # the server may close before it has read everything; that is allowed


def closed_promptly(sock: socket.socket, within: float = 5.0) -> bool:
    """True when the server closes the connection without answering, within ``within`` s."""
    sock.settimeout(within)
    got = b""
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return got == b""
            got += data
    except ConnectionResetError:
        return got == b""
    except TimeoutError:
        return False
    finally:
        sock.close()


def reply_reader(sock: socket.socket) -> Any:
    t = TSocket.TSocket()
    t.handle = sock
    return TBinaryProtocol.TBinaryProtocol(TTransport.TBufferedTransport(t))


def read_reply(sock: socket.socket, proto: Any = None) -> tuple[str, int, Any]:
    """(name, message type, TApplicationException or the raw protocol for a REPLY)."""
    proto = proto or reply_reader(sock)
    name, mtype, _ = proto.readMessageBegin()
    if mtype == TMessageType.EXCEPTION:
        exc = TApplicationException()
        exc.read(proto)
        return name, mtype, exc
    return name, mtype, proto


@pytest.fixture
def svc(sqlite_url: str, tmp_path: Path) -> Iterator[Any]:
    with running_service(sqlite_url, tmp_path / "wh", **LIMITS) as s:
        yield s


@pytest.fixture
def other(svc: Any) -> Iterator[Any]:
    """A second, well-behaved client, connected before the bad one and used after it."""
    client, trans = apache_client("127.0.0.1", svc.port)
    assert client.get_all_databases() == ["default"]
    yield client
    assert "default" in client.get_all_databases()  # the same connection, still served
    trans.close()


def refused(caplog: pytest.LogCaptureFixture, setting: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.endswith("thrift_server")
        and "refused" in r.getMessage()
        and setting in r.getMessage()
    ]


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# -- limits --------------------------------------------------------------------------------------


def test_declared_huge_string_is_refused_before_allocation(
    svc: Any, other: Any, caplog: pytest.LogCaptureFixture
) -> None:
    before = rss_kb()
    for declared in (2**31 - 1, 1 << 30, LIMITS["max_string_bytes"] + 1):
        s = raw(svc.port)
        send(s, get_database(b"x" * 100, declared=declared))
        assert closed_promptly(s)
    assert rss_kb() - before < 20_000, "declared sizes moved the server's memory"
    lines = refused(caplog, "max_string_bytes")
    assert len(lines) == 3
    assert "string of 2147483647 bytes is longer than max_string_bytes = 4096" in lines[0]
    assert "'get_database'" in lines[0]


def test_string_at_the_limit_is_read(svc: Any, other: Any) -> None:
    mods = load_apache_modules()
    client, trans = apache_client("127.0.0.1", svc.port)
    try:
        with pytest.raises(mods.ttypes.NoSuchObjectException):
            client.get_database("d" * LIMITS["max_string_bytes"])
        assert client.get_all_databases() == ["default"]
    finally:
        trans.close()


def test_method_name_past_the_string_limit(svc: Any, other: Any, caplog: Any) -> None:
    s = raw(svc.port)
    send(s, struct.pack("!ii", -2147418111, 1 << 30) + b"get_")
    assert closed_promptly(s)
    assert refused(caplog, "method name of 1073741824 bytes")


@pytest.mark.parametrize("declared", [2**31 - 1, LIMITS["max_container_elements"] + 1])
def test_container_past_the_limit(svc: Any, other: Any, caplog: Any, declared: int) -> None:
    before = rss_kb()
    s = raw(svc.port)
    send(s, get_partitions_by_names([b"a=1"] * 3, declared=declared))
    assert closed_promptly(s)
    assert rss_kb() - before < 20_000
    (line,) = refused(caplog, "max_container_elements")
    assert "container of more than max_container_elements = 100 elements" in line


@pytest.mark.parametrize("kind", [T_MAP, T_SET])
def test_maps_and_sets_past_the_limit(svc: Any, other: Any, caplog: Any, kind: int) -> None:
    # an unknown field (id 99) of a container type: skipped fields are bounded as well
    header = (
        struct.pack("!bbi", T_STRING, T_STRING, 2**31 - 1)
        if kind == T_MAP
        else (struct.pack("!bi", T_I32, 2**31 - 1))
    )
    s = raw(svc.port)
    send(s, message("get_all_databases", field(kind, 99, header + b"\x00" * 64)))
    assert closed_promptly(s)
    assert refused(caplog, "max_container_elements")


def test_container_at_the_limit_is_read(svc: Any, other: Any) -> None:
    s = raw(svc.port)
    send(s, get_partitions_by_names([b"a=1"] * LIMITS["max_container_elements"]))
    name, mtype, _ = read_reply(s)  # the table does not exist: a reply, not a refusal
    assert (name, mtype) == ("get_partitions_by_names", TMessageType.REPLY)
    s.close()


@pytest.mark.parametrize(
    "body",
    [
        field(T_STRING, 1, struct.pack("!i", -1)),
        field(T_LIST, 3, struct.pack("!bi", T_STRING, -5)),
        field(T_MAP, 9, struct.pack("!bbi", T_STRING, T_STRING, -(2**31))),
    ],
    ids=["string", "list", "map"],
)
def test_negative_sizes(svc: Any, other: Any, caplog: Any, body: bytes) -> None:
    s = raw(svc.port)
    send(s, message("get_partitions_by_names", body + STOP))
    assert closed_promptly(s)
    assert refused(caplog, "negative size")


def test_message_past_the_limit(svc: Any, other: Any, caplog: Any) -> None:
    """Many strings, each under the string limit, adding up past the message limit."""
    names = [b"n" * 4000] * 100  # ~400 KB > 256 KB; 100 elements is within the container limit
    s = raw(svc.port)
    send(s, get_partitions_by_names(names))
    assert closed_promptly(s)
    (line,) = refused(caplog, "max_message_bytes")
    assert "message larger than max_message_bytes = 262144" in line


def test_large_message_within_the_limits_is_read(svc: Any, other: Any, T: Any) -> None:
    """Strings spanning the reader's 64 KiB windows, many windows per message."""
    client, trans = apache_client("127.0.0.1", svc.port)
    try:
        big = {f"k{i}": "v" * 4000 for i in range(50)}  # ~200 KB, under 256 KB
        client.create_database(T.Database(name="big", parameters=big))
        assert client.get_database("big").parameters == big
    finally:
        trans.close()


def test_nesting_deeper_than_64(svc: Any, other: Any, caplog: Any) -> None:
    nested = struct.pack("!bi", T_LIST, 1) * 100 + struct.pack("!bi", T_I32, 0)
    s = raw(svc.port)
    send(s, message("get_all_databases", field(T_LIST, 7, nested) + STOP))
    assert closed_promptly(s)
    assert refused(caplog, "nested deeper than 64")


@pytest.mark.parametrize("code", [1, 5, 7, 9, 17, 19, 127])
def test_unknown_type_codes(svc: Any, other: Any, caplog: Any, code: int) -> None:
    s = raw(svc.port)
    send(s, message("get_all_databases", field(code, 3, b"\x00" * 32) + STOP))
    assert closed_promptly(s)
    assert refused(caplog, "unknown Thrift type code")


def test_not_thrift_at_all(svc: Any, other: Any, caplog: Any) -> None:
    s = raw(svc.port)
    send(s, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert closed_promptly(s)
    assert refused(caplog, "not a strict Thrift binary message (first word 0x47455420)")


# -- readable but wrong: answered, the connection stays usable ------------------------------------


def _call_then_check_same_connection(port: int, request: bytes) -> TApplicationException:
    s = raw(port)
    s.sendall(request)
    name, mtype, exc = read_reply(s)
    assert mtype == TMessageType.EXCEPTION, name
    s.sendall(message("get_all_databases", STOP, seqid=2))
    name2, mtype2, _ = read_reply(s)
    assert (name2, mtype2) == ("get_all_databases", TMessageType.REPLY)
    s.close()
    return exc


def test_invalid_utf8_becomes_replacement_characters(svc: Any, other: Any) -> None:
    """As in Java's server (new String(bytes, UTF_8)): the call runs, with U+FFFD."""
    mods = load_apache_modules()
    s = raw(svc.port)
    s.sendall(get_database(b"bad \xff\xfe name"))
    name, mtype, proto = read_reply(s)
    assert (name, mtype) == ("get_database", TMessageType.REPLY)
    result = mods.ThriftHiveMetastore.get_database_result()
    result.read(proto)
    assert "bad \ufffd\ufffd name" in result.o1.message
    s.close()


def test_element_type_against_the_idl_is_answered(svc: Any, other: Any) -> None:
    body = field(T_STRING, 1, string(b"default")) + field(T_STRING, 2, string(b"t"))
    body += field(T_LIST, 3, list_of(T_I32, [b"\x00\x00\x00\x01"]))  # list<string> in the IDL
    exc = _call_then_check_same_connection(
        svc.port, message("get_partitions_by_names", body + STOP)
    )
    assert exc.type == TApplicationException.PROTOCOL_ERROR
    assert "element type contradicts the IDL" in exc.message


def test_struct_where_a_list_is_expected_is_skipped(svc: Any, other: Any) -> None:
    """A field of the wrong type is skipped (as Thrift does); the call then runs without it."""
    body = field(T_STRING, 1, string(b"default")) + field(T_STRING, 2, string(b"t"))
    body += field(T_STRUCT, 3, field(T_I32, 1, b"\x00\x00\x00\x07") + STOP)
    s = raw(svc.port)
    s.sendall(message("get_partitions_by_names", body + STOP))
    name, mtype, _ = read_reply(s)
    assert (name, mtype) == ("get_partitions_by_names", TMessageType.REPLY)
    s.close()


def test_missing_required_arguments_are_answered(svc: Any, other: Any) -> None:
    s = raw(svc.port)
    s.sendall(message("get_table", STOP))  # dbname and tbl_name absent
    name, mtype, _ = read_reply(s)
    assert name == "get_table" and mtype in (TMessageType.REPLY, TMessageType.EXCEPTION)
    s.close()


def test_pipelined_messages_in_one_send(svc: Any, other: Any) -> None:
    s = raw(svc.port)
    s.sendall(b"".join(message("get_all_databases", STOP, seqid=i) for i in range(5)))
    proto = reply_reader(s)  # one buffer: replies may arrive together
    for _ in range(5):
        name, mtype, _ = read_reply(s, proto)
        assert (name, mtype) == ("get_all_databases", TMessageType.REPLY)
        mods = load_apache_modules()
        mods.ThriftHiveMetastore.get_all_databases_result().read(proto)
    s.close()


# -- clients that go quiet -----------------------------------------------------------------------


def test_idle_and_stalled_connections_are_closed(
    sqlite_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hms_cache_proxy.server.thrift_server")
    with running_service(
        sqlite_url, tmp_path / "wh", client_timeout_seconds=1.5, message_timeout_seconds=0.5
    ) as s:
        client, trans = apache_client("127.0.0.1", s.port)
        try:
            # idle between calls for less than the time-out: kept
            for _ in range(3):
                assert client.get_all_databases() == ["default"]
                time.sleep(0.8)
            # stalled mid-message: closed after message_timeout_seconds
            stalled = raw(s.port)
            stalled.sendall(get_database(b"default")[:10])
            t0 = time.monotonic()
            assert closed_promptly(stalled, within=5)
            assert 0.4 < time.monotonic() - t0 < 1.4
            assert client.get_all_databases() == ["default"]
            # connected, never sent anything: closed after client_timeout_seconds
            silent = raw(s.port)
            t0 = time.monotonic()
            assert closed_promptly(silent, within=5)
            assert 1.4 < time.monotonic() - t0 < 2.5
        finally:
            trans.close()
        fresh, trans = apache_client("127.0.0.1", s.port)
        try:
            assert fresh.get_all_databases() == ["default"]
        finally:
            trans.close()
        messages = [r.getMessage() for r in caplog.records]
        assert any("stalled mid-message for" in m for m in messages)
        assert any(": idle for" in m for m in messages)


# -- other transports and protocols ---------------------------------------------------------------


@pytest.mark.parametrize("kw", [{"transport": "framed"}, {"protocol": "compact"}])
def test_limits_hold_for_framed_and_compact(
    sqlite_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, kw: dict[str, str]
) -> None:
    with running_service(sqlite_url, tmp_path / "wh", **LIMITS, **kw) as s:
        framed, compact = kw.get("transport") == "framed", kw.get("protocol") == "compact"
        good, trans = apache_client("127.0.0.1", s.port, framed=framed, compact=compact)
        try:
            assert good.get_all_databases() == ["default"]
            if compact:  # compact header, then field 1 (delta 1, binary 8) of length 2**31-1
                name = b"get_database"
                bad = b"\x82\x21\x01" + bytes([len(name)]) + name + b"\x18\xff\xff\xff\xff\x07"
            else:  # one frame that declares more than max_message_bytes
                bad = struct.pack("!i", 2**31 - 1) + get_database(b"x")
            sock = raw(s.port)
            send(sock, bad)
            assert closed_promptly(sock)
            assert good.get_all_databases() == ["default"]
        finally:
            trans.close()
        assert refused(caplog, "max_string_bytes" if compact else "max_message_bytes")


def test_engine_is_the_c_decoder() -> None:
    """The suite's machine has thrift's C extension; without it the server still works
    (pure Python, tested in tests/unit/test_wire.py) but much slower."""
    assert wire_decode.ENGINE == "fastbinary"


def test_client_that_does_not_read_replies_is_closed(
    sqlite_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, T: Any
) -> None:
    with running_service(sqlite_url, tmp_path / "wh", message_timeout_seconds=0.5) as s:
        client, trans = apache_client("127.0.0.1", s.port)
        try:
            params = {f"k{i}": "v" * 1000 for i in range(500)}  # a ~500 KB reply
            client.create_database(T.Database(name="wide", parameters=params))
            hog = raw(s.port)
            request = message("get_database", field(T_STRING, 1, string(b"wide")) + STOP)
            hog.settimeout(0.2)
            sent = 0
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # ask for replies, never read them
                try:
                    hog.sendall(request)
                    sent += 1
                except (TimeoutError, OSError):
                    break
            time.sleep(1.5)
            assert client.get_all_databases() == ["default", "wide"]
        finally:
            trans.close()
        assert any("did not take our reply for 0.5 s" in r.getMessage() for r in caplog.records)
        hog.close()


# -- map<list<string>,string> ---------------------------------------------------------------------


def _read_skewed_info(self: Any, iprot: Any) -> None:
    """Apache's generated SkewedInfo.read keys the location map by lists, which Python cannot
    hash; this is that reader with tuple keys (Java reads the same bytes as List<String>)."""

    def strings() -> list[str]:
        _, size = iprot.readListBegin()
        values = [iprot.readString() for _ in range(size)]
        iprot.readListEnd()
        return values

    iprot.readStructBegin()
    while True:
        _, ftype, fid = iprot.readFieldBegin()
        if ftype == 0:
            break
        if fid == 1 and ftype == T_LIST:
            self.skewedColNames = strings()
        elif fid == 2 and ftype == T_LIST:
            _, size = iprot.readListBegin()
            self.skewedColValues = [strings() for _ in range(size)]
            iprot.readListEnd()
        elif fid == 3 and ftype == T_MAP:
            _, _, size = iprot.readMapBegin()
            self.skewedColValueLocationMaps = {
                tuple(strings()): iprot.readString() for _ in range(size)
            }
            iprot.readMapEnd()
        else:
            iprot.skip(ftype)
        iprot.readFieldEnd()
    iprot.readStructEnd()


def test_skewed_value_locations_over_the_wire(
    svc: Any, other: Any, T: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A create_table holding SkewedInfo.skewedColValueLocationMaps (map<list<string>,string>)
    is decoded (tuple keys), stored, and sent back in the form Apache's (and Java's) code reads."""
    monkeypatch.setattr(T.SkewedInfo, "read", _read_skewed_info)
    wh = (tmp_path / "wh").as_uri()
    locations = {
        ("alpha", "true"): f"{wh}/skewed/name=alpha/flag=true",
        ("beta", "false"): f"{wh}/b",
    }
    table = T.Table(
        tableName="skewed",
        dbName="default",
        owner="alice",
        sd=T.StorageDescriptor(
            cols=[
                T.FieldSchema(name="name", type="string"),
                T.FieldSchema(name="flag", type="boolean"),
            ],
            inputFormat="org.apache.hadoop.mapred.TextInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            serdeInfo=T.SerDeInfo(
                name="s",
                serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                parameters={},
            ),
            skewedInfo=T.SkewedInfo(
                skewedColNames=["name", "flag"],
                skewedColValues=[["alpha", "true"], ["beta", "false"]],
                skewedColValueLocationMaps=locations,
            ),
            storedAsSubDirectories=True,
        ),
        partitionKeys=[],
        parameters={},
        tableType="MANAGED_TABLE",
    )
    client, trans = apache_client("127.0.0.1", svc.port)
    try:
        client.create_table(table)
        got = client.get_table("default", "skewed").sd.skewedInfo
        assert got.skewedColValueLocationMaps == locations
        assert got.skewedColValues == [["alpha", "true"], ["beta", "false"]]
    finally:
        trans.close()
