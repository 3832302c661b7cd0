"""`serve --hive-site` from the hive-site.xml of a PostgreSQL-backed stock metastore, and
nothing else: the database (with a password full of URL characters), warehouse, external
warehouse and port all come from the file. A file that cannot be served stops the start,
never falls back to SQLite.
"""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy.bench.postgres import PostgresServer
from tests.support.apache_thrift import apache_client
from tests.support.metastore import table
from tests.support.password_postgres import database_owned_by, password_server
from tests.support.server import ROOT, free_port

pytestmark = pytest.mark.postgres

PASSWORD = "p@ss:w/rd&100%"


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with password_server({"hms": PASSWORD}) as server:
        yield server


def _env() -> dict[str, str]:
    """No HMS_CACHE_PROXY_* setting but two a test needs: loopback only, no HTTP port (9090
    is one port for every test running at once)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMS_CACHE_PROXY_")}
    env.update(
        PYTHONPATH=str(ROOT), HMS_CACHE_PROXY_HOST="127.0.0.1", HMS_CACHE_PROXY_METRICS_PORT="off"
    )
    return env


def _write_hive_site(path: Path, pg: PostgresServer, db: str, port: int) -> None:
    # As Hive ships it: declaration, stylesheet, licence, descriptions, a Derby default
    # overridden, ${system:...} variables, XML-escaped '&' in the password.
    path.write_text(
        f"""<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<?xml-stylesheet type="text/xsl" href="configuration.xsl"?>
<!--
   Licensed to the Apache Software Foundation (ASF) under one or more
   contributor license agreements.
-->
<configuration>
  <!-- the metastore database -->
  <property>
    <name>javax.jdo.option.ConnectionURL</name>
    <value>jdbc:postgresql://{pg.host}:{pg.port}/{db}?connectTimeout=10</value>
    <description>JDBC connect string for a JDBC metastore.</description>
  </property>
  <property>
    <name>javax.jdo.option.ConnectionDriverName</name>
    <value>org.postgresql.Driver</value>
  </property>
  <property>
    <name>javax.jdo.option.ConnectionUserName</name>
    <value>hms</value>
    <description>Username to use against metastore database</description>
  </property>
  <property>
    <name>javax.jdo.option.ConnectionPassword</name>
    <value>{PASSWORD.replace("&", "&amp;")}</value>
    <description>password to use against metastore database</description>
  </property>
  <property>
    <name>hive.metastore.warehouse.dir</name>
    <value>{path.parent}/${{system:user.name}}/warehouse</value>
    <description>location of default database for the warehouse</description>
  </property>
  <property>
    <name>metastore.warehouse.external.dir</name>
    <value>{path.parent}/${{system:user.name}}/external</value>
    <description>location of external tables</description>
  </property>
  <property>
    <name>hive.exec.scratchdir</name>
    <value>${{system:java.io.tmpdir}}/${{system:user.name}}</value>
  </property>
  <property>
    <name>hive.metastore.uris</name>
    <value>thrift://localhost:{port}</value>
    <description>Thrift URI for the remote metastore.</description>
  </property>
  <property>
    <name>datanucleus.schema.autoCreateAll</name>
    <value>false</value>
    <final>true</final>
  </property>
</configuration>
"""
    )


def test_serve_from_a_stock_postgres_hive_site_alone(
    pg: PostgresServer, tmp_path: Path, T: Any
) -> None:
    db = database_owned_by(pg, "hms")
    port = free_port()
    site = tmp_path / "hive-site.xml"
    _write_hive_site(site, pg, db, port)

    init = subprocess.run(
        [sys.executable, "-m", "hms_cache_proxy", "init-db", "--hive-site", str(site)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(),
        timeout=120,
    )
    assert init.returncode == 0, init.stderr
    assert f"@{pg.host}:{pg.port}/{db}," in init.stdout
    assert PASSWORD not in init.stdout + init.stderr

    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "hms_cache_proxy", "serve", "--hive-site", str(site)],
            cwd=tmp_path,
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        client, transport = apache_client("127.0.0.1", port)
        try:
            default = client.get_database("default")
            client.create_table(
                table(T, "default", "raw", params={"EXTERNAL": "TRUE"}, table_type=None)
            )
            raw = client.get_table("default", "raw")
        finally:
            transport.close()
        assert default.locationUri == f"file:{tmp_path / getpass.getuser() / 'warehouse'}"
        external = tmp_path / getpass.getuser() / "external"
        assert raw.sd.location == f"file:{external / 'raw'}" and (external / "raw").is_dir()
    finally:
        proc.terminate()
        proc.wait(30)
    text = log.read_text()
    assert f"serving thrift://127.0.0.1:{port} on postgresql+psycopg2://hms:***@" in text
    assert PASSWORD not in text and "p%40ss" not in text
    assert not (tmp_path / "hms-cache-proxy.db").exists()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("jdbc:derby:;databaseName=metastore_db;create=true", "Derby"),
        ("jdbc:mysql://db:3306/hive?createDatabaseIfNotExist=true", "MySQL"),
    ],
)
def test_a_hive_site_that_cannot_be_served_stops_the_start(
    tmp_path: Path, url: str, says: str
) -> None:
    site = tmp_path / "hive-site.xml"
    site.write_text(
        "<configuration><property><name>javax.jdo.option.ConnectionURL</name>"
        f"<value>{url.replace('&', '&amp;')}</value></property></configuration>"
    )
    out = subprocess.run(
        [sys.executable, "-m", "hms_cache_proxy", "serve", "--hive-site", str(site)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(),
        timeout=120,
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and str(site) in lines[0], out.stderr
    assert not (tmp_path / "hms-cache-proxy.db").exists()  # no fallback to SQLite
