"""Throwaway certificates (made by the openssl CLI in a test's directory) and a SASL PLAIN
Thrift client (thrift_sasl's transport with a pure-sasl mechanism, as impyla and PyHive use)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thrift.transport import TSocket
from thriftpy2.protocol.binary import TBinaryProtocol
from thriftpy2.thrift import TClient

from hms_cache_proxy.idl import service

_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@dataclass(frozen=True)
class Pki:
    """A CA and what it signed; ``other_ca`` signed nothing here."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    other_key: Path


def make_pki(directory: Path) -> Pki:
    """A CA, a server certificate for 127.0.0.1/localhost, a client certificate, another CA."""
    d = directory
    d.mkdir(parents=True, exist_ok=True)
    for name in ("ca", "other"):
        _openssl("req", "-x509", *_EC, "-keyout", f"{name}.key", "-out", f"{name}.pem",
                 "-days", "2", "-subj", f"/CN=hms test {name}", cwd=d)  # fmt: skip
    (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name in ("server", "client"):
        _openssl("req", *_EC, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", cwd=d)  # fmt: skip
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-out", f"{name}.pem",
                 "-extfile", f"{name}.ext", cwd=d)  # fmt: skip
    return Pki(
        ca=d / "ca.pem",
        server_cert=d / "server.pem",
        server_key=d / "server.key",
        client_cert=d / "client.pem",
        client_key=d / "client.key",
        other_ca=d / "other.pem",
        other_key=d / "other.key",
    )


class _PureSaslClient:
    """The ``sasl.Client`` interface thrift_sasl calls, over pure-sasl's SASLClient."""

    def __init__(self, host: str, user: str, password: str) -> None:
        from puresasl.client import SASLClient

        self._client = SASLClient(
            host, service="hive", mechanism="PLAIN", username=user, password=password
        )
        self._error = ""

    def start(self, mechanism: str) -> tuple[bool, str, bytes]:
        return True, self._client.mechanism, self._client.process()

    def step(self, challenge: bytes) -> tuple[bool, bytes]:
        return True, self._client.process(challenge)

    def encode(self, data: bytes) -> tuple[bool, bytes]:
        return True, self._client.wrap(data)

    def decode(self, data: bytes) -> tuple[bool, bytes]:
        return True, self._client.unwrap(data)

    def getError(self) -> str:  # noqa: N802 - thrift_sasl's name
        return self._error


def sasl_client(
    port: int, user: str, password: str, timeout_ms: int = 30_000, sock: Any = None
) -> Any:
    """An opened ThriftHiveMetastore client authenticated by SASL PLAIN (raises if refused);
    ``sock``: an unopened Apache ``TSocket`` to use instead of one to 127.0.0.1:port."""
    from thrift_sasl import TSaslClientTransport

    if sock is None:
        sock = TSocket.TSocket("127.0.0.1", port)
        sock.setTimeout(timeout_ms)
    trans = TSaslClientTransport(
        lambda: _PureSaslClient("127.0.0.1", user, password), "PLAIN", sock
    )
    trans.open()
    return TClient(service, TBinaryProtocol(trans))
