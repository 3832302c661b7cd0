"""The cache's own figures: prewarm rate, memory per cached partition, and the lag with which
a change made through one instance shows on another.

All three need the cache, so the command runs them only for the ``cache`` target; until the
service has one they are reported "n/a". They only use what any deployment has: ``serve``
processes, Thrift calls, /proc for resident memory and, where the service has an HTTP port
setting, its Prometheus /metrics.
"""

from __future__ import annotations

import json
import re
import statistics
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from hms_cache_proxy.bench.cases import BENCH_DB, PARTS, connect, ensure_database, table
from hms_cache_proxy.bench.runner import percentile
from hms_cache_proxy.bench.targets import rss_bytes, serve
from hms_cache_proxy.idl import hms

LAG_TABLE = "lag_probe"


def scrape(port: int) -> dict[str, float]:
    """Unlabelled samples of the service's /metrics (name -> value)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*) ([-+0-9.eEinfNa]+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def prewarm_state(port: int) -> dict[str, float] | None:
    """(finished, tables_done, tables_total, partitions) from /readyz's prewarm block, else
    from /metrics; None when neither says anything about prewarm."""
    try:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/readyz")
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:  # 503 while not ready: the body still tells
            body = json.loads(exc.read())
        p = body.get("prewarm")
        if isinstance(p, dict) and "finished" in p:
            return {
                "finished": float(bool(p["finished"])),
                "tables_done": float(p.get("tables_done") or 0),
                "tables_total": float(p.get("tables_total") or 0),
                "partitions": float(p.get("partitions_loaded") or 0),
            }
    except (OSError, ValueError):
        pass
    try:
        m = scrape(port)
    except OSError:
        return None
    if "hms_prewarm_tables_total" not in m:
        return None
    total, done = m["hms_prewarm_tables_total"], m.get("hms_prewarm_tables_done", 0.0)
    return {
        "finished": float(bool(total) and done >= total),
        "tables_done": done,
        "tables_total": total,
        "partitions": m.get("hms_prewarm_partitions_total", 0.0),
    }


def count_partitions(database_url: str) -> int:
    from sqlalchemy import create_engine, text

    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text('SELECT count(*) FROM "PARTITIONS"')).scalar() or 0)
    finally:
        engine.dispose()


def wait_prewarm(srv: Any, timeout: float = 300.0) -> bool:
    """Until the server says prewarm finished (False if it never says, or has no HTTP port)."""
    if srv.metrics_port is None:
        return False
    deadline = time.monotonic() + timeout
    patience = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = prewarm_state(srv.metrics_port)
        if state and state["finished"]:
            return True
        if state is None and time.monotonic() > patience:
            return False
        time.sleep(0.1)
    return False


def prewarm_and_memory(
    database_url: str,
    workdir: Path,
    cache_settings: dict[str, Any],
    db_settings: dict[str, Any],
    partitions_in_db: int,
    timeout: float = 300.0,
) -> dict[str, Any]:
    """Start a fresh cache server on a database holding the benchmark's tables.

    Prewarm rate: the server's own figure where its log has it ("prewarm finished: N
    partitions in S s"), else partitions loaded per second as /readyz (or /metrics) shows
    them between the first look with prewarm under way and the one with it finished.
    Memory per cached partition: resident memory of that server, once every partitioned table
    has been read through it, less that of a cache-off server after the same reads, over the
    partitions cached; and, where /metrics has it, the cache's own ``hms_cache_bytes`` over
    ``hms_cache_partitions``.
    """
    out: dict[str, Any] = {}
    logged = {**cache_settings, "log_level": "INFO"}
    with serve(database_url, workdir, "cache-prewarm", logged, with_metrics=True) as srv:
        if srv.metrics_port is not None:
            deadline = time.monotonic() + timeout
            patience = time.monotonic() + 30  # for the server to say anything about prewarm
            state: dict[str, float] | None = None
            done = False
            first: tuple[float, float] | None = None  # (time, partitions) first seen under way
            while time.monotonic() < deadline:
                state = prewarm_state(srv.metrics_port)
                if state and state["finished"]:
                    done = True
                    break
                if first is None and state and state["tables_total"]:
                    first = (time.monotonic(), state["partitions"])
                if state is None and time.monotonic() > patience:
                    break
                time.sleep(0.02)
            ended = time.monotonic()
            took = ended - srv.started
            loaded = state["partitions"] if state else 0.0
            tables_total = state["tables_total"] if state else None
            observed = None
            if first is not None and loaded - first[1] >= loaded / 2 and ended > first[0]:
                observed = (loaded - first[1]) / (ended - first[0])
        if srv.metrics_port is None:
            out["prewarm"] = {"status": "n/a", "reason": "the service has no HTTP metrics port"}
        elif not done:
            out["prewarm"] = {
                "status": "n/a",
                "reason": "the server did not report prewarm finished (/readyz, /metrics)",
            }
        elif (own := _logged_prewarm(srv.log)) is not None:
            out["prewarm"] = {
                "partitions": own[0],
                "tables": tables_total,
                "seconds_from_start": round(took, 3),
                "partitions_per_s": own[0] / own[1] if own[1] > 0 else None,
                "note": f"the server's own log: {own[0]:,} partitions in {own[1]:.2f} s",
            }
        else:
            out["prewarm"] = {
                "partitions": loaded,
                "tables": tables_total,
                "seconds_from_start": round(took, 3),
                "partitions_per_s": observed or (loaded / took if took > 0 else None),
                "note": (
                    "partitions loaded per second between the first look at /readyz that "
                    "showed prewarm under way and the one that showed it finished"
                    if observed
                    else "from process start (includes interpreter start-up) until prewarm done"
                ),
            }
        _read_all(srv.port)
        cached_rss = rss_bytes(srv.pid)
        if srv.metrics_port is not None:
            try:
                metrics = scrape(srv.metrics_port)
                parts = metrics.get("hms_cache_partitions") or 0
                if parts:
                    out["accounted_bytes_per_partition"] = metrics["hms_cache_bytes"] / parts
            except (OSError, KeyError):
                pass
    with serve(database_url, workdir, "db-baseline", db_settings) as base:
        _read_all(base.port)
        base_rss = rss_bytes(base.pid)
    if cached_rss and base_rss and partitions_in_db:
        out["rss_bytes_per_partition"] = (cached_rss - base_rss) / partitions_in_db
        out["rss_cached"] = cached_rss
        out["rss_database_path"] = base_rss
        out["partitions"] = partitions_in_db
    return out


def _logged_prewarm(log: Path) -> tuple[int, float] | None:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"prewarm finished: (\d+) partitions in ([0-9.]+)s", text)
    return (int(m.group(1)), float(m.group(2))) if m else None


def _read_all(port: int) -> None:
    client = connect("127.0.0.1", port)
    try:
        for name in PARTS.values():
            try:
                client.get_partitions(BENCH_DB, name, -1)
            except hms.NoSuchObjectException:
                pass
    finally:
        client.close()


def propagation_lag(
    database_url: str,
    workdir: Path,
    settings: dict[str, Any],
    writes: int = 200,
    timeout_s: float = 5.0,
) -> dict[str, Any]:
    """Two ``serve`` processes A and B on one database: alter_table through A (a parameter
    holding a counter), then poll get_table on B until it shows the new value. The lag of
    one write is from A's acknowledgement to B's first answer with the change."""
    with (
        serve(database_url, workdir, "lag-a", settings) as a,
        serve(database_url, workdir, "lag-b", settings) as b,
    ):
        ca = connect("127.0.0.1", a.port)
        cb = connect("127.0.0.1", b.port)
        try:
            ensure_database(ca)
            try:
                ca.drop_table(BENCH_DB, LAG_TABLE, False)
            except Exception:
                pass
            ca.create_table(table(LAG_TABLE, partitioned=False))
            tbl = ca.get_table(BENCH_DB, LAG_TABLE)
            cb.get_table(BENCH_DB, LAG_TABLE)  # B caches it
            lags: list[float] = []
            missed = 0
            for i in range(writes):
                tbl.parameters["bench.seq"] = str(i)
                ca.alter_table(BENCH_DB, LAG_TABLE, tbl)
                acked = time.perf_counter()
                deadline = acked + timeout_s
                while True:
                    seen = cb.get_table(BENCH_DB, LAG_TABLE).parameters.get("bench.seq")
                    now = time.perf_counter()
                    if seen == str(i):
                        lags.append(now - acked)
                        break
                    if now > deadline:
                        missed += 1
                        break
        finally:
            ca.close()
            cb.close()
    if not lags:
        return {"status": "error", "reason": f"B never showed any of {writes} writes"}
    return {
        "writes": writes,
        "missed": missed,
        "p50_ms": statistics.median(lags) * 1000,
        "p99_ms": percentile(lags, 0.99) * 1000,
        "max_ms": max(lags) * 1000,
    }
