"""The raw-bytes benchmark client finds exactly where each reply ends, without decoding it."""

from __future__ import annotations

import ctypes
import socket
import struct
import threading

import pytest
from thriftpy2.protocol.cybin import TCyBinaryProtocol
from thriftpy2.thrift import TMessageType
from thriftpy2.transport.memory import TCyMemoryBuffer

from hms_cache_proxy.bench import skipper
from hms_cache_proxy.bench.cases import BENCH_DB, partitions, table
from hms_cache_proxy.bench.rawclient import (
    RawCallError,
    RawClient,
    encode_call,
    message_end,
)
from hms_cache_proxy.idl import hms, service


def _reply(method: str, **result: object) -> bytes:
    buf = TCyMemoryBuffer()
    proto = TCyBinaryProtocol(buf)
    proto.write_message_begin(method, TMessageType.REPLY, 0)
    proto.write_struct(getattr(service, f"{method}_result")(**result))
    proto.write_message_end()
    buf.flush()
    return buf.getvalue()


def _canned_server(replies: list[bytes]) -> tuple[int, threading.Thread]:
    """Answers each request (read whole, by its known end) with the next canned reply."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with conn, listener:
            pending = b""
            for reply in replies:
                while True:
                    try:
                        end = message_end(pending)
                        if end <= len(pending):
                            break
                    except (IndexError, ValueError, struct.error):
                        pass
                    pending += conn.recv(65536)
                pending = pending[end:]
                conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return port, thread


def test_message_end_walks_a_large_reply_exactly() -> None:
    reply = _reply("get_partitions", success=partitions("t", 0, 500))
    assert message_end(reply) == len(reply)
    assert message_end(reply + b"trailing") == len(reply)


def test_encode_call_is_a_complete_message() -> None:
    request = encode_call("get_table", {"dbname": BENCH_DB, "tbl_name": "t"})
    assert message_end(request) == len(request)


@pytest.mark.parametrize("walker", ["c", "cython"])
def test_raw_client_reads_back_to_back_replies_and_reports_exceptions(walker: str) -> None:
    if walker == "c" and skipper.load() is None:
        pytest.skip("no C compiler to build skipper.c")
    big = _reply("get_partitions", success=partitions("t", 0, 2000))
    small = _reply("get_table", success=table("t"))
    failed = _reply("get_table", o2=hms.NoSuchObjectException(message="no such table"))
    void = _reply("alter_table")
    port, thread = _canned_server([big, small, big, failed, small, void])
    client = RawClient("127.0.0.1", port, walker=walker)
    try:
        request = encode_call(
            "get_partitions", {"db_name": BENCH_DB, "tbl_name": "t", "max_parts": -1}
        )
        client.call(request)
        client.call(request)
        client.call(request)
        with pytest.raises(RawCallError):
            client.call(request)
        client.call(request)  # the connection is still in step after an exception reply
        client.call(request)  # a void call's empty result
    finally:
        client.close()
    thread.join(timeout=5)


def test_c_walker_finds_the_end_however_the_reply_is_cut() -> None:
    lib = skipper.load()
    if lib is None:
        pytest.skip("no C compiler to build skipper.c")
    reply = _reply("get_partitions", success=partitions("t", 0, 50))
    stats = _reply(
        "get_table",
        success=hms.Table(tableName="t", parameters={"a": "b"}, retention=3, temporary=True),
    )
    walker = skipper.Walker(lib)
    for data in (reply, stats):
        for chunk in (1, 2, 3, 7, 64, 4096, len(data)):
            walker.reset()
            buf = ctypes.create_string_buffer(len(data) + 16)
            pending = b""
            done = False
            ended_at = 0
            for i in range(0, len(data), chunk):
                pending += data[i : i + chunk]
                ctypes.memmove(buf, pending, len(pending))
                used, done = walker.feed(ctypes.addressof(buf), len(pending))
                ended_at = min(i + chunk, len(data)) - (len(pending) - used)
                pending = pending[used:]
                if done:
                    break
            assert done, chunk
            assert ended_at == len(data), chunk
