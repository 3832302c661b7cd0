"""The REST catalog's port: requests read whole by the service's intake (a deadline per
request, connections limited per client address), then answered on a thread of their own,
one request per connection (HTTP/1.0); HTTPS with the Thrift port's TLS settings when set.
Bearer tokens name users as SASL does, so the user's allow-list applies
(``access.set_user``); bodies above ``rest_max_body_bytes`` are refused."""

from __future__ import annotations

import functools
import hmac
import io
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from hms_cache_proxy import __version__
from hms_cache_proxy.admission import Admission
from hms_cache_proxy.config import Settings
from hms_cache_proxy.handler import access
from hms_cache_proxy.observability import metrics
from hms_cache_proxy.observability.http_intake import RequestIntake, answer_and_close, status_only
from hms_cache_proxy.rest.catalog import Catalog
from hms_cache_proxy.rest.errors import RestError
from hms_cache_proxy.rest.idempotency import MAX_KEY_LENGTH, IdempotencyKeys
from hms_cache_proxy.rest.routes import MUTATIONS, match

log = logging.getLogger(__name__)

MAX_CONCURRENT = 64
"""Requests answered at once (a commit may wait on a table lock); more get 503 at once."""
WRITE_TIMEOUT_SECONDS = 30.0


class RestServer:
    """The REST catalog on ``host:port`` (port 0: a free port), served from a daemon thread."""

    def __init__(self, settings: Settings, handler: Any, tls: ssl.SSLContext | None = None) -> None:
        self.settings = settings
        self.tls = tls
        self.catalog = Catalog(handler, settings)
        self.keys = IdempotencyKeys(settings.rest_idempotency_lifetime_seconds)
        self.tokens = {u: t.get_secret_value() for u, t in settings.rest_tokens.items()}
        self._listener: socket.socket | None = None
        self._intake: RequestIntake | None = None
        self._thread: threading.Thread | None = None
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT)

    def bind(self) -> int:
        if self._listener is None:
            host = self.settings.rest_host
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            listener = socket.socket(family, socket.SOCK_STREAM)
            try:
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listener.bind((host, self.settings.rest_port or 0))
                listener.listen(128)
            except OSError:
                listener.close()
                raise
            self._listener = listener
            self._intake = RequestIntake(
                listener,
                Admission(self.settings.http_connection_limits()),
                self.settings.http_request_timeout_seconds,
                self.settings.rest_max_body_bytes,
                self._handoff,
                on_dropped=functools.partial(metrics.connection_dropped, "rest"),
                tls=self.tls,
            )
        return self.port

    @property
    def port(self) -> int:
        if self._listener is None:
            return self.settings.rest_port or 0
        return int(self._listener.getsockname()[1])

    def start(self) -> None:
        self.bind()
        assert self._intake is not None
        self._thread = threading.Thread(
            target=self._intake.serve_forever, name="hms-rest", daemon=True
        )
        self._thread.start()
        log.info(
            "serving the Iceberg REST catalog on %s://%s:%d (%s)",
            "https" if self.tls is not None else "http",
            self.settings.rest_host,
            self.port,
            f"bearer tokens of {len(self.tokens)} users" if self.tokens else "no authentication",
        )

    def stop(self) -> None:
        if self._intake is not None:
            self._intake.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._listener is not None:
            self._listener.close()
        self._listener = self._intake = self._thread = None

    def _handoff(
        self, sock: socket.socket, peer: Any, request: bytes, release: Callable[[], None]
    ) -> None:
        if not self._slots.acquire(blocking=False):
            answer_and_close(sock, status_only(503, "Service Unavailable"))
            release()
            return
        try:
            threading.Thread(
                target=self._answer, args=(sock, peer, request, release), daemon=True
            ).start()
        except BaseException:
            self._slots.release()
            raise

    def _answer(
        self, sock: socket.socket, peer: Any, request: bytes, release: Callable[[], None]
    ) -> None:
        try:
            _Handler(sock, peer, self, request)
        except Exception:  # noqa: BLE001 - a client gone mid-answer ends only its request
            log.debug("REST answer to %s failed", peer, exc_info=True)
        finally:
            access.set_user(None)
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            sock.close()
            self._slots.release()
            release()

    def user_of(self, authorization: str) -> str | None:
        """The user a bearer token names (None when no tokens are configured); 401 otherwise."""
        if not self.tokens:
            return None
        scheme, _, given = authorization.strip().partition(" ")
        if scheme.lower() == "bearer" and given.strip():
            for user, token in self.tokens.items():
                if hmac.compare_digest(given.strip().encode(), token.encode()):
                    return user
        raise RestError(401, "NotAuthorizedException", "a valid bearer token is required")


