"""Protocol fuzzing against a running server (a real `serve` process).

Hypothesis sends random bytes, valid requests mutated (bit flips, truncations, length fields
overwritten with hostile sizes, bytes inserted), random method names with random argument
structs of random field types, and huge declared string and container sizes. After every case:

- the server ended that exchange by itself (answered, or closed) within a few seconds, once the
  client had sent everything: nothing hangs;
- a second client, connected for the whole run, is still served (get_all_databases), and every
  25 cases a fresh connection is served too;
- every 10 cases the server's resident memory (VmRSS) stays under a bound;
- at the end the process is alive and its log holds no connection-level "unexpected error".

The short run is part of the suite. The long run is the same test with more cases:

    HMS_FUZZ_EXAMPLES=20000 .venv/bin/python -m pytest tests/fuzz -q

(HMS_FUZZ_SEED=<n> picks another sequence of cases; without it the short run is deterministic.)
Results of the long run are recorded in docs/robustness.md.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from thriftpy2.protocol import TCompactProtocol
from thriftpy2.protocol.cybin import TCyBinaryProtocol
from thriftpy2.thrift import TMessageType
from thriftpy2.transport.memory import TCyMemoryBuffer, TMemoryBuffer

from hms_cache_proxy.config import Settings
from hms_cache_proxy.idl import hms, service
from tests.support.apache_thrift import apache_client
from tests.support.server import ServerProcess

EXAMPLES = int(os.environ.get("HMS_FUZZ_EXAMPLES", "300"))
SEED = os.environ.get("HMS_FUZZ_SEED")
RSS_GROWTH_BOUND_KB = 150 * 1024
CASE_DEADLINE = 8.0

LIMITS = {
    "max_message_bytes": 1024 * 1024,
    "max_string_bytes": 64 * 1024,
    "max_container_elements": 10_000,
    "client_timeout_seconds": 60,
    "message_timeout_seconds": 3,
}

MODES = {
    "binary": {},
    "framed": {"transport": "framed"},
    "compact": {"protocol": "compact"},
}


# -- the server -----------------------------------------------------------------------------------


class Target:
    def __init__(self, proc: ServerProcess, mode: str, log_path: Path) -> None:
        self.proc = proc
        self.mode = mode
        self.log_path = log_path
        self.framed = mode == "framed"
        self.compact = mode == "compact"
        self.watchdog, self._trans = self.connect()
        self.baseline_kb = self.rss_kb()
        self.peak_kb = self.baseline_kb
        self.cases = 0

    def connect(self) -> tuple[Any, Any]:
        return apache_client("127.0.0.1", self.proc.port, framed=self.framed, compact=self.compact)

    def rss_kb(self) -> int:
        status = Path(f"/proc/{self.proc.proc.pid}/status").read_text()
        return next(int(x.split()[1]) for x in status.splitlines() if x.startswith("VmRSS:"))

    def check(self) -> None:
        """The server is alive, serves the long-lived client, and (now and then) a new one."""
        assert self.proc.proc.poll() is None, "the server process died"
        assert self.watchdog.get_all_databases() == ["default"]
        self.cases += 1
        if self.cases % 25 == 0:
            fresh, trans = self.connect()
            try:
                assert fresh.get_all_databases() == ["default"]
            finally:
                trans.close()
        if self.cases % 10 == 0:
            rss = self.rss_kb()
            self.peak_kb = max(self.peak_kb, rss)
            assert rss - self.baseline_kb < RSS_GROWTH_BOUND_KB, (
                f"server RSS grew from {self.baseline_kb} kB to {rss} kB"
            )

    def close(self) -> None:
        self._trans.close()


def _start(mode: str, d: Path) -> ServerProcess:
    conf = {**LIMITS, **MODES[mode], "log_level": "INFO"}
    if "metrics_port" in Settings.model_fields:
        conf["metrics_port"] = None
    cfg = d / "conf.yaml"
    cfg.write_text("".join(f"{k}: {'null' if v is None else v}\n" for k, v in conf.items()))
    return ServerProcess(
        f"sqlite:///{d / 'm.db'}", d / "wh", d / "server.log", "--config", str(cfg)
    )


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServerProcess]]:
    """One server per wire mode."""
    procs = {m: _start(m, tmp_path_factory.mktemp(f"fuzz-{m}")) for m in MODES}
    try:
        yield procs
    finally:
        for p in procs.values():
            p.stop()


@pytest.fixture(params=list(MODES))
def target(request: pytest.FixtureRequest, servers: dict[str, ServerProcess]) -> Iterator[Target]:
    mode = request.param
    proc = servers[mode]
    t = Target(proc, mode, proc.log_path)
    try:
        yield t
        log = proc.log_path.read_text(errors="replace")
        assert "unexpected error" not in log, log[-4000:]
        print(
            f"\n[{mode}] {t.cases} cases; server RSS {t.baseline_kb} kB at start, "
            f"peak {t.peak_kb} kB; refused {log.count('refused ')}, "
            f"undeclared handler errors {log.count('failed with an undeclared')}"
        )
    finally:
        t.close()


# -- encoding requests ----------------------------------------------------------------------------


def encode(name: str, args: Any, compact: bool, seqid: int = 1) -> bytes:
    if compact:
        buf = TMemoryBuffer()
        p = TCompactProtocol(buf)
    else:
        buf = TCyMemoryBuffer()
        p = TCyBinaryProtocol(buf)
    p.write_message_begin(name, TMessageType.CALL, seqid)
    p.write_struct(args)
    p.write_message_end()
    return buf.getvalue()


def templates(compact: bool) -> list[bytes]:
    sd = hms.StorageDescriptor(
        cols=[hms.FieldSchema(name="a", type="string", comment="c")],
        location="file:/tmp/wh/t",
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=hms.SerDeInfo(name="s", serializationLib="x", parameters={"k": "v"}),
        skewedInfo=hms.SkewedInfo(
            skewedColNames=["a"],
            skewedColValues=[["1"]],
            skewedColValueLocationMaps={("1",): "file:/tmp/wh/t/a=1"},
        ),
        bucketCols=[],
        sortCols=[hms.Order(col="a", order=1)],
        parameters={},
    )
    part = hms.Partition(values=["1"], dbName="default", tableName="t", sd=sd, parameters={})
    calls = [
        ("get_all_databases", service.get_all_databases_args()),
        ("get_database", service.get_database_args(name="default")),
        ("get_table", service.get_table_args(dbname="default", tbl_name="t")),
        ("get_databases", service.get_databases_args(pattern="*")),
        (
            "get_partitions_by_names",
            service.get_partitions_by_names_args(db_name="default", tbl_name="t", names=["a=1"]),
        ),
        ("add_partitions", service.add_partitions_args(new_parts=[part, part])),
        (
            "create_table",
            service.create_table_args(
                tbl=hms.Table(tableName="fz", dbName="nodb", sd=sd, parameters={"p": "q"})
            ),
        ),
        ("getStatus", service.getStatus_args()),
    ]
    return [encode(n, a, compact) for n, a in calls]


# -- strategies -----------------------------------------------------------------------------------

HOSTILE = [0, -1, 1, 2**31 - 1, -(2**31), 2**30, 65536, 65537, 10_001, 1024 * 1024 + 1, 255]
TYPES = [2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15]


@st.composite
def mutated(draw: st.DrawFn, base: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(base)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "size", "insert", "delete", "byte"]))
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        if op == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[i:]
        elif op == "size":
            data[i : i + 4] = struct.pack("!i", draw(st.sampled_from(HOSTILE)))
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[i : i + draw(st.integers(1, 8))]
        else:
            data[i] = draw(st.sampled_from([0, 1, 5, 11, 12, 13, 14, 15, 16, 18, 0x7F, 0xFF]))
    return bytes(data)


_SCALARS = st.one_of(
    st.tuples(st.just(2), st.binary(min_size=1, max_size=1)),
    st.tuples(st.just(3), st.binary(min_size=1, max_size=1)),
    st.tuples(st.just(6), st.binary(min_size=2, max_size=2)),
    st.tuples(st.just(8), st.binary(min_size=4, max_size=4)),
    st.tuples(st.just(10), st.binary(min_size=8, max_size=8)),
    st.tuples(st.just(4), st.binary(min_size=8, max_size=8)),
    st.binary(max_size=24).map(lambda b: (11, struct.pack("!i", len(b)) + b)),
)


def _list(items: list[tuple[int, bytes]], kind: int) -> tuple[int, bytes]:
    etype = items[0][0] if items else 11
    same = [e for t, e in items if t == etype]
    return kind, struct.pack("!bi", etype, len(same)) + b"".join(same)


def _map(items: list[tuple[tuple[int, bytes], tuple[int, bytes]]]) -> tuple[int, bytes]:
    if not items:
        return 13, struct.pack("!bbi", 11, 11, 0)
    kt, vt = items[0][0][0], items[0][1][0]
    same = [k + v for (a, k), (b, v) in items if a == kt and b == vt]
    return 13, struct.pack("!bbi", kt, vt, len(same)) + b"".join(same)


def _fields(fs: list[tuple[int, tuple[int, bytes]]]) -> bytes:
    return b"".join(struct.pack("!bh", t, fid) + e for fid, (t, e) in fs) + b"\x00"


def _extend(inner: st.SearchStrategy[tuple[int, bytes]]) -> st.SearchStrategy[tuple[int, bytes]]:
    return st.one_of(
        st.lists(inner, max_size=4).map(lambda x: _list(x, 15)),
        st.lists(inner, max_size=4).map(lambda x: _list(x, 14)),
        st.lists(st.tuples(inner, inner), max_size=3).map(_map),
        st.lists(st.tuples(st.integers(-5, 12), inner), max_size=5).map(
            lambda fs: (12, _fields(fs))
        ),
    )


_VALUE = st.recursive(_SCALARS, _extend, max_leaves=12)
"""(type, encoding) of a random binary-protocol value of any type, possibly nested."""

_STRUCT = st.lists(st.tuples(st.integers(-5, 12), _VALUE), max_size=6).map(_fields)


METHOD_NAMES = st.one_of(
    st.sampled_from(sorted(service.thrift_services)),
    st.text(max_size=30),
)


@st.composite
def random_call(draw: st.DrawFn) -> bytes:
    name = draw(METHOD_NAMES).encode()
    mtype = draw(st.sampled_from([1, 1, 1, 4, 2, 3, 7]))
    head = struct.pack("!iI", -2147418112 | mtype, len(name)) + name + struct.pack("!i", 7)
    return head + draw(_STRUCT)


@st.composite
def huge_declared(draw: st.DrawFn) -> bytes:
    name = draw(st.sampled_from([b"get_database", b"get_partitions_by_names", b"x"]))
    head = struct.pack("!iI", -2147418111, len(name)) + name + struct.pack("!i", 1)
    size = draw(st.sampled_from(HOSTILE))
    kind = draw(st.sampled_from(["string", "list", "set", "map", "name"]))
    if kind == "name":
        return struct.pack("!ii", -2147418111, size) + b"abc"
    fid = draw(st.integers(1, 3))
    if kind == "string":
        payload = struct.pack("!bhi", 11, fid, size)
    elif kind == "map":
        payload = struct.pack(
            "!bhbbi", 13, fid, *draw(st.sampled_from([(11, 11), (8, 8), (0, 0)])), size
        )
    else:
        payload = struct.pack(
            "!bhbi",
            15 if kind == "list" else 14,
            fid,
            draw(st.sampled_from([11, 8, 2, 0, 12])),
            size,
        )
    return head + payload + draw(st.binary(max_size=64))


def cases(mode: str) -> st.SearchStrategy[list[bytes]]:
    compact = mode == "compact"
    base = templates(compact)
    one = st.one_of(
        st.binary(max_size=200),
        mutated(base),
        st.sampled_from(base),
        *([] if compact else [random_call(), huge_declared()]),
    )
    return st.lists(one, min_size=1, max_size=3)


def frame(data: bytes, draw_size: int | None = None) -> bytes:
    return struct.pack("!i", len(data) if draw_size is None else draw_size) + data


# -- the test -------------------------------------------------------------------------------------


def exchange(port: int, payload: bytes, abrupt: bool, mode: str) -> None:
    """Send everything, then half-close (or vanish); the server must end it by itself."""
    s = socket.create_connection(("127.0.0.1", port), timeout=CASE_DEADLINE)
    try:
        try:
            s.sendall(payload)
        except OSError:
            return  # closed on us mid-send: an allowed outcome
        if abrupt:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return  # close() now sends a reset
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            return  # the server has closed already
        deadline = time.monotonic() + CASE_DEADLINE
        got = b""
        while True:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = s.recv(65536)
            except TimeoutError:
                raise AssertionError(
                    f"no answer and no close within {CASE_DEADLINE} s: {payload[:80]!r}"
                ) from None
            except ConnectionResetError:
                break
            if not data:
                break
            got += data
        if got:  # answers are well-formed REPLY or EXCEPTION messages
            if mode == "compact":
                assert got[0] == 0x82 and (got[1] >> 5) in (2, 3), got[:16]
            else:
                head = got[4:8] if mode == "framed" else got[:4]
                assert head[:2] == b"\x80\x01" and head[3] in (2, 3), got[:16]
    finally:
        s.close()


@pytest.mark.slow
def test_protocol_fuzz(target: Target) -> None:
    mode = target.mode
    n = EXAMPLES if mode == "binary" else max(50, EXAMPLES // 4)

    @settings(
        max_examples=n,
        deadline=None,
        derandomize=SEED is None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        msgs=cases(mode),
        abrupt=st.booleans(),
        frame_sizes=st.lists(st.none() | st.sampled_from(HOSTILE), min_size=3, max_size=3),
    )
    def one_case(msgs: list[bytes], abrupt: bool, frame_sizes: list[int | None]) -> None:
        if target.framed:
            payload = b"".join(frame(m, fs) for m, fs in zip(msgs, frame_sizes, strict=False))
        else:
            payload = b"".join(msgs)
        exchange(target.proc.port, payload, abrupt and len(payload) % 4 == 0, mode)
        target.check()

    if SEED is not None:
        one_case = seed(int(SEED))(one_case)
    one_case()
