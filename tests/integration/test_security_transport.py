"""TLS and SASL PLAIN on the Thrift port, and secrets kept out of the log: real clients over
real sockets (thriftpy2's certificate-verifying TSSLSocket; thrift_sasl with pure-sasl)."""

from __future__ import annotations

import json
import logging
import secrets
import ssl
from pathlib import Path

import pytest
from thrift.transport.TTransport import TTransportException
from thriftpy2.rpc import make_client
from thriftpy2.transport import TTransportException as Py2TransportError

from hms_cache_proxy.app import build_service
from hms_cache_proxy.cli import main
from hms_cache_proxy.idl import service as hms_service
from hms_cache_proxy.server.tls import TlsConfigError
from tests.support.security import Pki, make_pki, sasl_client
from tests.support.server import ServerProcess, running_service, settings_for


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _tls_client(port: int, ca: Path, **kw: object) -> object:
    return make_client(hms_service, "127.0.0.1", port, cafile=str(ca), timeout=30_000, **kw)


# -- TLS -------------------------------------------------------------------------------------------


def test_tls_port_serves_verifying_clients_and_refuses_others(
    pki: Pki, sqlite_url: str, tmp_path: Path
) -> None:
    """Through `serve --tls-cert --tls-key`: a client trusting our CA is served; one trusting
    another CA fails the handshake; a plaintext client gets an error, not a hang; the server
    goes on serving."""
    log = tmp_path / "serve.log"
    args = ("--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key))
    server = ServerProcess(sqlite_url, tmp_path / "wh", log, *args)
    try:
        good = _tls_client(server.port, pki.ca)
        assert good.get_all_databases() == ["default"]

        with pytest.raises(Py2TransportError) as refused:
            _tls_client(server.port, pki.other_ca)
        assert isinstance(refused.value.__context__, ssl.SSLCertVerificationError)

        plain = make_client(hms_service, "127.0.0.1", server.port, timeout=30_000)
        with pytest.raises(Exception) as caught:  # noqa: B017 - any error but a time-out
            plain.get_all_databases()
        assert not isinstance(caught.value, TimeoutError)
        plain.close()

        assert good.get_all_databases() == ["default"]  # the first client is still served
        again = _tls_client(server.port, pki.ca)
        assert again.get_database("default").name == "default"
        again.close()
        good.close()
    finally:
        server.stop()
    text = log.read_text()
    assert "TLS handshake failed" in text


def test_mutual_tls_requires_a_client_certificate(
    pki: Pki, sqlite_url: str, tmp_path: Path
) -> None:
    with running_service(
        sqlite_url,
        tmp_path / "wh",
        tls_cert_file=str(pki.server_cert),
        tls_key_file=str(pki.server_key),
        tls_ca_file=str(pki.ca),
        tls_client_auth="required",
    ) as svc:
        with_cert = _tls_client(
            svc.port, pki.ca, certfile=str(pki.client_cert), keyfile=str(pki.client_key)
        )
        assert with_cert.get_all_databases() == ["default"]
        with_cert.close()
        without = _tls_client(svc.port, pki.ca)
        with pytest.raises((ssl.SSLError, OSError, Py2TransportError, EOFError)):
            without.get_all_databases()  # TLS 1.3: the refusal arrives with the first read


@pytest.mark.parametrize(
    "change, message",
    [
        ({"tls_cert_file": "/nonexistent/cert.pem"}, "does not exist"),
        ({"tls_key_file": "OTHER_KEY"}, "does not belong to the certificate"),
        ({"tls_key_file": "CERT"}, "not a PEM certificate and its private key"),
    ],
)
def test_bad_tls_files_stop_the_start_with_a_clear_message(
    pki: Pki, sqlite_url: str, tmp_path: Path, change: dict[str, str], message: str
) -> None:
    files = {"tls_cert_file": str(pki.server_cert), "tls_key_file": str(pki.server_key)}
    substitute = {"OTHER_KEY": str(pki.other_key), "CERT": str(pki.server_cert)}
    files.update({k: substitute.get(v, v) for k, v in change.items()})
    with pytest.raises(TlsConfigError, match=message):
        build_service(settings_for(sqlite_url, tmp_path / "wh", **files))
    assert not (tmp_path / "metastore.db").exists()  # refused before the database was touched


def test_serve_refuses_a_missing_certificate(
    pki: Pki, sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["serve", "--database-url", sqlite_url, "--port", "0", "--metrics-port", "-1",
         "--tls-cert", str(tmp_path / "missing.pem"), "--tls-key", str(pki.server_key)]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    # one line naming the setting as it was given (the flag) and the file
    assert err.count("\n") == 1 and "--tls-cert" in err and "missing.pem" in err, err


# -- SASL PLAIN ------------------------------------------------------------------------------------


def test_sasl_plain_right_password_served_wrong_refused(sqlite_url: str, tmp_path: Path) -> None:
    password = "pw-" + secrets.token_hex(6)
    with running_service(
        sqlite_url, tmp_path / "wh", sasl_enabled=True, sasl_users={"alice": password}
    ) as svc:
        client = sasl_client(svc.port, "alice", password)
        assert client.get_all_databases() == ["default"]

        with pytest.raises(TTransportException, match="authentication failed for user 'alice'"):
            sasl_client(svc.port, "alice", password + "x")
        with pytest.raises(TTransportException, match="authentication failed for user 'mallory'"):
            sasl_client(svc.port, "mallory", password)
        plain = make_client(hms_service, "127.0.0.1", svc.port, timeout=30_000)
        with pytest.raises(Exception) as caught:  # noqa: B017 - any error but a time-out
            plain.get_all_databases()  # no SASL negotiation: refused
        assert not isinstance(caught.value, TimeoutError)

        assert client.get_database("default").name == "default"  # still served
        second = sasl_client(svc.port, "alice", password)
        assert second.get_all_databases() == ["default"]
        second.close()
        client.close()


def test_sasl_refuses_other_mechanisms_with_a_reason(sqlite_url: str, tmp_path: Path) -> None:
    import socket
    import struct

    with running_service(
        sqlite_url, tmp_path / "wh", sasl_enabled=True, sasl_users={"alice": "alice-pw"}
    ) as svc:
        raw = socket.create_connection(("127.0.0.1", svc.port), timeout=30)
        raw.sendall(struct.pack(">BI", 1, 6) + b"GSSAPI")
        reply = b""
        while chunk := raw.recv(4096):
            reply += chunk
        raw.close()
        status, length = struct.unpack(">BI", reply[:5])
        assert status == 3  # BAD, then the server closed the connection
        assert reply[5 : 5 + length] == (
            b"unsupported SASL mechanism 'GSSAPI': this server offers PLAIN"
        )


def test_sasl_over_tls(pki: Pki, sqlite_url: str, tmp_path: Path) -> None:
    from thrift.transport import TSSLSocket
    from thrift_sasl import TSaslClientTransport
    from thriftpy2.protocol.binary import TBinaryProtocol
    from thriftpy2.thrift import TClient

    from tests.support.security import _PureSaslClient

    with running_service(
        sqlite_url,
        tmp_path / "wh",
        tls_cert_file=str(pki.server_cert),
        tls_key_file=str(pki.server_key),
        sasl_enabled=True,
        sasl_users={"bob": "bob-password"},
    ) as svc:
        sock = TSSLSocket.TSSLSocket("127.0.0.1", svc.port, ca_certs=str(pki.ca))
        trans = TSaslClientTransport(
            lambda: _PureSaslClient("127.0.0.1", "bob", "bob-password"), "PLAIN", sock
        )
        trans.open()
        client = TClient(hms_service, TBinaryProtocol(trans))
        assert client.get_all_databases() == ["default"]
        trans.close()


# -- secrets in the log ----------------------------------------------------------------------------


@pytest.mark.postgres
def test_no_secret_reaches_the_log_at_debug(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real `serve` at DEBUG with a database password, an admin token and a SASL password;
    a failed SASL login and a few calls later, none of them is in its output."""
    from sqlalchemy.engine import make_url

    db_password = "db-pass-" + secrets.token_hex(6)
    # trust authentication ignores the password, so the URL works and still carries one
    pg_url = make_url(pg_url).set(password=db_password).render_as_string(False)
    token = "tok-" + secrets.token_hex(12)
    sasl_password = "sasl-" + secrets.token_hex(8)
    log = tmp_path / "serve.log"
    monkeypatch.setenv("HMS_CACHE_PROXY_ADMIN_TOKEN", token)
    monkeypatch.setenv("HMS_CACHE_PROXY_SASL_ENABLED", "true")
    monkeypatch.setenv("HMS_CACHE_PROXY_SASL_USERS", json.dumps({"carol": sasl_password}))
    server = ServerProcess(pg_url, tmp_path / "wh", log, "--log-level", "DEBUG")
    try:
        client = sasl_client(server.port, "carol", sasl_password)
        assert client.get_all_databases() == ["default"]
        client.close()
        with pytest.raises(TTransportException):
            sasl_client(server.port, "carol", db_password)
    finally:
        server.stop()
    text = log.read_text()
    assert "DEBUG" in text and "settings:" in text  # the log did record at DEBUG
    assert "SASL negotiation failed: authentication failed for user 'carol'" in text
    for secret in (db_password, token, sasl_password):
        assert secret not in text


def test_log_records_are_scrubbed_in_process(
    sqlite_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token = "inproc-" + secrets.token_hex(10)
    with running_service(sqlite_url, tmp_path / "wh", admin_token=token), caplog.at_level(10):
        logging.getLogger("hms_cache_proxy.test").warning("token is %s", token)
        logging.getLogger("x").info("url postgresql://u:hunter22@h/db")
        try:
            raise RuntimeError(f"failed with {token}")
        except RuntimeError:
            logging.getLogger("x").exception("boom")
    text = caplog.text
    assert token not in text and "hunter22" not in text
    assert "token is ********" in text and "postgresql://u:********@h/db" in text


def test_silent_tls_clients_are_dropped(pki: Pki, sqlite_url: str, tmp_path: Path) -> None:
    """A client that never starts the handshake, and one that goes quiet after it, are closed
    by the time-outs (the TLS path must not retry a kernel time-out forever)."""
    import socket

    with running_service(
        sqlite_url,
        tmp_path / "wh",
        tls_cert_file=str(pki.server_cert),
        tls_key_file=str(pki.server_key),
        client_timeout_seconds=0.3,
        message_timeout_seconds=0.3,
    ) as svc:
        mute = socket.create_connection(("127.0.0.1", svc.port), timeout=30)
        assert mute.recv(1) == b""  # closed by the server, not by our 30 s time-out
        mute.close()

        ctx = ssl.create_default_context(cafile=str(pki.ca))
        raw = socket.create_connection(("127.0.0.1", svc.port), timeout=30)
        quiet = ctx.wrap_socket(raw, server_hostname="127.0.0.1")  # handshake done
        assert quiet.recv(1) == b""
        quiet.close()
        client = _tls_client(svc.port, pki.ca)
        assert client.get_all_databases() == ["default"]
        client.close()
