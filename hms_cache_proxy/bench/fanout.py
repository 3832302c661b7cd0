"""Sidecars on one central instance: ``python -m hms_cache_proxy.bench.fanout``.

Starts a throwaway PostgreSQL, one central instance (``serve`` on it, cache on) and, in steps,
0, 1, 10, 50, ... sidecars (``serve --upstream`` in front of the central instance, their cache
on). At each step, with every sidecar idle (each tailing the central instance's log), it
measures over ``--idle-seconds``: PostgreSQL's connections to the metastore database and its
transactions per second (``pg_stat_database``: every statement here runs in one), and the
central instance's CPU time per second (``/proc``); then two figures per write, each in a
phase of its own (``--measure``; ``--writes`` writes each):

- **learn lag** (phase ``learn``): from the write's reply at the writer to the moment each
  sidecar's poller applied the write's event (its entries dropped, its position moved: the
  ``recent_applied`` times of the sidecar's /readyz). The table is read into each sidecar's
  cache, written through the central instance, whose current event id is then read; nothing
  reads the sidecars while they learn of it. After the writes every sidecar's /readyz is read
  once (same machine, same clock).
- **reader-visible lag** (phase ``visible``): from the write's reply to the first read through
  each sidecar that shows it. The table is read into each sidecar's cache, written, then read
  through every sidecar every 5 ms (``--poll-ms``), as raw reply bytes, by one thread for all
  of them, until the new parameter shows: each read after the sidecar dropped the entry is a
  miss fetched from the central instance, and the reads load the machine.

With each phase the CPU time per write of the central instance, of a sidecar on average and
(visible) of this measuring process, and the load average. Prints a table; ``--report FILE``
writes it as JSON.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import selectors
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hms_cache_proxy.bench.cases import connect
from hms_cache_proxy.bench.cases import table as bench_table
from hms_cache_proxy.bench.postgres import PostgresServer
from hms_cache_proxy.bench.rawclient import encode_call, message_end
from hms_cache_proxy.idl import hms

_ROOT = Path(__file__).resolve().parents[2]
_TICKS = os.sysconf("SC_CLK_TCK")
DB, TABLE = "fanout", "t"
LEARN_CHUNK = 16
"""Writes between two reads of the sidecars' /readyz: their events stay among the
``recent_applied`` a sidecar keeps (64; a write here logs one event)."""
LEARN_GAP_SECONDS = 0.5
"""Between learn-phase writes: every sidecar has applied the previous one before the next
write's reads (no polling tells when)."""


_handed_out: set[int] = set()


def _free_port() -> int:
    """A port free now and not handed out before in this process (a port closed here may be
    the next one the kernel offers: two sidecars must not be given it)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port


def _spawn(
    workdir: Path, port: int, *args: str, http_port: int | None = None
) -> subprocess.Popen[bytes]:
    """``serve`` on ``port``; its HTTP endpoint on ``http_port`` (None: off)."""
    env = dict(os.environ, HMS_CACHE_PROXY_LOG_LEVEL="WARNING")
    env["HMS_CACHE_PROXY_METRICS_PORT"] = "off" if http_port is None else str(http_port)
    env["HMS_CACHE_PROXY_METRICS_HOST"] = "127.0.0.1"
    env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), env.get("PYTHONPATH", "")])
    log = open(workdir / f"serve-{port}.log", "wb")  # noqa: SIM115 - the child holds it
    cmd = [sys.executable, "-m", "hms_cache_proxy", "serve", "--host", "127.0.0.1"]
    return subprocess.Popen(
        [*cmd, "--port", str(port), *args], cwd=workdir, env=env, stdout=log, stderr=log
    )


def _wait_listening(ports: list[int], procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + 300
    for port, proc in zip(ports, procs, strict=True):
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve on port {port} exited with {proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"serve on port {port} did not listen") from None
                time.sleep(0.2)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime + stime


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


def _pg_figures(pg: PostgresServer) -> tuple[int, int]:
    """(connections to the metastore database, transactions committed or rolled back)."""
    conn = pg.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (DB,))
            conns = int(cur.fetchone()[0])
            cur.execute("SELECT pg_stat_clear_snapshot()")
            cur.execute(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
                (DB,),
            )
            xacts = int(cur.fetchone()[0])
        return conns, xacts
    finally:
        conn.close()


def _idle(pg: PostgresServer, central: subprocess.Popen[bytes], seconds: float) -> dict[str, Any]:
    conns0, x0 = _pg_figures(pg)
    cpu0, t0 = _cpu_seconds(central.pid), time.monotonic()
    time.sleep(seconds)
    conns1, x1 = _pg_figures(pg)
    cpu1, t1 = _cpu_seconds(central.pid), time.monotonic()
    return {
        "pg_connections": max(conns0, conns1) - 1,  # less the measuring one
        "pg_transactions_per_second": round(max(0, x1 - x0 - 2) / (t1 - t0), 1),  # less ours
        "central_cpu_ms_per_second": round(1000 * (cpu1 - cpu0) / (t1 - t0), 1),
    }


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _readyz(http_port: int) -> dict[str, Any]:
    """The sidecar's notification-log detail from its /readyz (503 has the body too)."""
    conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
    try:
        conn.request("GET", "/readyz")
        body = json.loads(conn.getresponse().read())
    finally:
        conn.close()
    return dict(body["upstream_cache"]["notification_log"])


