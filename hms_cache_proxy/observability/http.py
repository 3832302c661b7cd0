"""The operator's HTTP endpoint: /metrics, /healthz, /readyz, /config, /admin/{refresh,flush}.

Its own port, next to the Thrift port, so scrapes and probes never queue behind metastore
calls. Requests are read whole by one selector loop (``http_intake``: a deadline per request,
connections limited per client address with a reserve), then answered by ``http.server``'s
request handler on a thread of their own; no web framework is needed. HTTP/1.0: one request
per connection, which keeps every error path simple (nothing left half-read on a kept-alive
socket).

- GET  /metrics         Prometheus text (or OpenMetrics when asked) from ``metrics.REGISTRY``.
- GET  /healthz         200 when Thrift is being served and the database answers a trivial query
                        (checked at most once a second, bounded by a timeout); 503 otherwise.
                        In upstream mode the upstream is checked instead, and named so.
- GET  /readyz          200 when ready to serve (schema checked, Thrift listening, the cache's
                        say-so); the body reports prewarm progress either way.
- GET  /config          the settings with secrets masked; needs the admin token.
- POST /admin/refresh   reload (refresh) or drop (flush) a database, table or partition from the
- POST /admin/flush     cache; ``db``, ``table``, ``partition`` as JSON, form or query fields;
                        needs the admin token.
- POST /admin/poller/pause?seconds=N   stall the cache's poller for N seconds (a fault the
                        consistency checker injects); needs the admin token.

The admin token is compared in constant time and never logged; with no token configured the
endpoints that need it answer 403. Bodies above ``MAX_BODY_BYTES`` are refused unread.
"""

from __future__ import annotations

import functools
import gzip
import hmac
import io
import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from hms_cache_proxy import __version__
from hms_cache_proxy.admission import Admission
from hms_cache_proxy.config import Settings
from hms_cache_proxy.observability import metrics
from hms_cache_proxy.observability.admin import MAX_PAUSE_SECONDS, AdminError, AdminTarget, scope
from hms_cache_proxy.observability.health import DatabaseHealth
from hms_cache_proxy.observability.http_intake import (
    RequestIntake,
    answer_and_close,
    status_only,
)
from hms_cache_proxy.observability.readiness import Readiness

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 8 * 1024
"""Largest admin request body read; a scope is a few names, so anything bigger is a mistake."""
MAX_CONCURRENT = 32
"""Whole requests answered at once; more are answered 503 at once (probes must not pile
threads). Requests still arriving hold no thread (``http_intake``)."""
WRITE_TIMEOUT_SECONDS = 10.0
"""Per socket write of an answer, and per read of an oversize body being swallowed."""
_DRAIN_BYTES = 1024 * 1024
_DRAIN_SECONDS = 2.0

_GET_ROUTES = {
    "/metrics": "_get_metrics",
    "/healthz": "_get_healthz",
    "/readyz": "_get_readyz",
    "/config": "_get_config",
}
_POST_ROUTES = {"/admin/refresh": "refresh", "/admin/flush": "flush"}
_PAUSE_ROUTE = "/admin/poller/pause"
_ADMIN_FIELDS = ("db", "table", "partition")
ENDPOINTS = (*_GET_ROUTES, *_POST_ROUTES, _PAUSE_ROUTE)
"""Every path served (docs/operations.md documents each; a test holds them to it)."""


@dataclass
class Endpoints:
    """What the endpoints consult; the service builds one (tests may pass their own parts)."""

    settings: Settings
    serving: Callable[[], bool]  # the Thrift server is accepting and serving calls
    health: DatabaseHealth
    readiness: Readiness
    admin: AdminTarget
    registry: CollectorRegistry = field(default_factory=lambda: metrics.REGISTRY)


