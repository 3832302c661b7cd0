"""Sidecars on one central instance: ``python -m hms_cache_proxy.bench.fanout``.

Starts a throwaway PostgreSQL, one central instance (``serve`` on it, cache on) and, in steps,
0, 1, 10, 50, ... sidecars (``serve --upstream`` in front of the central instance, their cache
on). At each step, with every sidecar idle (each tailing the central instance's log), it
measures over ``--idle-seconds``: PostgreSQL's connections to the metastore database and its
transactions per second (``pg_stat_database``: every statement here runs in one), and the
central instance's CPU time per second (``/proc``); then the lag from a write acknowledged by
the central instance to its visibility on every sidecar (one client per sidecar: the table is
read into each sidecar's cache, written through the central instance, then read through every
sidecar every 5 ms (``--poll-ms``), as raw reply bytes, by one thread for all of them, until the
new parameter shows; ``--writes`` writes), with the CPU time per write of the central instance,
of a sidecar on average and of this measuring process. Prints a table; ``--report FILE``
writes it as JSON.
"""

from __future__ import annotations

import argparse
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawn(workdir: Path, port: int, *args: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, HMS_CACHE_PROXY_METRICS_PORT="off", HMS_CACHE_PROXY_LOG_LEVEL="WARNING")
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
        "pg_transactions_per_second": round((x1 - x0 - 2) / (t1 - t0), 1),  # less ours
        "central_cpu_ms_per_second": round(1000 * (cpu1 - cpu0) / (t1 - t0), 1),
    }


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sidecars", default="0,1,10,50,100", help="steps (default 0,1,10,50,100)")
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--writes", type=int, default=10)
    parser.add_argument(
        "--poll-ms",
        type=float,
        default=5.0,
        help="each sidecar is read this often until the write shows (default 5; every read "
        "wakes a sidecar, so at 100 sidecars the reads themselves load the machine)",
    )
    parser.add_argument("--report", metavar="FILE")
    args = parser.parse_args(argv)
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
            for n in steps:
                new = [_free_port() for _ in range(n - len(ports))]
                started = [
                    _spawn(work, p, "--upstream", f"thrift://127.0.0.1:{central_port}") for p in new
                ]
                procs += started
                _wait_listening(new, started)
                ports += new
                time.sleep(3)  # every poller following
                row = {"sidecars": n, **_idle(pg, central, args.idle_seconds)}
                sidecar_pids = [p.pid for p in procs[1:]]
                cpu0 = _cpu_seconds(central.pid), sum(map(_cpu_seconds, sidecar_pids)), _own_cpu()
                lags = _lags(central_port, ports, args.writes, args.poll_ms / 1000)
                cpu1 = _cpu_seconds(central.pid), sum(map(_cpu_seconds, sidecar_pids)), _own_cpu()
                row.update(
                    lag_samples=len(lags),
                    lag_p50_ms=_pct(lags, 0.5),
                    lag_p99_ms=_pct(lags, 0.99),
                    # The write phase's CPU (its reads and the watchers' polls included),
                    # per write: the central instance's, and one sidecar's on average.
                    central_cpu_ms_per_write=round(1000 * (cpu1[0] - cpu0[0]) / args.writes, 1),
                    sidecar_cpu_ms_per_write=(
                        round(1000 * (cpu1[1] - cpu0[1]) / args.writes / n, 2) if n else None
                    ),
                    measurer_cpu_ms_per_write=round(1000 * (cpu1[2] - cpu0[2]) / args.writes, 1),
                )
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        pg.stop()
    base = rows[0]["central_cpu_ms_per_second"] if rows and rows[0]["sidecars"] == 0 else None
    print("sidecars  pg_conns  pg_xact/s  central_cpu_ms/s  per_sidecar_ms/s  lag_p50  lag_p99")
    for r in rows:
        per = (
            round((r["central_cpu_ms_per_second"] - base) / r["sidecars"], 2)
            if base is not None and r["sidecars"]
            else None
        )
        r["central_cpu_ms_per_second_per_idle_sidecar"] = per
        print(
            f"{r['sidecars']:>8}  {r['pg_connections']:>8}  {r['pg_transactions_per_second']:>9}"
            f"  {r['central_cpu_ms_per_second']:>16}  {per!s:>16}  {r['lag_p50_ms']!s:>7}"
            f"  {r['lag_p99_ms']!s:>7}"
        )
    if args.report:
        Path(args.report).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