def _applied_times(http_ports: list[int], last_event: int) -> list[dict[int, float]]:
    """Per sidecar: event id -> unix time applied, read once every sidecar's position has
    reached ``last_event`` (a sidecar behind is read again; the times are the sidecar's own,
    so a later read does not change them)."""
    out: list[dict[int, float]] = []
    deadline = time.monotonic() + 30
    for port in http_ports:
        log = _readyz(port)
        while (log["position"] or 0) < last_event and time.monotonic() < deadline:
            time.sleep(0.1)
            log = _readyz(port)
        out.append({int(event_id): float(at) for event_id, at in log["recent_applied"]})
    return out


def _learn_lags(
    central_port: int, sidecar_ports: list[int], http_ports: list[int], writes: int
) -> tuple[list[list[float | None]], list[float]]:
    """Seconds from each write's reply at the writer to each sidecar's apply time of its event
    (None: not found), per write and sidecar; and each write's round trip (send to reply)."""
    if not sidecar_ports:
        return [], []
    writer = connect("127.0.0.1", central_port, timeout_s=60)
    readers = [connect("127.0.0.1", p, timeout_s=60) for p in sidecar_ports]
    lags: list[list[float | None]] = []
    round_trips: list[float] = []
    try:
        for start in range(0, writes, LEARN_CHUNK):
            done: list[tuple[int, float]] = []  # (event id, unix time of the reply)
            for w in range(start, min(writes, start + LEARN_CHUNK)):
                for client in readers:  # each sidecar holds the table: the event drops it
                    client.get_table(DB, TABLE)
                time.sleep(0.1)  # the sidecars idle again
                table = writer.get_table(DB, TABLE)
                table.parameters["w"] = f"fanout-learn-{w:08d}"
                sent = time.time()
                writer.alter_table(DB, TABLE, table)
                replied = time.time()
                event_id = int(writer.get_current_notificationEventId().eventId)
                done.append((event_id, replied))
                round_trips.append(replied - sent)
                time.sleep(LEARN_GAP_SECONDS)
            applied = _applied_times(http_ports, done[-1][0])
            for event_id, replied in done:
                lags.append(
                    [times[event_id] - replied if event_id in times else None for times in applied]
                )
    finally:
        for c in [writer, *readers]:
            c.close()
    return lags, round_trips


def _lags(
    central_port: int, sidecar_ports: list[int], writes: int, poll_seconds: float
) -> list[float]:
    """Seconds from each write's acknowledgement to its visibility on each sidecar."""
    if not sidecar_ports:
        return []
    writer = connect("127.0.0.1", central_port, timeout_s=60)
    readers = [connect("127.0.0.1", p, timeout_s=60) for p in sidecar_ports]
    # The watchers read raw reply bytes (a request encoded once, the reply's end found by a
    # walk, the new value looked for in its bytes): 100 decoding client threads in one process
    # would measure this process's own queue for the GIL more than the sidecars.
    watchers = [socket.create_connection(("127.0.0.1", p), timeout=60) for p in sidecar_ports]
    request = encode_call("get_table", {"dbname": DB, "tbl_name": TABLE})
    lags: list[float] = []
    try:
        for w in range(writes):
            for client in readers:  # each sidecar holds the table (a hit from here on)
                client.get_table(DB, TABLE)
                client.get_table(DB, TABLE)
            token = f"fanout-write-{w:08d}"
            table = writer.get_table(DB, TABLE)
            table.parameters["w"] = token
            writer.alter_table(DB, TABLE, table)
            acked = time.monotonic()

            lags += _watch(watchers, request, token.encode(), acked, poll_seconds)
            time.sleep(0.2)  # between writes: the sidecars idle again
    finally:
        for c in [writer, *readers]:
            c.close()
        for sock in watchers:
            sock.close()
    return lags