class ObservabilityServer:
    """The HTTP endpoint on ``host:port`` (port 0: a free port), served from a daemon thread."""

    def __init__(self, host: str, port: int, endpoints: Endpoints) -> None:
        self.host = host
        self.requested_port = port
        self.endpoints = endpoints
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def bind(self) -> int:
        """Open the listening socket (raises OSError if the port is taken); returns the port."""
        if self._server is None:
            family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            self._server = _Server((self.host, self.requested_port), self.endpoints, family)
        return self.port

    def start(self) -> None:
        self.bind()
        assert self._server is not None
        self._thread = threading.Thread(
            target=self._server.intake.serve_forever,
            kwargs={"poll_interval": 0.5},
            name="hms-http",
            daemon=True,
        )
        self._thread.start()
        log.info("serving /metrics, /healthz, /readyz on %s", self.url)

    def stop(self) -> None:
        if self._server is None:
            return
        if self._thread is not None:
            self._server.intake.shutdown()
            self._thread.join(timeout=5)
        self._server.close()
        self._server = None
        self._thread = None

    @property
    def port(self) -> int:
        if self._server is None:
            return self.requested_port
        return int(self._server.address[1])

    @property
    def url(self) -> str:
        """A URL for this endpoint (the loopback address when listening on every interface)."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"


class _Server:
    """The listening socket, the intake reading requests, and a thread per whole request."""

    def __init__(
        self, address: tuple[str, int], endpoints: Endpoints, family: socket.AddressFamily
    ) -> None:
        self.endpoints = endpoints
        self.listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.listener.bind(address)
            self.listener.listen(128)
        except OSError:
            self.listener.close()
            raise
        self.address = self.listener.getsockname()
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT)
        settings = endpoints.settings
        self.intake = RequestIntake(
            self.listener,
            Admission(settings.http_connection_limits()),
            settings.http_request_timeout_seconds,
            MAX_BODY_BYTES,
            self._handoff,
            on_dropped=functools.partial(metrics.connection_dropped, "http"),
        )

    def _handoff(
        self, sock: socket.socket, peer: Any, request: bytes, release: Callable[[], None]
    ) -> None:
        if not self._slots.acquire(blocking=False):  # answered on the intake's thread: no wait
            answer_and_close(sock, status_only(503, "Service Unavailable"))
            release()
            return
        try:
            threading.Thread(
                target=self._answer,
                args=(sock, peer, request, release),
                name=f"hms-http-{peer[0]}",
                daemon=True,
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
            log.debug("HTTP answer to %s failed", peer, exc_info=True)
        finally:
            _close(sock)
            self._slots.release()
            release()

    def close(self) -> None:
        self.listener.close()


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    sock.close()


class _SocketWriter(io.BufferedIOBase):
    """wfile: every write sent whole (a raw socket file may write part of a buffer)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._sock.sendall(data)
        return len(data)


class _Reply(Exception):
    """Ends a request early with a JSON error (raised by checks, sent by the dispatcher)."""

    def __init__(self, status: int, message: str, headers: tuple[tuple[str, str], ...] = ()):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


