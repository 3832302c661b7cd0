"""Bearer tokens on the REST port name users, and each user's allow-list applies as on the
Thrift port; no token or a wrong one is 401; read_only refuses writes with 403; TLS as the
Thrift port's."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError, NoSuchNamespaceError, UnauthorizedError

from tests.support.rest_scenario import SCHEMA, catalog
from tests.support.security import make_pki
from tests.support.server import running_service


def test_tokens_name_users_and_their_allow_lists_apply(sqlite_url: str, tmp_path: Path) -> None:
    settings = {
        "rest_port": 0,
        "rest_tokens": {"alice": "alice-token", "admin": "admin-token"},
        "allowed_databases_by_user": {"alice": ["team_a.*"], "admin": [".*"]},
    }
    with running_service(sqlite_url, tmp_path / "warehouse", **settings) as svc:
        port = svc.rest.port
        admin = catalog(port, token="admin-token")
        alice = catalog(port, token="alice-token")
        admin.create_namespace("team_b")
        admin.create_table("team_b.secret", SCHEMA)
        alice.create_namespace("team_a")
        alice.create_table("team_a.t", SCHEMA)
        assert alice.list_namespaces() == [("team_a",)]
        assert sorted(admin.list_namespaces()) == [("default",), ("team_a",), ("team_b",)]
        with pytest.raises(NoSuchNamespaceError):
            alice.list_tables("team_b")
        assert not alice.table_exists("team_b.secret")
        with pytest.raises(ForbiddenError):
            alice.create_namespace("team_b2")  # outside her list

        base = f"http://127.0.0.1:{port}/v1"
        anonymous = requests.get(f"{base}/namespaces", timeout=10)
        assert anonymous.status_code == 401
        assert anonymous.json()["error"]["type"] == "NotAuthorizedException"
        with pytest.raises(UnauthorizedError):
            catalog(port, token="wrong")


def test_read_only_refuses_rest_writes(sqlite_url: str, tmp_path: Path) -> None:
    with running_service(sqlite_url, tmp_path / "warehouse", rest_port=0) as svc:
        catalog(svc.rest.port).create_namespace("ro")
    with running_service(sqlite_url, tmp_path / "warehouse", rest_port=0, read_only=True) as svc:
        cat = catalog(svc.rest.port)
        assert ("ro",) in cat.list_namespaces()
        with pytest.raises(ForbiddenError):
            cat.create_table("ro.t", SCHEMA)


def test_the_rest_port_speaks_tls_as_the_thrift_port(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # requests lets these variables override a session's own CA bundle (PyIceberg's cabundle)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    pki = make_pki(tmp_path / "pki")
    settings = {
        "rest_port": 0,
        "tls_cert_file": str(pki.server_cert),
        "tls_key_file": str(pki.server_key),
        "http_request_timeout_seconds": 3.0,
    }
    with running_service(sqlite_url, tmp_path / "warehouse", **settings) as svc:
        cat = RestCatalog(
            "rest", uri=f"https://127.0.0.1:{svc.rest.port}", ssl={"cabundle": str(pki.ca)}
        )
        cat.create_namespace("secure")
        cat.create_table("secure.t", SCHEMA)
        assert cat.list_tables("secure") == [("secure", "t")]
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(f"http://127.0.0.1:{svc.rest.port}/v1/config", timeout=10)
        # A client that never starts its handshake holds no thread and is cut at the deadline.
        with socket.create_connection(("127.0.0.1", svc.rest.port), timeout=10) as silent:
            assert silent.recv(1) == b""
        with pytest.raises(requests.exceptions.SSLError):  # a CA that signed nothing here
            requests.get(
                f"https://127.0.0.1:{svc.rest.port}/v1/config", verify=str(pki.other_ca), timeout=10
            )
