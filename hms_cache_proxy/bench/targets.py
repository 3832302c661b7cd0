"""The servers a benchmark run compares, each started as a process of its own.

- ``db``: ``hms-cache-proxy serve`` with the cache off (every call takes the database path);
- ``cache``: ``hms-cache-proxy serve`` with the cache on (a separate server, started with the
  setting ``cache_enabled: true``); until the service has that setting the column reads
  "cache not available yet";
- ``stock``: the stock Java Hive Metastore 2.3.10 from PySpark's jars, on a database of its own
  on the same PostgreSQL (DataNucleus creates its schema; the benchmark adds Hive 2.3's
  transaction tables, which DataNucleus does not create);
- ``floor``: a thriftpy2 server answering get_table from a prebuilt object (floor.py).

Each of our servers gets its settings from a YAML file written here (only settings the
service knows), and the child's environment is stripped of HMS_CACHE_PROXY_* variables so a
shell's settings cannot skew a run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DB, CACHE, STOCK, FLOOR, URI = "db", "cache", "stock", "floor", "uri"
ORDER = (DB, CACHE, STOCK, FLOOR)
LABELS = {
    DB: "hms-cache-proxy, database path",
    CACHE: "hms-cache-proxy, cache",
    STOCK: "stock HMS 2.3.10",
    FLOOR: "floor (thriftpy2, prebuilt object)",
}
SHORT = {DB: "db path", CACHE: "cache", STOCK: "stock", FLOOR: "floor"}

CACHE_SETTING = "cache_enabled"
METRICS_PORT_SETTINGS = ("metrics_port", "http_port", "admin_port", "observability_port")


@dataclass
class Target:
    key: str
    label: str
    status: str = "pending"  # ok | unavailable | failed
    reason: str = ""
    uri: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "status": self.status,
            "reason": self.reason,
            "uri": self.uri,
            "settings": self.settings,
        }


# -- what the service supports -------------------------------------------------------------------


def known_settings() -> set[str]:
    from hms_cache_proxy.config import Settings

    return set(Settings.model_fields)


def cache_support(extra: dict[str, Any] | None = None) -> tuple[dict[str, Any] | None, str]:
    """(settings that turn the cache on, or None when the service has no cache yet; why)."""
    fields = known_settings()
    if CACHE_SETTING not in fields:
        return None, (
            "cache not available yet: the service has no `cache_enabled` setting (the column "
            "fills in by itself once it has)"
        )
    settings: dict[str, Any] = {CACHE_SETTING: True}
    unknown = sorted(set(extra or {}) - fields)
    if unknown:
        return None, f"--cache-setting names settings the service does not have: {unknown}"
    settings.update(extra or {})
    return settings, "settings " + ", ".join(f"{k}: {v}" for k, v in settings.items())


def database_path_settings() -> dict[str, Any]:
    """Settings that keep the cache off (nothing to say while the service has no cache)."""
    return {CACHE_SETTING: False} if CACHE_SETTING in known_settings() else {}


def metrics_port_setting() -> str | None:
    fields = known_settings()
    return next((name for name in METRICS_PORT_SETTINGS if name in fields), None)


# -- processes -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_answering(port: int, proc: subprocess.Popen[bytes], timeout: float, log: Path) -> None:
    """Until get_all_databases answers on 127.0.0.1:port (raises if the process dies)."""
    from hms_cache_proxy.bench.cases import connect

    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}: {_tail(log)}")
        try:
            client = connect("127.0.0.1", port, timeout_s=10)
            try:
                client.get_all_databases()
                return
            finally:
                client.close()
        except Exception as exc:
            last = f"{type(exc).__name__}: {exc}"
            time.sleep(0.1)
    raise RuntimeError(f"did not answer within {timeout:.0f}s ({last}): {_tail(log)}")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def rss_bytes(pid: int) -> int | None:
    """Resident memory of a process (Linux), None where /proc is missing."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