class _Handler(BaseHTTPRequestHandler):
    """Answers one request whose bytes the intake has already read (``received``)."""

    server: _Server  # type: ignore[assignment]
    server_version = f"hms-cache-proxy/{__version__}"
    sys_version = ""
    _body_pending = False

    def __init__(self, sock: socket.socket, peer: Any, server: _Server, received: bytes) -> None:
        self._received = received
        super().__init__(sock, peer, server)  # type: ignore[arg-type]

    def setup(self) -> None:
        self.connection = self.request
        self.connection.settimeout(WRITE_TIMEOUT_SECONDS)
        self.rfile = io.BytesIO(self._received)
        self.wfile = _SocketWriter(self.connection)

    # -- dispatch --------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._dispatch()

    def do_HEAD(self) -> None:  # noqa: N802
        self._dispatch()

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch()

    def __getattr__(self, name: str) -> Any:
        # http.server looks up do_<METHOD>; every other method gets 405 (or 404), not 501.
        if name.startswith("do_"):
            return self._dispatch
        raise AttributeError(name)

    def _dispatch(self) -> None:
        path = urlsplit(self.path).path
        self._body_pending = bool(
            self.headers.get("Content-Length", "0").strip() not in ("", "0")
            or self.headers.get("Transfer-Encoding")
        )
        try:
            if self.command in ("GET", "HEAD") and path in _GET_ROUTES:
                getattr(self, _GET_ROUTES[path])()
            elif self.command == "POST" and path in _POST_ROUTES:
                self._admin(_POST_ROUTES[path])
            elif self.command == "POST" and path == _PAUSE_ROUTE:
                self._pause_poller()
            elif path in _GET_ROUTES or path in _POST_ROUTES or path == _PAUSE_ROUTE:
                allow = "GET, HEAD" if path in _GET_ROUTES else "POST"
                raise _Reply(405, f"{self.command} not allowed on {path}", (("Allow", allow),))
            else:
                raise _Reply(404, f"no such endpoint: {path}")
        except _Reply as reply:
            self._json(reply.status, {"error": reply.message}, reply.headers)
        except Exception:  # noqa: BLE001 - one bad request must not take the endpoint down
            log.exception("HTTP %s %s failed", self.command, path)
            self._json(500, {"error": "internal error (see the service log)"})

    # -- endpoints -------------------------------------------------------------------------------

    def _get_metrics(self) -> None:
        encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
        body = encoder(self.server.endpoints.registry)
        headers: tuple[tuple[str, str], ...] = ()
        if "gzip" in self.headers.get("Accept-Encoding", ""):
            body = gzip.compress(body, compresslevel=1)
            headers = (("Content-Encoding", "gzip"),)
        self._send(200, body, content_type, headers)

    def _get_healthz(self) -> None:
        ep = self.server.endpoints
        serving = ep.serving()
        result = ep.health.check()
        subject = ep.health.subject  # "database", or "upstream" in upstream mode
        body: dict[str, Any] = {
            "status": "ok" if serving and result.ok else "unavailable",
            "thrift": "serving" if serving else "not serving",
            subject: "ok" if result.ok else "error",
        }
        if result.seconds is not None:
            body[f"{subject}_seconds"] = round(result.seconds, 6)
        reasons = ([] if serving else ["Thrift server is not serving"]) + (
            [] if result.ok else [result.reason or f"{subject} error"]
        )
        if reasons:
            body["reason"] = "; ".join(reasons)
        self._json(200 if not reasons else 503, body)

    def _get_readyz(self) -> None:
        ep = self.server.endpoints
        serving = ep.serving()
        snap = ep.readiness.snapshot()
        ready = bool(snap["ready"]) and serving
        reason = None
        if not ready:
            if snap["stopping"]:
                reason = snap["reason"]
            elif not snap["schema_checked"]:
                reason = "database schema not checked yet"
            elif not serving:
                reason = "Thrift server is not serving"
            else:
                reason = snap["reason"] or "not ready"
        # "ready" says what the status code says (the flag alone may be true while stopping).
        body = {"ready": ready, "serving": serving, **snap}
        body["ready"], body["reason"] = ready, reason
        self._json(200 if ready else 503, body)

    def _get_config(self) -> None:
        self._authorize()
        self._json(200, self.server.endpoints.settings.redacted())

    def _admin(self, action: str) -> None:
        self._authorize()
        body = self._read_body()
        db, table, partition = self._admin_scope(body)
        named = scope(db, table, partition)
        log.info("admin %s %s requested by %s", action, named, self.client_address[0])
        target = self.server.endpoints.admin
        try:
            answer = getattr(target, action)(db, table, partition)
        except AdminError as exc:
            raise _Reply(exc.status, str(exc)) from exc
        self._json(200, answer)

    def _pause_poller(self) -> None:
        self._authorize()
        self._read_body()
        fields = _form_fields(urlsplit(self.path).query, "query string")
        unknown = sorted(set(fields) - {"seconds"})
        if unknown:
            raise _Reply(400, f"unknown field(s) {unknown}; expected seconds")
        try:
            seconds = float(fields.get("seconds", ""))
        except ValueError:
            raise _Reply(400, "seconds must be a number, e.g. ?seconds=2") from None
        if not 0 < seconds <= MAX_PAUSE_SECONDS:
            raise _Reply(400, f"seconds must be in (0, {MAX_PAUSE_SECONDS:g}]")
        pause = getattr(self.server.endpoints.admin, "pause_poller", None)
        if pause is None:
            raise _Reply(409, "this instance has no cache (cache_enabled: false): no poller")
        log.warning("admin poller pause %gs requested by %s", seconds, self.client_address[0])
        self._json(200, pause(seconds))

    # -- admin helpers ---------------------------------------------------------------------------

    def _authorize(self) -> None:
        token = self.server.endpoints.settings.admin_token
        expected = token.get_secret_value() if token is not None else ""
        if not expected:
            raise _Reply(403, "admin endpoints are disabled: no admin_token is configured")
        scheme, _, given = self.headers.get("Authorization", "").strip().partition(" ")
        challenge = (("WWW-Authenticate", 'Bearer realm="hms-cache-proxy"'),)
        if scheme.lower() != "bearer" or not given.strip():
            log.warning(
                "%s %s from %s refused: no bearer token",
                self.command,
                urlsplit(self.path).path,
                self.client_address[0],
            )
            raise _Reply(401, "admin token required (Authorization: Bearer <token>)", challenge)
        if not hmac.compare_digest(given.strip().encode(), expected.encode()):
            log.warning(
                "%s %s from %s refused: wrong token",
                self.command,
                urlsplit(self.path).path,
                self.client_address[0],
            )
            raise _Reply(401, "invalid admin token", challenge)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            raise _Reply(411, "send the body with a Content-Length (no chunked encoding)")
        raw = self.headers.get("Content-Length", "0").strip() or "0"
        try:
            length = int(raw)
        except ValueError:
            raise _Reply(400, f"invalid Content-Length {raw[:20]!r}") from None
        if length < 0:
            raise _Reply(400, "invalid Content-Length")
        if length > MAX_BODY_BYTES:
            raise _Reply(413, f"request body larger than {MAX_BODY_BYTES} bytes")
        body = self.rfile.read(length) if length else b""
        self._body_pending = False
        if len(body) != length:
            raise _Reply(400, "request body shorter than its Content-Length")
        return body

    def _admin_scope(self, body: bytes) -> tuple[str, str | None, str | None]:
        fields: dict[str, Any] = {}
        sources = [_form_fields(urlsplit(self.path).query, "query string")]
        if body.strip():
            content_type = self.headers.get_content_type()
            if content_type == "application/json" or body.lstrip().startswith(b"{"):
                sources.append(_json_fields(body))
            elif content_type in ("application/x-www-form-urlencoded", "text/plain"):
                sources.append(_form_fields(_utf8(body), "form body"))
            else:
                raise _Reply(415, f"unsupported Content-Type {content_type}: send JSON or a form")
        for source in sources:
            for key, value in source.items():
                if key in fields:
                    raise _Reply(400, f"field {key!r} given more than once")
                fields[key] = value
        unknown = sorted(set(fields) - set(_ADMIN_FIELDS))
        if unknown:
            raise _Reply(400, f"unknown field(s) {unknown}; expected db, table, partition")
        values: dict[str, str | None] = {}
        for key in _ADMIN_FIELDS:
            given = fields.get(key)
            if given is not None and (not isinstance(given, str) or not given.strip()):
                raise _Reply(400, f"{key} must be a non-empty string")
            values[key] = given.strip() if isinstance(given, str) else None
        db, table, partition = values["db"], values["table"], values["partition"]
        if db is None:
            path = urlsplit(self.path).path
            raise _Reply(
                400,
                "db is required (the database to act on); the fields are db, table (optional) "
                "and partition (optional, with table), as a query string "
                f"({path}?db=sales&table=orders), a form or JSON "
                '({"db": "sales", "table": "orders"}); see docs/operations.md',
            )
        if partition is not None and table is None:
            raise _Reply(400, "partition needs table")
        # Hive names databases and tables case-insensitively; the cache keys them lower case.
        return db.lower(), table.lower() if table else None, partition

    # -- responses -------------------------------------------------------------------------------

    def _json(
        self, status: int, body: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        data = json.dumps(body, default=str, sort_keys=False).encode() + b"\n"
        self._send(status, data, "application/json", headers)

    def _send(
        self, status: int, body: bytes, content_type: str, headers: tuple[tuple[str, str], ...]
    ) -> None:
        self._discard_small_body()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        if self._body_pending:
            self._drain()

    def _discard_small_body(self) -> None:
        """Read an unread body that fits the limit, so the client gets to see our answer."""
        if not self._body_pending or self.headers.get("Transfer-Encoding"):
            return
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            return
        if 0 <= length <= MAX_BODY_BYTES:
            self.rfile.read(length)
            self._body_pending = False

    def _drain(self) -> None:
        """Lingering close: answer first, then swallow (a bounded amount of) the unread body.

        Closing with unread bytes makes the kernel send a reset, which can destroy our answer
        before the client reads it; the client should learn why it was refused.
        """
        self._body_pending = False
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(0.5)
            deadline = time.monotonic() + _DRAIN_SECONDS
            left = _DRAIN_BYTES
            while left > 0 and time.monotonic() < deadline:
                chunk = self.connection.recv(min(65536, left))
                if not chunk:
                    break
                left -= len(chunk)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
        # Request lines carry no secrets (the token travels in a header); DEBUG keeps scrapes quiet.
        log.debug("%s %s", self.address_string(), format % args)


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Reply(400, "request body is not UTF-8") from None


def _json_fields(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(_utf8(body))
    except json.JSONDecodeError as exc:
        raise _Reply(400, f"invalid JSON body: {exc.msg} at {exc.pos}") from None
    if not isinstance(value, dict):
        raise _Reply(400, 'the JSON body must be an object like {"db": "sales"}')
    return value


def _form_fields(text: str, where: str) -> dict[str, str]:
    try:
        parsed = parse_qs(text, keep_blank_values=True, strict_parsing=False, errors="strict")
    except UnicodeDecodeError:
        raise _Reply(400, f"{where} is not UTF-8") from None
    out: dict[str, str] = {}
    for key, values in parsed.items():
        if len(values) != 1:
            raise _Reply(400, f"field {key!r} given more than once")
        out[key] = values[0]
    return out