class _Writer(io.BufferedIOBase):
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._sock.sendall(data)
        return len(data)


class _Handler(BaseHTTPRequestHandler):
    """Answers one request whose bytes the intake has already read."""

    server: RestServer  # type: ignore[assignment]
    server_version = f"hms-cache-proxy/{__version__}"
    sys_version = ""
    _op = "unknown"  # the route's operation, for the metrics

    def __init__(self, sock: socket.socket, peer: Any, server: RestServer, received: bytes):
        self._received = received
        super().__init__(sock, peer, server)  # type: ignore[arg-type]

    def setup(self) -> None:
        self.connection = self.request
        self.connection.settimeout(WRITE_TIMEOUT_SECONDS)
        self.rfile = io.BytesIO(self._received)
        self.wfile = _Writer(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
        log.debug("REST %s: " + format, self.client_address[0], *args)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):
            return self._dispatch
        raise AttributeError(name)

    def _dispatch(self) -> None:
        url = urlsplit(self.path)
        started = time.monotonic()
        self._op = "unknown"
        try:
            status, body = self._run(url.path, dict(parse_qsl(url.query)))
        except RestError as exc:
            status, body = exc.status, exc.body()
        except Exception:  # noqa: BLE001 - one bad request must not take the port down
            log.exception("REST %s %s failed", self.command, url.path)
            status = 500
            body = RestError(500, "ServiceFailureException", "internal error (see the log)").body()
        metrics.observe_rest(self._op, status, time.monotonic() - started)
        self.send_response(status)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body) if self.command != "HEAD" else 0))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _run(self, path: str, query: dict[str, str]) -> tuple[int, bytes]:
        access.set_user(self.server.user_of(self.headers.get("Authorization", "")))
        op, ns, table = match(self.command, path)
        self._op = op
        body = self._body()
        key = self.headers.get("Idempotency-Key")
        if key and op in MUTATIONS and self.server.keys.lifetime > 0:
            if len(key) > MAX_KEY_LENGTH:
                raise RestError(400, "BadRequestException", "Idempotency-Key is too long")
            scope = (access.current_user() or "", self.command, path, key)
            return self.server.keys.run(
                scope, lambda: _answered(self.server.catalog.answer, op, ns, table, query, body)
            )
        return self.server.catalog.answer(op, ns, table, query, body)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            raise RestError(411, "BadRequestException", "send a Content-Length (no chunked body)")
        raw = (self.headers.get("Content-Length") or "0").strip()
        if not raw.isdigit():
            raise RestError(400, "BadRequestException", f"invalid Content-Length {raw[:20]!r}")
        length = int(raw)
        if length > self.server.settings.rest_max_body_bytes:
            raise RestError(
                413, "BadRequestException", "request body larger than rest_max_body_bytes"
            )
        return self.rfile.read(length)


def _answered(answer: Callable[..., tuple[int, bytes]], *args: Any) -> tuple[int, bytes]:
    """An answer or the error's answer (so an idempotent retry gets the same refusal)."""
    try:
        return answer(*args)
    except RestError as exc:
        return exc.status, exc.body()
