"""The stock Java Hive Metastore 2.3.10 that ships in PySpark's jars, as a child process.

The benchmark compares hms-cache-proxy with it side by side, and the interoperability tests use
it as the judge of what we write: a row is right when the stock server reads it back as we do.
It runs against PostgreSQL in one of two ways:

- ``create_schema=True``: DataNucleus creates its own Hive 2.3 schema (give it a database of its
  own; the benchmark does).
- ``create_schema=False``: it opens a Hive 4.0 database made by our ``init-db`` without changing
  its schema: no table is created, altered or validated and the VERSION row is left alone, so
  DataNucleus simply ignores the columns Hive 2.3 does not know.

What it takes (see docs/client-calls.md): PySpark's ``jars/`` (Hive, DataNucleus, DBCP,
libthrift), a Java runtime, and a PostgreSQL JDBC driver jar, which PySpark does not ship.
Missing prerequisites raise :class:`StockUnavailable`, so callers can report "stock column
unavailable" rather than fail; a server that starts but dies raises :class:`StockFailed` with
the tail of its log.

Hive 2.3 always listens on every interface (it has no bind-host setting). To keep it on
127.0.0.1, a stand-in for its ``HiveAuthUtils`` class (the one place that opens the server
socket) is compiled once with ``javac`` and put first on the classpath; that needs a JDK, not
just a runtime (``loopback_only=False`` skips it and listens everywhere, as stock Hive does).

    with StockMetastore.start(pg_url, workdir=tmp) as stock:
        ...  # thrift://127.0.0.1:{stock.port}
"""

from __future__ import annotations

import atexit
import functools
import glob
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any
from xml.sax.saxutils import escape

__all__ = [
    "StockFailed",
    "StockMetastore",
    "StockUnavailable",
    "check_database",
    "check_prerequisites",
    "find_java",
    "find_javac",
    "find_jdbc_driver",
    "find_pyspark_jars",
    "jdbc_url",
    "loopback_shim",
]

MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
HIVE_VERSION = "2.3.10"

# Hive's JDO model lives in this jar; its presence is what makes a jars folder usable.
_METASTORE_JAR = "hive-metastore-*.jar"

# Java 17 closes the JDK's internals that Hadoop and Hive 2.3 reflect into; Spark opens the
# same ones when it runs these jars.
_JAVA_OPENS = [
    "-XX:+IgnoreUnrecognizedVMOptions",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
]

# Quiet, synchronous logging to stdout (which goes to the log file). The default asynchronous
# context selector needs the LMAX disruptor jar, which PySpark does not ship.
_LOG4J2 = """\
status = error
name = stock-hms
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = STDOUT
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
logger.datanucleus.name = DataNucleus
logger.datanucleus.level = error
logger.dn.name = org.datanucleus
logger.dn.level = error
logger.hadoop.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop.level = error
"""

# DataNucleus and Hive settings common to both modes.
_COMMON_SETTINGS = {
    "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
    # BoneCP (Hive 2.3's default pool) is not in PySpark's jars; without a pool that exists,
    # every call that reaches the transaction code drops the connection without a reply.
    "datanucleus.connectionPoolingType": "DBCP",
    # Never compare or record the schema version. (Hive 2.3 would accept 4.0.0 anyway, as it
    # takes any newer version for compatible, but a version it did not accept would make it
    # refuse to start or, with record.version, overwrite our VERSION row with 2.3.0.)
    "hive.metastore.schema.verification": "false",
    "hive.metastore.schema.verification.record.version": "false",
    # Ids from SEQUENCE_TABLE rows named after the model classes ("increment"), Hive's default
    # spelled out, because id compatibility with hms-cache-proxy rests on it.
    "datanucleus.rdbms.useLegacyNativeValueStrategy": "true",
    "datanucleus.identifierFactory": "datanucleus1",
    # No notification listener: the stock server's writes carry no events (as in production
    # Hive 2.3 without DbNotificationListener); pollers must cope with that anyway.
    "hive.metastore.event.listeners": "",
    "hive.metastore.transactional.event.listeners": "",
    "hive.metastore.metrics.enabled": "false",
    "hive.metastore.initial.metadata.count.enabled": "false",
}