def _watch(
    socks: list[socket.socket], request: bytes, value: bytes, since: float, poll: float
) -> list[float]:
    """Read through every socket every ``poll`` seconds (after its previous reply) until its
    reply holds ``value``; the seconds from ``since`` to each sighting. One thread for all:
    a thread per sidecar would measure its own wait for the GIL (and cost the machine's CPU
    in switches between a hundred threads) more than the sidecars."""
    lags: list[float] = []
    deadline = since + 30
    due = dict.fromkeys(range(len(socks)), since)  # not seen yet: when to read next
    replies: dict[int, bytes] = {}  # reads in flight
    with selectors.DefaultSelector() as selector:
        while due or replies:
            now = time.monotonic()
            if now > deadline:
                break  # those not seen by then give no sample (the report's count shows it)
            for i, at in list(due.items()):
                if at <= now:
                    del due[i]
                    socks[i].sendall(request)
                    replies[i] = b""
                    selector.register(socks[i], selectors.EVENT_READ, i)
            wait = min(due.values(), default=now + 1) - now
            for key, _ in selector.select(max(0.0, wait) if replies else 0):
                i = key.data
                chunk = socks[i].recv(65536)
                if not chunk:
                    raise ConnectionError("the sidecar closed the connection")
                replies[i] += chunk
                try:
                    complete = message_end(replies[i]) <= len(replies[i])
                except (struct.error, IndexError):
                    continue  # not all of it yet
                if not complete:
                    continue
                selector.unregister(socks[i])
                reply = replies.pop(i)
                if value in reply:
                    lags.append(time.monotonic() - since)
                else:
                    due[i] = time.monotonic() + poll
            if not replies and due:
                time.sleep(max(0.0, min(due.values()) - time.monotonic()))
    return lags


def _pct(samples: list[float], q: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)