@dataclass
class ServeProcess:
    """``hms-cache-proxy serve`` in a child process."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path
    metrics_port: int | None = None
    started: float = 0.0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)


def start_serve(
    database_url: str,
    workdir: Path,
    name: str,
    overrides: dict[str, Any] | None = None,
    *,
    with_metrics: bool = False,
    timeout: float = 120.0,
) -> ServeProcess:
    port = free_port()
    settings: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": port,
        "database_url": database_url,
        "warehouse_dir": str(workdir / "warehouse"),
        "log_level": "WARNING",
    }
    metrics_port = None
    metrics_setting = metrics_port_setting()
    if metrics_setting:
        # The HTTP endpoint only where a measurement reads it (else off: several servers run
        # at once), and on 127.0.0.1 only.
        metrics_port = free_port() if with_metrics else None
        settings[metrics_setting] = metrics_port if metrics_port is not None else -1
        settings["metrics_host"] = "127.0.0.1"
    settings.update(overrides or {})
    known = known_settings()
    settings = {k: v for k, v in settings.items() if k in known}
    config = workdir / f"{name}.yaml"
    config.write_text(yaml.safe_dump(settings))
    config.chmod(0o600)  # may hold a database password
    log = workdir / f"{name}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMS_CACHE_PROXY_")}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    started = time.monotonic()
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "hms_cache_proxy", "serve", "--config", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    server = ServeProcess(proc, port, log, metrics_port, started)
    try:
        wait_answering(port, proc, timeout, log)
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def serve(
    database_url: str, workdir: Path, name: str, overrides: dict[str, Any] | None = None, **kw: Any
) -> Iterator[ServeProcess]:
    server = start_serve(database_url, workdir, name, overrides, **kw)
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def floor_server(workdir: Path, table_file: Path | None) -> Iterator[ServeProcess]:
    port = free_port()
    log = workdir / "floor.log"
    cmd = [sys.executable, "-m", "hms_cache_proxy.bench.floor", "--port", str(port)]
    if table_file is not None:
        cmd += ["--table", str(table_file)]
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
    server = ServeProcess(proc, port, log)
    try:
        wait_answering(port, proc, 60.0, log)
        yield server
    finally:
        server.stop()


# -- the stock server ----------------------------------------------------------------------------

# Hive 2.3.10's transaction tables, as its TxnDbUtil.prepDb() creates them (read from the class
# in hive-metastore-2.3.10.jar), with Derby's "varchar(2048) for bit data" as PostgreSQL's
# bytea, which is what Hive 2.3's hive-txn-schema-2.3.0.postgres.sql uses. Unquoted names, as
# Hive 2.3's TxnHandler queries them.
STOCK_TXN_DDL = [
    "CREATE TABLE TXNS (TXN_ID bigint PRIMARY KEY, TXN_STATE char(1) NOT NULL, TXN_STARTED "
    "bigint NOT NULL, TXN_LAST_HEARTBEAT bigint NOT NULL, TXN_USER varchar(128) NOT NULL, "
    "TXN_HOST varchar(128) NOT NULL)",
    "CREATE TABLE TXN_COMPONENTS (TC_TXNID bigint REFERENCES TXNS (TXN_ID), TC_DATABASE "
    "varchar(128) NOT NULL, TC_TABLE varchar(128), TC_PARTITION varchar(767), "
    "TC_OPERATION_TYPE char(1) NOT NULL)",
    "CREATE TABLE COMPLETED_TXN_COMPONENTS (CTC_TXNID bigint, CTC_DATABASE varchar(128) NOT "
    "NULL, CTC_TABLE varchar(128), CTC_PARTITION varchar(767))",
    "CREATE TABLE NEXT_TXN_ID (NTXN_NEXT bigint NOT NULL)",
    "INSERT INTO NEXT_TXN_ID VALUES(1)",
    "CREATE TABLE HIVE_LOCKS (HL_LOCK_EXT_ID bigint NOT NULL, HL_LOCK_INT_ID bigint NOT NULL, "
    "HL_TXNID bigint, HL_DB varchar(128) NOT NULL, HL_TABLE varchar(128), HL_PARTITION "
    "varchar(767), HL_LOCK_STATE char(1) NOT NULL, HL_LOCK_TYPE char(1) NOT NULL, "
    "HL_LAST_HEARTBEAT bigint NOT NULL, HL_ACQUIRED_AT bigint, HL_USER varchar(128) NOT NULL, "
    "HL_HOST varchar(128) NOT NULL, HL_HEARTBEAT_COUNT integer, HL_AGENT_INFO varchar(128), "
    "HL_BLOCKEDBY_EXT_ID bigint, HL_BLOCKEDBY_INT_ID bigint, PRIMARY KEY(HL_LOCK_EXT_ID, "
    "HL_LOCK_INT_ID))",
    "CREATE INDEX HL_TXNID_INDEX ON HIVE_LOCKS (HL_TXNID)",
    "CREATE TABLE NEXT_LOCK_ID (NL_NEXT bigint NOT NULL)",
    "INSERT INTO NEXT_LOCK_ID VALUES(1)",
    "CREATE TABLE COMPACTION_QUEUE (CQ_ID bigint PRIMARY KEY, CQ_DATABASE varchar(128) NOT "
    "NULL, CQ_TABLE varchar(128) NOT NULL, CQ_PARTITION varchar(767), CQ_STATE char(1) NOT "
    "NULL, CQ_TYPE char(1) NOT NULL, CQ_TBLPROPERTIES varchar(2048), CQ_WORKER_ID "
    "varchar(128), CQ_START bigint, CQ_RUN_AS varchar(128), CQ_HIGHEST_TXN_ID bigint, "
    "CQ_META_INFO bytea, CQ_HADOOP_JOB_ID varchar(32))",
    "CREATE TABLE NEXT_COMPACTION_QUEUE_ID (NCQ_NEXT bigint NOT NULL)",
    "INSERT INTO NEXT_COMPACTION_QUEUE_ID VALUES(1)",
    "CREATE TABLE COMPLETED_COMPACTIONS (CC_ID bigint PRIMARY KEY, CC_DATABASE varchar(128) "
    "NOT NULL, CC_TABLE varchar(128) NOT NULL, CC_PARTITION varchar(767), CC_STATE char(1) "
    "NOT NULL, CC_TYPE char(1) NOT NULL, CC_TBLPROPERTIES varchar(2048), CC_WORKER_ID "
    "varchar(128), CC_START bigint, CC_END bigint, CC_RUN_AS varchar(128), CC_HIGHEST_TXN_ID "
    "bigint, CC_META_INFO bytea, CC_HADOOP_JOB_ID varchar(32))",
    "CREATE TABLE AUX_TABLE (MT_KEY1 varchar(128) NOT NULL, MT_KEY2 bigint NOT NULL, "
    "MT_COMMENT varchar(255), PRIMARY KEY(MT_KEY1, MT_KEY2))",
    "CREATE TABLE WRITE_SET (WS_DATABASE varchar(128) NOT NULL, WS_TABLE varchar(128) NOT "
    "NULL, WS_PARTITION varchar(767), WS_TXNID bigint NOT NULL, WS_COMMIT_ID bigint NOT NULL, "
    "WS_OPERATION_TYPE char(1) NOT NULL)",
]


def create_stock_txn_tables(pg_url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(pg_url)
    try:
        with engine.begin() as conn:
            for statement in STOCK_TXN_DDL:
                conn.execute(text(statement))
    finally:
        engine.dispose()


def stock_unavailable_reason() -> str | None:
    """Why the stock server cannot be started here (None: it can)."""
    from hms_cache_proxy.bench.stock_hms import StockUnavailable, check_prerequisites

    try:
        check_prerequisites()
    except StockUnavailable as exc:
        return f"stock server unavailable: {exc}"
    return None


@contextlib.contextmanager
def stock_server(pg_url: str, workdir: Path) -> Iterator[Any]:
    from hms_cache_proxy.bench.stock_hms import StockMetastore

    create_stock_txn_tables(pg_url)
    stock_dir = workdir / "stock"
    stock_dir.mkdir(exist_ok=True)
    with StockMetastore.start(pg_url, workdir=stock_dir, heap="2g", timeout=240.0) as server:
        yield server