# Pointing Hive 2.3 at a Hive 4.0 database. Hive 4.0.0's schema is a superset of what Hive
# 2.3's DataNucleus mapping needs (every table, including IDXS and INDEX_PARAMS, with every
# column), and DataNucleus maps only the columns it knows: on insert the extra ones take their
# defaults (DBS.CTLG_NAME 'hive', DBS.TYPE 'NATIVE', WRITE_ID 0, ...) or NULL. So these are Hive
# 2.3's own defaults, spelled out as guards: DataNucleus must never create or alter a table
# here (it does so lazily, when a call first touches a class), and must not validate against
# its idea of the schema.
_FIXED_SCHEMA_SETTINGS = {
    "datanucleus.schema.autoCreateAll": "false",
    "datanucleus.schema.autoCreateTables": "false",
    "datanucleus.schema.autoCreateColumns": "false",
    "datanucleus.schema.autoCreateConstraints": "false",
    "datanucleus.schema.validateTables": "false",
    "datanucleus.schema.validateColumns": "false",
    "datanucleus.schema.validateConstraints": "false",
    "datanucleus.fixedDatastore": "true",
    "datanucleus.readOnlyDatastore": "false",
    "datanucleus.rdbms.initializeColumnInfo": "NONE",
    "datanucleus.rdbms.checkExistTablesOrViews": "false",
}

_OWN_SCHEMA_SETTINGS = {
    "datanucleus.schema.autoCreateAll": "true",
    "datanucleus.fixedDatastore": "false",
}

_live: set[StockMetastore] = set()
_live_lock = threading.Lock()


class StockUnavailable(RuntimeError):
    """A prerequisite (Java, PySpark's jars, a PostgreSQL JDBC driver) is missing."""


class StockFailed(RuntimeError):
    """The stock server was started but died or never answered; the message has its log tail."""


# -- finding the parts ---------------------------------------------------------------------------


def find_pyspark_jars() -> Path:
    """PySpark's ``jars/`` folder, which holds a complete Hive Metastore 2.3 server."""
    try:
        import pyspark
    except ImportError as exc:
        raise StockUnavailable(
            "PySpark is not installed (pip install pyspark==4.0.1): its jars hold the stock "
            f"Hive Metastore {HIVE_VERSION}"
        ) from exc
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    if not glob.glob(str(jars / _METASTORE_JAR)):
        raise StockUnavailable(f"no {_METASTORE_JAR} in {jars}: this PySpark has no Hive jars")
    if not glob.glob(str(jars / "commons-dbcp-*.jar")):
        raise StockUnavailable(f"no commons-dbcp jar in {jars}: DataNucleus would have no pool")
    return jars


def find_java() -> Path:
    """A ``java`` executable: $JAVA_HOME/bin/java first, then ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    on_path = shutil.which("java")
    if on_path:
        return Path(on_path)
    raise StockUnavailable(
        "no Java runtime: set JAVA_HOME or put java on PATH (e.g. apt-get install "
        "openjdk-17-jre-headless)"
    )


def _version_key(path: str) -> tuple[int, ...]:
    digits = Path(path).stem.rsplit("-", 1)[-1]
    return tuple(int(p) for p in digits.split(".") if p.isdigit())


def find_jdbc_driver() -> Path:
    """A PostgreSQL JDBC driver jar: $HMS_PG_JDBC_JAR, the Maven cache, then Debian's."""
    env = os.environ.get("HMS_PG_JDBC_JAR")
    if env:
        if Path(env).is_file():
            return Path(env)
        raise StockUnavailable(f"HMS_PG_JDBC_JAR={env} is not a file")
    m2 = Path.home() / ".m2" / "repository" / "org" / "postgresql" / "postgresql"
    found = sorted(glob.glob(str(m2 / "*" / "postgresql-*.jar")), key=_version_key)
    found = [f for f in found if not f.endswith(("-sources.jar", "-javadoc.jar"))]
    if found:
        return Path(found[-1])
    debian = sorted(glob.glob("/usr/share/java/postgresql*.jar"))
    if debian:
        # postgresql.jar is the unversioned symlink; prefer it, else the newest versioned one.
        plain = Path("/usr/share/java/postgresql.jar")
        return plain if plain.exists() else Path(debian[-1])
    raise StockUnavailable(
        "no PostgreSQL JDBC driver jar: looked in ~/.m2/repository/org/postgresql/postgresql/ "
        "and /usr/share/java/postgresql*.jar (apt-get install libpostgresql-jdbc-java, or set "
        "HMS_PG_JDBC_JAR)"
    )


def check_prerequisites(loopback_only: bool = True) -> tuple[Path, Path, Path]:
    """(java, PySpark's jars folder, JDBC driver jar); raises StockUnavailable naming what is
    missing, so a caller can skip or mark the stock column unavailable before starting.
    ``loopback_only`` also requires the javac that builds the loopback shim."""
    jars = find_pyspark_jars()
    java = find_java()
    driver = find_jdbc_driver()
    if loopback_only:
        find_javac(java)
    return java, jars, driver


