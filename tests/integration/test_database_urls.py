"""Database URLs as README and docker-compose.yml write them, against a real PostgreSQL that
checks passwords: init-db, then serve, then a Thrift call. Other drivers: one line, no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hms_cache_proxy.bench.postgres import PostgresServer
from tests.support.apache_thrift import apache_client
from tests.support.password_postgres import database_owned_by, password_server, set_password
from tests.support.server import ROOT, ServerProcess

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with password_server({"hive": "secret"}) as server:
        yield server


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HMS_CACHE_PROXY_")}
    return subprocess.run(
        [sys.executable, "-m", "hms_cache_proxy", *args],
        capture_output=True,
        text=True,
        env={**clean, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=120,
    )


# (user's password, URL as written); {host}, {port} and {db} are filled in per test.
FORMS = {
    # README, Configuration / the pair-of-proxies walkthrough: DB=postgresql://hive:secret@...
    "readme": ("secret", "postgresql://hive:secret@{host}:{port}/{db}"),
    # docker-compose.yml: HMS_CACHE_PROXY_DATABASE_URL: postgresql://hive:hive@postgres:5432/...
    "compose": ("hive", "postgresql://hive:hive@{host}:{port}/{db}"),
    # Heroku-style and explicit-driver spellings
    "postgres-scheme": ("secret", "postgres://hive:secret@{host}:{port}/{db}"),
    "psycopg2": ("secret", "postgresql+psycopg2://hive:secret@{host}:{port}/{db}"),
    "psycopg3": ("secret", "postgresql+psycopg://hive:secret@{host}:{port}/{db}"),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_url_forms_init_db_then_serve(pg: PostgresServer, tmp_path: Path, form: str) -> None:
    if form == "psycopg3":
        pytest.importorskip("psycopg", reason="psycopg 3 is in the test extra")
    password, pattern = FORMS[form]
    set_password(pg, "hive", password)
    db = database_owned_by(pg, "hive")
    url = pattern.format(host=pg.host, port=pg.port, db=db)
    if form == "compose":  # compose gives the URL as a variable, not a flag
        init = _cli("init-db", env={"HMS_CACHE_PROXY_DATABASE_URL": url})
    else:
        init = _cli("init-db", "--database-url", url, "--warehouse-dir", str(tmp_path / "wh"))
    assert init.returncode == 0, init.stderr
    assert "Created the Hive 4.0.0 metastore schema" in init.stdout
    assert f":{password}@" not in init.stdout + init.stderr

    log = tmp_path / "server.log"
    server = ServerProcess(url, tmp_path / "wh", log)
    try:
        client, transport = apache_client("127.0.0.1", server.port)
        try:
            assert client.get_all_databases() == ["default"]
        finally:
            transport.close()
    finally:
        server.stop()
    text = log.read_text()
    assert "serving thrift://" in text  # the banner, with the password masked
    assert f":{password}@" not in text


def test_a_wrong_password_is_one_line(pg: PostgresServer) -> None:
    set_password(pg, "hive", "secret")
    db = database_owned_by(pg, "hive")
    out = _cli("init-db", "--database-url", f"postgresql://hive:wrong-pw@{pg.host}:{pg.port}/{db}")
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "password authentication failed" in lines[0] and "wrong-pw" not in lines[0]


@pytest.mark.parametrize(
    "url",
    [
        "mysql://hive:pw-1@db:3306/metastore",
        "mysql+pymysql://hive:pw-1@db/metastore",
        "postgresql+asyncpg://hive:pw-1@db/metastore",
        "postgresql+pg8000://hive:pw-1@db/metastore",
        "oracle://hive:pw-1@db:1521/XE",
        "mssql+pyodbc://hive:pw-1@db/metastore",
    ],
)
@pytest.mark.parametrize("command", ["init-db", "serve"])
def test_other_databases_and_drivers_get_one_line(
    command: str,
    url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # In this process: the URL is refused while the settings load, before anything starts.
    from hms_cache_proxy.cli import main

    for name in list(os.environ):
        if name.startswith("HMS_CACHE_PROXY_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    assert main([command, "--database-url", url]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("hms-cache-proxy: --database-url: ")
    assert "postgresql://USER:PASSWORD@HOST:PORT/DB" in lines[0] and "sqlite:///PATH" in lines[0]
    assert "pw-1" not in err
