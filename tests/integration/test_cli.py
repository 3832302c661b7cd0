"""The command line as a user runs it: help texts, init-db, and serve's schema checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.support.apache_thrift import apache_client
from tests.support.server import ROOT, ServerProcess


def _cli(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "hms_cache_proxy", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("command", "options"),
    [
        (
            "serve",
            ["--config", "--hive-site", "--host", "--port", "--database-url", "--warehouse-dir"],
        ),
        ("init-db", ["--config", "--hive-site", "--database-url", "--warehouse-dir"]),
        ("bench", ["--uri", "--database-url", "--output"]),
    ],
)
def test_help_explains_every_option(command: str, options: list[str]) -> None:
    out = _cli(command, "--help")
    assert out.returncode == 0, out.stderr
    for option in options:
        assert option in out.stdout
    # every option line carries an explanation, not just its name
    assert out.stdout.count("default") >= 1


def test_init_db_twice_changes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    first = _cli("init-db", "--database-url", url, "--warehouse-dir", str(tmp_path / "wh"))
    assert first.returncode == 0, first.stderr
    engine = create_engine(url)
    with engine.connect() as conn:
        before = conn.execute(text('SELECT "DB_ID", "NAME", "DB_LOCATION_URI" FROM "DBS"')).all()
    second = _cli("init-db", "--database-url", url)
    assert second.returncode == 0, second.stderr
    assert "already" in second.stdout.lower() and "4.0.0" in second.stdout
    with engine.connect() as conn:
        after = conn.execute(text('SELECT "DB_ID", "NAME", "DB_LOCATION_URI" FROM "DBS"')).all()
    assert before == after
    engine.dispose()


def test_serve_creates_the_default_sqlite_file_on_first_start(tmp_path: Path) -> None:
    """With no settings at all, `serve` makes ./hms-cache-proxy.db in the working directory."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), HMS_CACHE_PROXY_HOST="127.0.0.1")
    from tests.support.server import free_port

    port = free_port()
    proc = subprocess.Popen(
        # The metrics port is not what this test is about: 9090 may be taken on the host.
        [
            sys.executable,
            "-m",
            "hms_cache_proxy",
            "serve",
            "--port",
            str(port),
            "--metrics-port",
            "0",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        import socket
        import time

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read().decode()  # type: ignore[union-attr]
                time.sleep(0.1)
        client, trans = apache_client("127.0.0.1", port)
        try:
            default = client.get_database("default")
        finally:
            trans.close()
        assert (tmp_path / "hms-cache-proxy.db").is_file()
        assert default.locationUri == f"file:{tmp_path / 'warehouse'}"
    finally:
        proc.terminate()
        proc.wait(30)


def test_serve_refuses_a_database_of_another_schema_version(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    assert _cli("init-db", "--database-url", url).returncode == 0
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text('UPDATE "VERSION" SET "SCHEMA_VERSION" = \'3.1.0\''))
    engine.dispose()
    out = _cli("serve", "--database-url", url, "--port", "0", timeout=60)
    assert out.returncode == 2
    assert "3.1.0" in out.stderr and "4.0.0" in out.stderr and "-dbType" not in out.stderr


def test_serve_answers_thrift_on_postgres(pg_url: str, tmp_path: Path) -> None:
    server = ServerProcess(pg_url, tmp_path / "wh", tmp_path / "server.log")
    try:
        client, trans = apache_client("127.0.0.1", server.port)
        try:
            assert client.get_all_databases() == ["default"]
        finally:
            trans.close()
    finally:
        server.stop()


def test_init_db_on_a_database_of_another_schema_version_fails(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    assert _cli("init-db", "--database-url", url).returncode == 0
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text('UPDATE "VERSION" SET "SCHEMA_VERSION" = \'3.1.0\''))
    engine.dispose()
    out = _cli("init-db", "--database-url", url)
    assert out.returncode != 0
    assert "already initialised" in out.stderr and "3.1.0" in out.stderr
    # Hive's schematool has no SQLite type: no command that would only fail
    assert "4.0.0" in out.stderr and "-dbType" not in out.stderr
    assert "schematool does not upgrade SQLite, so serve from a new SQLite file" in out.stderr


def test_serve_on_an_empty_database_without_auto_create_says_to_run_init_db(
    pg_url: str, tmp_path: Path
) -> None:
    url = pg_url.replace("://postgres@", "://postgres:pw-9@")  # the suite's server trusts it
    env = dict(os.environ, PYTHONPATH=str(ROOT), HMS_CACHE_PROXY_DATABASE_AUTO_CREATE="false")
    out = subprocess.run(
        [sys.executable, "-m", "hms_cache_proxy", "serve", "--database-url", url, "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode != 0
    assert "has no metastore tables" in out.stderr
    assert "`hms-cache-proxy init-db` with the same settings" in out.stderr
    # no command to copy with a masked password in it, and no password at all
    assert "init-db --database-url" not in out.stderr and "pw-9" not in out.stderr


def test_a_tls_file_that_does_not_exist_is_named_as_the_flag_given(tmp_path: Path) -> None:
    out = _cli(
        "serve",
        "--database-url",
        f"sqlite:///{tmp_path / 'm.db'}",
        "--port",
        "0",
        "--metrics-port",
        "-1",
        "--tls-cert",
        str(tmp_path / "missing.pem"),
        "--tls-key",
        str(tmp_path / "missing.key"),
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == (
        f"hms-cache-proxy: --tls-cert: {tmp_path / 'missing.pem'} does not exist or is not a file"
    )


def test_serve_logs_the_roots_it_confines_locations_to(
    sqlite_url: str, tmp_path: Path, T: Any
) -> None:
    """One INFO line at start names the warehouse, the external warehouse and filesystem_roots,
    so an operator sees why a client with its own warehouse (Spark's ./spark-warehouse) is
    refused; the refusal itself is checked over Thrift."""
    config = tmp_path / "settings.yaml"
    config.write_text(f"filesystem_roots: [{tmp_path / 'data'}]\n")
    log_path = tmp_path / "server.log"
    server = ServerProcess(
        sqlite_url,
        tmp_path / "wh",
        log_path,
        "--config",
        str(config),
        "--external-warehouse-dir",
        str(tmp_path / "ext"),
    )
    try:
        client, trans = apache_client("127.0.0.1", server.port)
        try:
            spark_default = f"file:{tmp_path / 'spark-warehouse' / 'sales.db'}"
            with pytest.raises(T.MetaException):
                client.create_database(T.Database(name="sales", locationUri=spark_default))
        finally:
            trans.close()
    finally:
        server.stop()
    lines = [line for line in log_path.read_text().splitlines() if "confined to" in line]
    assert len(lines) == 1, log_path.read_text()
    assert "INFO" in lines[0]
    assert f"warehouse file:{tmp_path / 'wh'}" in lines[0]
    assert f"external warehouse file:{tmp_path / 'ext'}" in lines[0]
    assert f"filesystem_roots file:{tmp_path / 'data'}" in lines[0]