def jdbc_url(pg_url: str) -> tuple[str, str | None, str | None]:
    """(JDBC URL, user, password) for a SQLAlchemy PostgreSQL URL (or a jdbc: URL as is)."""
    if pg_url.startswith("jdbc:postgresql:"):
        return pg_url, None, None
    from sqlalchemy.engine import make_url

    url = make_url(pg_url)
    if url.get_backend_name() != "postgresql":
        raise ValueError(f"the stock metastore runs here on PostgreSQL only, not {url.drivername}")
    host = url.host or "127.0.0.1"
    port = url.port or 5432
    return f"jdbc:postgresql://{host}:{port}/{url.database}", url.username, url.password


# The stand-in for org.apache.hadoop.hive.common.auth.HiveAuthUtils (hive-common 2.3.10), with
# the same public methods. Only getServerSocket differs: no host means hms.bind.host (127.0.0.1)
# rather than the wildcard address. SSL is never configured here, so those methods refuse.
_SHIM_SOURCE = """\
package org.apache.hadoop.hive.common.auth;

import java.net.InetSocketAddress;
import java.util.List;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TSocket;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.TTransportException;

/** hms-cache-proxy: HiveAuthUtils that binds the metastore's server socket to one address. */
public class HiveAuthUtils {
  public static TTransport getSocketTransport(String host, int port, int loginTimeout)
      throws TTransportException {
    return new TSocket(host, port, loginTimeout);
  }

  public static TTransport getSSLSocket(String host, int port, int loginTimeout)
      throws TTransportException {
    throw noSsl();
  }

  public static TTransport getSSLSocket(String host, int port, int loginTimeout,
      String trustStorePath, String trustStorePassWord) throws TTransportException {
    throw noSsl();
  }

  public static TTransport getSSLSocket(String host, int port, int socketTimeout,
      int connectionTimeout, String trustStorePath, String trustStorePassWord)
      throws TTransportException {
    throw noSsl();
  }

  public static TServerSocket getServerSocket(String hiveHost, int portNum)
      throws TTransportException {
    String host = hiveHost;
    if (host == null || host.isEmpty()) {
      host = System.getProperty("hms.bind.host", "127.0.0.1");
    }
    return new TServerSocket(new InetSocketAddress(host, portNum));
  }

  public static TServerSocket getServerSSLSocket(String hiveHost, int portNum,
      String keyStorePath, String keyStorePassWord, List<String> sslVersionBlacklist)
      throws TTransportException {
    throw noSsl();
  }

  private static TTransportException noSsl() {
    return new TTransportException("SSL is not supported by hms-cache-proxy's loopback shim");
  }
}
"""
_SHIM_CLASS = "org/apache/hadoop/hive/common/auth/HiveAuthUtils"


def find_javac(java: Path) -> Path:
    """``javac`` next to ``java`` (the same JDK), else on PATH."""
    sibling = java.resolve().parent / "javac"
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return sibling
    on_path = shutil.which("javac")
    if on_path:
        return Path(on_path)
    raise StockUnavailable(
        "no javac: binding the stock metastore to 127.0.0.1 needs a JDK (e.g. apt-get install "
        "openjdk-17-jdk-headless), or pass loopback_only=False to listen on every interface"
    )


