"""No secret reaches the output of `hms-cache-proxy serve`: the database password (in the URL
and as ``?password=``), SASL passwords, the admin token and the TLS key password, through
start-up, calls that succeed and fail, refused logins and handshakes, /config, a database that
refuses the start, and shutdown. Every server is a child process on 127.0.0.1 logging at DEBUG;
everything it wrote (stdout and stderr) is searched."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy.idl import hms
from tests.support.security import make_pki, sasl_client
from tests.support.server import ServerProcess, free_port

DB_PASSWORD = "dbpass-Q7w9e1r3"
QUERY_PASSWORD = "querypass-P4o6i8u0"
SASL_PASSWORD = "saslpass-M5n3b1v9"
ADMIN_TOKEN = "admintoken-Z8x6c4v2"
TLS_PASSWORD = "tlskeypass-K2j4h6g8"
SECRETS = (DB_PASSWORD, QUERY_PASSWORD, SASL_PASSWORD, ADMIN_TOKEN, TLS_PASSWORD)

pytestmark = pytest.mark.postgres


def _with_password(url: str, password: str) -> str:
    scheme, rest = url.split("://", 1)
    user, host = rest.split("@", 1)
    return f"{scheme}://{user}:{password}@{host}"


def _get(url: str, token: str | None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret} appears in {where}"


def test_no_secret_in_the_output_of_a_serving_instance(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HMS_CACHE_PROXY_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("HMS_CACHE_PROXY_SASL_ENABLED", "true")
    monkeypatch.setenv("HMS_CACHE_PROXY_SASL_USERS", json.dumps({"alice": SASL_PASSWORD}))
    monkeypatch.setenv("HMS_CACHE_PROXY_ADMIN_TOKEN", ADMIN_TOKEN)
    metrics = free_port()
    log = tmp_path / "serve.log"
    url = _with_password(pg_url, DB_PASSWORD)  # the test server trusts local connections
    server = ServerProcess(url, tmp_path / "wh", log, "--metrics-port", str(metrics))
    try:
        alice = sasl_client(server.port, "alice", SASL_PASSWORD)
        assert alice.get_all_databases() == ["default"]
        with pytest.raises(hms.NoSuchObjectException):
            alice.get_database("absent")
        with pytest.raises(hms.MetaException):
            alice.get_partitions_by_filter("default", "absent", "x = ", -1)
        with pytest.raises(Exception):  # noqa: B017 - flushCache: not an admin
            alice.flushCache()
        alice.close()
        with pytest.raises(Exception):  # noqa: B017 - a refused login (transport error)
            sasl_client(server.port, "alice", "not-" + SASL_PASSWORD)
        with pytest.raises(Exception):  # noqa: B017 - an unknown user
            sasl_client(server.port, "mallory", SASL_PASSWORD)
        base = f"http://127.0.0.1:{metrics}"
        status, body = _get(base + "/config", ADMIN_TOKEN)
        assert status == 200
        _assert_no_secret(body, "/config")
        assert _get(base + "/config", "wrong-token")[0] == 401
    finally:
        server.stop()
    output = log.read_text()
    assert "settings:" in output and "alice" in output  # the log was written, at DEBUG
    _assert_no_secret(output, "the log")


def test_no_secret_in_the_output_of_tls_and_failed_starts(
    pg_server: Any, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pki = make_pki(tmp_path / "pki")
    encrypted = tmp_path / "pki" / "encrypted.key"
    subprocess.run(
        ["openssl", "pkey", "-in", str(pki.server_key), "-aes256", "-out", str(encrypted),
         "-passout", f"pass:{TLS_PASSWORD}"],
        check=True, capture_output=True,
    )  # fmt: skip
    monkeypatch.setenv("HMS_CACHE_PROXY_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("HMS_CACHE_PROXY_TLS_KEY_PASSWORD", TLS_PASSWORD)
    tls = ["--tls-cert", str(pki.server_cert), "--tls-key", str(encrypted)]
    log = tmp_path / "serve.log"

    # TLS on, the database password as a query field; a plaintext client fails the handshake
    server = ServerProcess(f"{pg_url}?password={QUERY_PASSWORD}", tmp_path / "wh", log, *tls)
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as plain:
            plain.sendall(b"\x80\x01\x00\x01\x00\x00\x00\x11get_all_databases\x00\x00\x00\x01\x00")
            with contextlib.suppress(OSError):  # refused: reset, or closed
                plain.recv(100)
    finally:
        server.stop()

    # a wrong TLS key password, then a database that refuses the login, then one not listening
    monkeypatch.setenv("HMS_CACHE_PROXY_TLS_KEY_PASSWORD", "wrong-" + TLS_PASSWORD)
    for url, extra in (
        (_with_password(pg_url, DB_PASSWORD), tls),
        (_with_password(pg_url.replace("/postgres@", "/nosuchuser@"), DB_PASSWORD), []),
        (f"postgresql+psycopg2://hive:{DB_PASSWORD}@127.0.0.1:{free_port()}/metastore", []),
        (f"postgresql+psycopg2://hive@127.0.0.1:{free_port()}/db?password={QUERY_PASSWORD}", []),
    ):
        monkeypatch.setenv("HMS_CACHE_PROXY_DATABASE_TIMEOUT_SECONDS", "3")
        with pytest.raises(RuntimeError, match="server exited"):
            ServerProcess(url, tmp_path / "wh", log, *extra).stop()
    output = log.read_text()
    assert "TLS handshake failed" in output and "tls_key_password" in output
    _assert_no_secret(output, "the log")
