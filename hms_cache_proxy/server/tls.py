"""TLS on the Thrift port: the server context (checked at start-up) and the per-connection
handshake, which runs in the connection's own thread so a slow or silent client never holds up
the accept loop. docs/security.md shows how to make a certificate.
"""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Callable

_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "optional": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


class TlsConfigError(ValueError):
    """The TLS settings cannot be used (a missing file, a key that does not fit, ...)."""


def _readable(path: str, setting: str) -> None:
    if not os.path.isfile(path):
        raise TlsConfigError(f"{setting}: {path} does not exist or is not a file")
    if not os.access(path, os.R_OK):
        raise TlsConfigError(f"{setting}: {path} is not readable by this process")


def _load_certificate(
    ctx: ssl.SSLContext,
    cert_file: str,
    key_file: str,
    key_password: str | None,
    names: tuple[str, str, str],
) -> None:
    """Load a PEM certificate and its key into ``ctx``; TlsConfigError naming the setting that
    is wrong (``names``: the certificate's, the key's and the password's setting)."""
    cert_setting, key_setting, password_setting = names
    _readable(cert_file, cert_setting)
    _readable(key_file, key_setting)

    def password() -> str:
        # Without this callback OpenSSL would prompt on the terminal for an encrypted key.
        if key_password is None:
            raise TlsConfigError(
                f"{key_setting} {key_file} is encrypted: set {password_setting} "
                f"(or HMS_CACHE_PROXY_{password_setting.upper()})"
            )
        return key_password

    try:
        ctx.load_cert_chain(cert_file, key_file, password=password)
    except TlsConfigError:
        raise
    except ssl.SSLError as exc:
        reason = exc.reason or str(exc)
        if "KEY_VALUES_MISMATCH" in reason.upper():
            what = f"the key in {key_file} does not belong to the certificate in {cert_file}"
        elif "BAD_DECRYPT" in reason.upper():
            what = f"{password_setting} does not decrypt {key_file}"
        else:
            what = f"{cert_file} / {key_file} are not a PEM certificate and its private key"
        raise TlsConfigError(
            f"cannot use the TLS certificate of {cert_setting}: {what} ({reason})"
        ) from None


def server_context(
    cert_file: str,
    key_file: str,
    *,
    key_password: str | None = None,
    ca_file: str | None = None,
    client_auth: str = "none",
) -> ssl.SSLContext:
    """A server context (TLS 1.2 or later) from PEM files; raises TlsConfigError saying which
    file is wrong, so the service refuses to start instead of failing every handshake."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    names = ("tls_cert_file", "tls_key_file", "tls_key_password")
    _load_certificate(ctx, cert_file, key_file, key_password, names)
    if client_auth not in _CLIENT_AUTH:
        raise TlsConfigError(f"tls_client_auth must be one of {sorted(_CLIENT_AUTH)}")
    if client_auth != "none" and not ca_file:
        raise TlsConfigError(f"tls_client_auth: {client_auth} needs tls_ca_file")
    if ca_file:
        _readable(ca_file, "tls_ca_file")
        try:
            ctx.load_verify_locations(cafile=ca_file)
        except ssl.SSLError as exc:
            raise TlsConfigError(
                f"tls_ca_file {ca_file} holds no PEM certificate ({exc.reason or exc})"
            ) from None
    ctx.verify_mode = _CLIENT_AUTH[client_auth]
    return ctx


def client_context(
    ca_file: str | None,
    cert_file: str | None = None,
    key_file: str | None = None,
    key_password: str | None = None,
) -> ssl.SSLContext:
    """A client context (TLS 1.2 or later) that checks the server's certificate and host name
    against ``ca_file`` (PEM), or the system's CAs when None, and presents ``cert_file`` and
    ``key_file`` to a server that asks for a client certificate; TlsConfigError for a bad file."""
    if ca_file is not None:
        _readable(ca_file, "upstream_tls_ca_file")
    ctx = ssl.create_default_context(cafile=ca_file)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file is not None and key_file is not None:
        names = ("upstream_tls_cert_file", "upstream_tls_key_file", "upstream_tls_key_password")
        _load_certificate(ctx, cert_file, key_file, key_password, names)
    return ctx


def handshake(
    ctx: ssl.SSLContext,
    sock: socket.socket,
    timeout: float | None,
    adopt: Callable[[socket.socket], None] | None = None,
) -> ssl.SSLSocket:
    """Wrap an accepted socket and complete the server handshake, each read bounded by
    ``timeout`` seconds.

    ``adopt`` is handed the TLS socket before the handshake starts (wrapping detaches ``sock``,
    so whoever may have to close the connection meanwhile must hold the new one). Raises
    ssl.SSLError (a plaintext client, an untrusted client certificate), TimeoutError or
    OSError; the caller closes the connection. The returned socket is left in blocking mode.
    """
    sock.settimeout(timeout)
    tls = ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
    if adopt is not None:
        adopt(tls)
    tls.do_handshake()
    tls.settimeout(None)
    return tls


def describe_failure(exc: BaseException) -> str:
    """A short reason for the log: what went wrong in a handshake, without a traceback."""
    if isinstance(exc, ssl.SSLError):
        reason = getattr(exc, "reason", None) or exc.strerror or str(exc)
        hint = ""
        if reason in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL"):
            hint = " (a client without TLS?)"
        return f"TLS handshake failed: {reason}{hint}"
    if isinstance(exc, TimeoutError):
        return "TLS handshake timed out"
    return f"TLS handshake failed: {exc}"