def _step(
    args: argparse.Namespace,
    central: subprocess.Popen[bytes],
    sidecars: list[subprocess.Popen[bytes]],
    central_port: int,
    ports: list[int],
    http_ports: list[int],
) -> dict[str, Any]:
    """The write phases of one step (idle figures apart)."""
    n = len(ports)
    pids = [p.pid for p in sidecars]
    row: dict[str, Any] = {}

    def cpu() -> tuple[float, float, float]:
        return _cpu_seconds(central.pid), sum(map(_cpu_seconds, pids)), _own_cpu()

    def per_write(before: tuple[float, ...], after: tuple[float, ...]) -> dict[str, Any]:
        return {
            "central_cpu_ms_per_write": round(1000 * (after[0] - before[0]) / args.writes, 1),
            "sidecar_cpu_ms_per_write": (
                round(1000 * (after[1] - before[1]) / args.writes / n, 2) if n else None
            ),
            "measurer_cpu_ms_per_write": round(1000 * (after[2] - before[2]) / args.writes, 1),
        }

    if "learn" in args.measure:
        row["learn_load_before"] = _load()
        cpu0 = cpu()
        by_write, round_trips = _learn_lags(central_port, ports, http_ports, args.writes)
        cpu1 = cpu()
        row["learn_load_after"] = _load()
        found = [lag for lags in by_write for lag in lags if lag is not None]
        # From the write's send instead: an upper bound (its round trip included). A sidecar
        # may apply the event before the writer has the reply (the central instance answers
        # the held reads and the write at once), so a learn lag from the reply can be < 0.
        from_send = [
            lag + rt
            for lags, rt in zip(by_write, round_trips, strict=True)
            for lag in lags
            if lag is not None
        ]
        row.update(
            learn_samples=len(found),
            learn_missing=sum(lag is None for lags in by_write for lag in lags),
            learn_p50_ms=_pct(found, 0.5),
            learn_p99_ms=_pct(found, 0.99),
            learn_max_ms=_pct(found, 1.0),
            learn_min_ms=_pct(found, 0.0),
            learn_from_send_p50_ms=_pct(from_send, 0.5),
            learn_from_send_p99_ms=_pct(from_send, 0.99),
            # The learn phase's CPU per write (the reads that fill the sidecars' caches too).
            learn=per_write(cpu0, cpu1),
            # Per write, per sidecar (ms; None: not found), and each write's round trip:
            # a sidecar cannot apply an event before its write was sent.
            learn_lags_ms=[
                [None if lag is None else round(lag * 1000, 2) for lag in lags] for lags in by_write
            ],
            write_round_trip_ms=[round(rt * 1000, 2) for rt in round_trips],
        )
    if "visible" in args.measure:
        row["visible_load_before"] = _load()
        cpu0 = cpu()
        lags = _lags(central_port, ports, args.writes, args.poll_ms / 1000)
        cpu1 = cpu()
        row["visible_load_after"] = _load()
        row.update(
            visible_samples=len(lags),
            visible_p50_ms=_pct(lags, 0.5),
            visible_p99_ms=_pct(lags, 0.99),
            # The visible phase's CPU (its reads and the watchers' polls included), per write:
            # the central instance's, one sidecar's on average, this process's.
            visible=per_write(cpu0, cpu1),
        )
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sidecars", default="0,1,10,50,100", help="steps (default 0,1,10,50,100)")
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--writes", type=int, default=10, help="per phase (default 10)")
    parser.add_argument(
        "--measure",
        choices=("both", "learn", "visible"),
        default="both",
        help="learn: when each sidecar applied each write's event, nothing reading the "
        "sidecars meanwhile; visible: when a read through each sidecar first shows it; both "
        "(default): learn, then visible, in phases of their own",
    )
    parser.add_argument(
        "--poll-ms",
        type=float,
        default=5.0,
        help="visible: each sidecar is read this often until the write shows (default 5; "
        "every read wakes a sidecar, so at 100 sidecars the reads themselves load the machine)",
    )
    parser.add_argument("--report", metavar="FILE")
    args = parser.parse_args(argv)
    args.measure = ("learn", "visible") if args.measure == "both" else (args.measure,)
    steps = sorted({int(x) for x in args.sidecars.split(",")})
    rows: list[dict[str, Any]] = []
    pg = PostgresServer.start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        url = pg.new_database(DB)
        with tempfile.TemporaryDirectory(prefix="hms-fanout-") as tmp:
            work = Path(tmp)
            central_port = _free_port()
            os.environ["HMS_CACHE_PROXY_MAX_CONNECTIONS_PER_CLIENT"] = "0"  # all on 127.0.0.1
            central = _spawn(work, central_port, "--database-url", url, "--warehouse-dir", tmp)
            del os.environ["HMS_CACHE_PROXY_MAX_CONNECTIONS_PER_CLIENT"]
            procs.append(central)
            _wait_listening([central_port], [central])
            setup = connect("127.0.0.1", central_port, timeout_s=60)
            setup.create_database(hms.Database(name=DB))
            made = bench_table(TABLE, partitioned=False)
            made.dbName = DB
            setup.create_table(made)
            setup.close()
            ports: list[int] = []
            http_ports: list[int] = []
            for n in steps:
                new = [_free_port() for _ in range(n - len(ports))]
                new_http = [_free_port() for _ in new]
                upstream = f"thrift://127.0.0.1:{central_port}"
                started = [
                    _spawn(work, p, "--upstream", upstream, http_port=h)
                    for p, h in zip(new, new_http, strict=True)
                ]
                procs += started
                _wait_listening(new, started)
                ports += new
                http_ports += new_http
                time.sleep(3)  # every poller following
                row = {"sidecars": n, **_idle(pg, central, args.idle_seconds)}
                row.update(_step(args, central, procs[1:], central_port, ports, http_ports))
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k not in _BULKY}), flush=True)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        pg.stop()
    _print_table(rows)
    if args.report:
        Path(args.report).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


_BULKY = frozenset({"learn_lags_ms", "write_round_trip_ms"})
"""Report fields left out of the lines printed per step."""


def _print_table(rows: list[dict[str, Any]]) -> None:
    base = rows[0]["central_cpu_ms_per_second"] if rows and rows[0]["sidecars"] == 0 else None
    print(
        "sidecars  pg_conns  pg_xact/s  central_cpu_ms/s  per_sidecar_ms/s"
        "  learn_p50  learn_p99  visible_p50  visible_p99  load (1 min, before/after)"
    )
    for r in rows:
        per = (
            round((r["central_cpu_ms_per_second"] - base) / r["sidecars"], 2)
            if base is not None and r["sidecars"]
            else None
        )
        r["central_cpu_ms_per_second_per_idle_sidecar"] = per
        loads = [
            r[k][0]
            for k in ("learn_load_before", "learn_load_after", "visible_load_after")
            if k in r
        ]
        print(
            f"{r['sidecars']:>8}  {r['pg_connections']:>8}  {r['pg_transactions_per_second']:>9}"
            f"  {r['central_cpu_ms_per_second']:>16}  {per!s:>16}"
            f"  {r.get('learn_p50_ms')!s:>9}  {r.get('learn_p99_ms')!s:>9}"
            f"  {r.get('visible_p50_ms')!s:>11}  {r.get('visible_p99_ms')!s:>11}"
            f"  {'/'.join(map(str, loads))}"
        )


if __name__ == "__main__":
    sys.exit(main())