def loopback_shim(java: Path, jars: Path) -> Path:
    """A classes directory holding the compiled HiveAuthUtils stand-in (built once, cached)."""
    thrift_jars = sorted(glob.glob(str(jars / "libthrift-*.jar")))
    if not thrift_jars:
        raise StockUnavailable(f"no libthrift jar in {jars}")
    key = hashlib.sha256((_SHIM_SOURCE + Path(thrift_jars[-1]).name).encode()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"hms-cache-proxy-stock-shim-{os.getuid()}-{key}"
    if (target / f"{_SHIM_CLASS}.class").is_file():
        return target
    javac = find_javac(java)
    build = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        src = build / "src" / f"{_SHIM_CLASS}.java"
        src.parent.mkdir(parents=True)
        src.write_text(_SHIM_SOURCE)
        proc = subprocess.run(
            [str(javac), "-nowarn", "--release", "8", "-cp", thrift_jars[-1]]
            + ["-d", str(build / "classes"), str(src)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise StockUnavailable(f"javac could not build the loopback shim:\n{proc.stderr}")
        try:
            os.rename(build / "classes", target)
        except OSError:
            if not (target / f"{_SHIM_CLASS}.class").is_file():  # lost a race only if published
                raise
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return target


def check_database(pg_url: str, create_schema: bool) -> str | None:
    """Fail fast, with a message that says what to do, when the database cannot be used.

    Returns the VERSION row's schema version (None when there is none). Hive would otherwise
    retry for half a minute on an unreachable database, and with ``create_schema=True`` on a
    Hive 4.0 database DataNucleus would start adding Hive 2.3's columns to our tables.
    """
    if pg_url.startswith("jdbc:"):
        return None  # nothing to check with; Hive's own error will have to do
    from sqlalchemy import create_engine, inspect, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    shown = make_url(pg_url).render_as_string(hide_password=True)
    engine = create_engine(pg_url, connect_args={"connect_timeout": 10})
    try:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
            version = None
            if "VERSION" in tables:
                version = conn.execute(text('SELECT "SCHEMA_VERSION" FROM "VERSION"')).scalar()
    except SQLAlchemyError as exc:
        raise StockFailed(f"cannot open {shown} for the stock metastore: {exc}") from exc
    finally:
        engine.dispose()
    if not create_schema and "DBS" not in tables:
        raise StockFailed(
            f"{shown} holds no metastore schema; create it first (hms-cache-proxy init-db) or "
            "start the stock metastore with create_schema=True on a database of its own"
        )
    if create_schema and version is not None and not str(version).startswith("2."):
        raise StockFailed(
            f"{shown} holds a Hive {version} metastore schema, which DataNucleus would alter to "
            "Hive 2.3's: give the stock metastore a database of its own, or pass "
            "create_schema=False to share this one"
        )
    return version


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _hive_site(settings: dict[str, str]) -> str:
    props = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
        for k, v in settings.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{props}</configuration>\n'


# -- the server ----------------------------------------------------------------------------------


class StockMetastore:
    """One running stock metastore; ``stop()`` (or leaving the ``with`` block) kills the JVM."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, workdir: Path) -> None:
        self.proc = proc
        self.port = port
        self.workdir = workdir
        self.log_path = workdir / "stock-hms.log"

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    # -- life cycle ------------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        pg_url: str,
        port: int | None = None,
        *,
        create_schema: bool = True,
        workdir: Path,
        warehouse_dir: Path | None = None,
        heap: str = "512m",
        jvm_args: Sequence[str] = (),
        extra_settings: dict[str, str] | None = None,
        timeout: float = 120.0,
        loopback_only: bool = True,
    ) -> StockMetastore:
        """Start the server on 127.0.0.1 and return once it answers ``get_all_databases``.

        ``port=None`` picks a free port (and retries on another one if it is taken meanwhile).
        ``warehouse_dir`` defaults to ``workdir/warehouse``; ``extra_settings`` go into
        hive-site.xml last; ``jvm_args`` are added to the JVM's options (tests pass
        ``-XX:TieredStopAtLevel=1`` for a start 2-3 times faster; benchmarks should not, it
        slows the steady state). Raises StockUnavailable when a prerequisite is missing,
        StockFailed when the database cannot be used or the JVM dies or does not answer within
        ``timeout``.
        """
        java, jars, driver = check_prerequisites(loopback_only)
        shim = loopback_shim(java, jars) if loopback_only else None
        url, user, password = jdbc_url(pg_url)
        check_database(pg_url, create_schema)
        workdir = Path(workdir).resolve()
        conf = workdir / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        warehouse = Path(warehouse_dir or workdir / "warehouse").resolve()
        warehouse.mkdir(parents=True, exist_ok=True)

        settings = dict(_COMMON_SETTINGS)
        settings.update(_OWN_SCHEMA_SETTINGS if create_schema else _FIXED_SCHEMA_SETTINGS)
        settings["javax.jdo.option.ConnectionURL"] = url
        if user is not None:
            settings["javax.jdo.option.ConnectionUserName"] = user
        if password is not None:
            settings["javax.jdo.option.ConnectionPassword"] = password
        settings["hive.metastore.warehouse.dir"] = warehouse.as_uri()
        settings.update(extra_settings or {})
        site = conf / "hive-site.xml"
        site.write_text(_hive_site(settings))
        site.chmod(0o600)  # it may hold the database password
        log4j = conf / "log4j2.properties"
        log4j.write_text(_LOG4J2)

        # The shim must come before jars/* so that it wins over hive-common's HiveAuthUtils.
        first = [str(shim)] if shim is not None else []
        classpath = os.pathsep.join([*first, str(conf), str(jars / "*"), str(driver)])
        attempts = 1 if port else 3
        for attempt in range(attempts):
            chosen = port or _free_port()
            server = cls._spawn(java, classpath, log4j, chosen, workdir, heap, jvm_args)
            try:
                server._wait_ready(timeout)
                return server
            except StockFailed:
                in_use = "Address already in use" in server.log_tail(200)
                server.stop()
                if attempt == attempts - 1 or not in_use:
                    raise
        raise AssertionError("unreachable")

    @classmethod
    def _spawn(
        cls,
        java: Path,
        classpath: str,
        log4j: Path,
        port: int,
        workdir: Path,
        heap: str,
        jvm_args: Sequence[str],
    ) -> StockMetastore:
        cmd = [
            str(java),
            f"-Xmx{heap}",
            "-Xss2m",
            "-XX:+UseSerialGC",
            "-Djava.net.preferIPv4Stack=true",
            "-Dhms.bind.host=127.0.0.1",
            "-Dlog4j2.contextSelector="
            "org.apache.logging.log4j.core.selector.ClassLoaderContextSelector",
            f"-Dlog4j.configurationFile={log4j.as_uri()}",
            f"-Dderby.system.home={workdir}",
            f"-Djava.io.tmpdir={workdir}",
            *_JAVA_OPENS,
            *jvm_args,
            "-cp",
            classpath,
            MAIN_CLASS,
            "-p",
            str(port),
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HADOOP_", "HIVE_"))}
        env["HADOOP_USER_NAME"] = env.get("USER", "hive")
        log_path = workdir / "stock-hms.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                _die_with_us() + cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env=env,
                start_new_session=True,  # our Ctrl-C does not reach it; stop() does
            )
        server = cls(proc, port, workdir)
        with _live_lock:
            _live.add(server)
        return server

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last_error = "no answer yet"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise StockFailed(
                    f"the stock metastore exited with {self.proc.returncode} before answering"
                    f"{self._causes()} (log {self.log_path}):\n{self.log_tail()}"
                )
            try:
                self.call("get_all_databases", timeout=10.0)
                return
            except Exception as exc:  # not listening yet, or still initialising DataNucleus
                last_error = f"{type(exc).__name__}: {exc}"
                time.sleep(0.25)
        self.stop()
        raise StockFailed(
            f"the stock metastore did not answer get_all_databases on port {self.port} within "
            f"{timeout:.0f}s ({last_error}){self._causes()}; log {self.log_path}:\n"
            f"{self.log_tail()}"
        )

    def _causes(self) -> str:
        """The root causes Java logged ("Caused by: ..."), deepest last, for the message."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        causes: list[str] = []
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("Caused by:") and line not in causes:
                causes.append(line)
        return (": " + " / ".join(causes[-3:])) if causes else ""

    def call(self, method: str, *args: Any, timeout: float = 30.0) -> Any:
        """One Thrift call over a fresh connection (readiness checks, quick looks)."""
        from thriftpy2.rpc import make_client

        from hms_cache_proxy.idl import service

        client = make_client(service, "127.0.0.1", self.port, timeout=timeout * 1000)
        try:
            return getattr(client, method)(*args)
        finally:
            client.close()

    def stop(self, grace_seconds: float = 10.0) -> None:
        """Stop the JVM (SIGTERM, then SIGKILL after ``grace_seconds``); safe to call twice."""
        with _live_lock:
            _live.discard(self)
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=grace_seconds)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
            except ProcessLookupError:
                pass

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines the server logged (to explain a failure)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> StockMetastore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.proc.poll() is None else f"exited {self.proc.returncode}"
        return f"StockMetastore(port={self.port}, pid={self.proc.pid}, {state})"


def _die_with_us() -> list[str]:
    """A prefix that makes the JVM get SIGKILL if this process dies without cleaning up.

    Linux delivers the parent-death signal when the *thread* that started the child exits, so
    it is only used from the main thread (which lives as long as the interpreter); elsewhere
    ``stop()`` and the exit hook are the only guards.
    """
    if not sys.platform.startswith("linux"):
        return []
    if threading.current_thread() is not threading.main_thread():
        return []
    return _pdeathsig_prefix()


@functools.cache
def _pdeathsig_prefix() -> list[str]:
    """``setpriv --pdeathsig KILL`` when this util-linux has it (2.33+), else nothing."""
    setpriv = shutil.which("setpriv")
    if not setpriv:
        return []
    probe = subprocess.run(
        [setpriv, "--pdeathsig", "KILL", "true"], capture_output=True, check=False
    )
    return [setpriv, "--pdeathsig", "KILL"] if probe.returncode == 0 else []


@atexit.register
def _stop_all() -> None:
    """Kill whatever is still running when the interpreter exits."""
    with _live_lock:
        servers = list(_live)
    for server in servers:
        server.stop(grace_seconds=5.0)
