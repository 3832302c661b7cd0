"""Pass-through mode: every call forwarded to an upstream metastore as it came, its reply
relayed as it came.

Only the message header is read (``wire.MessageReader`` has already checked the sizes the
server's limits allow); the arguments and the reply are never decoded, so every method works,
including those this project does not implement and those of newer Hive versions. The seqid
travels unchanged, so the reply's is the client's.

The caller's identity reaches the upstream: ``set_ugi`` and ``setMetaConf`` are kept as the
connection's session state and every call runs on an upstream connection in that state
(``upstream.UpstreamPool``); a SASL-authenticated client that never calls ``set_ugi`` has one
made for its user. With ``login_as_caller`` each call runs on an upstream connection logged in
with the caller's own SASL PLAIN user and password (``remember_login``). An upstream that
cannot answer gives the client the method's MetaException when the IDL declares one, else an
INTERNAL_ERROR TApplicationException, naming the upstream.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
from thriftpy2.thrift import TApplicationException, TMessageType
from thriftpy2.utils import serialize

from hms_cache_proxy.handler.access import current_user
from hms_cache_proxy.idl import hms
from hms_cache_proxy.server import message_bytes
from hms_cache_proxy.server.cached_calls import CACHED
from hms_cache_proxy.server.sidecar_cache import Load, SidecarCache, succeeded
from hms_cache_proxy.server.upstream import Login, State, UpstreamError, UpstreamPool
from hms_cache_proxy.server.wire import Message

log = logging.getLogger(__name__)

CallObserver = Callable[[str, float, str], None]

SESSION_CALLS = frozenset({"set_ugi", "setMetaConf"})
"""Calls whose effect lasts for the rest of the connection on the upstream."""


class _Session(threading.local):
    """One client connection's session state (one thread serves each connection)."""

    state: State | None = None
    login: Login | None = None  # the caller's SASL PLAIN login (with login_as_caller)


class PassThrough:
    """The processor of a server in front of ``pool``'s upstream (see ``processor.Processor``
    for the interface ``ThriftServer`` uses)."""

    def __init__(
        self,
        service: Any,
        pool: UpstreamPool,
        *,
        compact: bool = False,
        observer: CallObserver | None = None,
        upstream_observer: CallObserver | None = None,
        cache: SidecarCache | None = None,
        login_as_caller: bool = False,
    ) -> None:
        """``cache``: answer the hot reads from the upstream-mode cache (binary protocol);
        ``login_as_caller``: log in to the upstream as each caller (``remember_login``)."""
        self._service = service
        self._login_as_caller = login_as_caller
        self._cache = None if compact else cache
        self._pool = pool
        self._compact = compact
        self._observer = observer
        self._upstream_observer = upstream_observer
        self._known = frozenset(service.thrift_services)
        self._oneway = frozenset(
            name
            for name in service.thrift_services
            if getattr(getattr(service, name + "_result"), "oneway", False)
        )
        self._session = _Session()
        self._proto = TCompactProtocolFactory() if compact else TBinaryProtocolFactory()

    @property
    def args_classes(self) -> list[type]:
        return []  # arguments are never decoded here

    def remember_login(self, user: str, password: str) -> None:
        """The SASL PLAIN login this connection proved (called in its thread after the
        negotiation): its calls log in to the upstream with it. Kept for the connection's
        life only, in its thread."""
        if self._login_as_caller:
            self._session.login = (user, password)

    def note(self, api: str, outcome: str) -> None:
        """Count a message the server refused before forwarding it (a limit, malformed bytes)."""
        self._observe(self._label(api), time.perf_counter(), outcome)

    def process_message(self, msg: Message, oprot: Any, decode: Any) -> None:
        started = time.perf_counter()
        api, seqid = msg.name, msg.seqid
        if msg.mtype not in (TMessageType.CALL, TMessageType.ONEWAY):
            self._send_exception(
                oprot,
                api,
                seqid,
                TApplicationException(
                    TApplicationException.INVALID_MESSAGE_TYPE,
                    f"Unexpected message type {msg.mtype} for method '{api}'",
                ),
            )
            self._observe("unknown_method", started, "unknown_method")
            return
        oneway = msg.mtype == TMessageType.ONEWAY or api in self._oneway
        state = self._state()
        after = state
        if api in SESSION_CALLS:
            after = _with(state, self._session_message(api, msg.body))
        cache, load, before = self._cache, None, None
        if cache is not None:
            if api in CACHED and msg.mtype == TMessageType.CALL:
                hit, load = cache.lookup(state, api, msg.body)
                if hit is not None:
                    oprot.trans.write(self._header(api, TMessageType.REPLY, seqid) + hit)
                    oprot.trans.flush()
                    self._observe(api, started, "ok")
                    return
            else:
                before = cache.before_write(api)
        request = self._header(api, msg.mtype, seqid) + msg.body
        sent = time.perf_counter()
        try:
            reply = self._pool.call(state, request, not oneway, after, self._session.login)
            if reply is not None and reply.seqid != seqid:
                raise UpstreamError(
                    f"upstream {self._pool.uri}: reply seqid {reply.seqid} for call seqid {seqid}"
                )
        except UpstreamError as exc:
            if cache is not None:
                if load is not None:
                    cache.finish(load, TMessageType.EXCEPTION, None)
                elif api not in CACHED:
                    cache.wrote(api, None, False, msg.body)  # it may have reached the upstream
            log.warning("%s: %s", api, exc)
            self._observe_upstream(api, sent, "upstream_error")
            self._observe(self._label(api), started, "upstream_error")
            if not oneway:
                self._send_failure(oprot, api, seqid, str(exc))
            return
        self._observe_upstream(api, sent, "ok")
        if cache is not None:
            _after_forward(cache, api, msg.body, load, before, reply)
        outcome = "ok"
        if reply is not None:
            if reply.mtype == TMessageType.EXCEPTION:
                outcome = "application_error"
            elif api in SESSION_CALLS:
                self._session.state = after
            oprot.trans.write(self._header(reply.name, reply.mtype, reply.seqid) + reply.body)
            oprot.trans.flush()
        elif api in SESSION_CALLS:
            self._session.state = after
        self._observe(self._label(api), started, outcome)

    # -- the session -----------------------------------------------------------------------------

    def _state(self) -> State:
        state = self._session.state
        if state is None:
            user = current_user()  # the SASL user of this connection, if any
            state = (self._set_ugi_message(user),) if user else ()
            self._session.state = state
        return state

    def _session_message(self, api: str, body: bytes) -> bytes:
        return self._header(api, TMessageType.CALL, 0) + body

    def _set_ugi_message(self, user: str) -> bytes:
        args = self._service.set_ugi_args(user_name=user, group_names=[])
        return self._session_message("set_ugi", serialize(args, self._proto))

    # -- replies of our own ----------------------------------------------------------------------

    def _header(self, name: str, mtype: int, seqid: int) -> bytes:
        return message_bytes.header(name, mtype, seqid, compact=self._compact)

    def _send_failure(self, oprot: Any, api: str, seqid: int, message: str) -> None:
        """The method's MetaException when it declares one, else INTERNAL_ERROR."""
        result_cls = getattr(self._service, api + "_result", None) if api in self._known else None
        field = _meta_field(result_cls) if result_cls is not None else None
        if field is None:
            exc = TApplicationException(TApplicationException.INTERNAL_ERROR, message)
            self._send_exception(oprot, api, seqid, exc)
            return
        result = result_cls()  # type: ignore[misc]
        setattr(result, field, hms.MetaException(message=message))
        oprot.write_message_begin(api, TMessageType.REPLY, seqid)
        oprot.write_struct(result)
        oprot.write_message_end()
        oprot.trans.flush()

    def _send_exception(self, oprot: Any, api: str, seqid: int, exc: TApplicationException) -> None:
        oprot.write_message_begin(api, TMessageType.EXCEPTION, seqid)
        exc.write(oprot)
        oprot.write_message_end()
        oprot.trans.flush()

    # -- metrics ---------------------------------------------------------------------------------

    def _label(self, api: str) -> str:
        return api if api in self._known else "unknown_method"  # names are the client's to pick

    def _observe(self, api: str, started: float, outcome: str) -> None:
        if self._observer is not None:
            self._observer(api, time.perf_counter() - started, outcome)

    def _observe_upstream(self, api: str, sent: float, outcome: str) -> None:
        if self._upstream_observer is not None:
            self._upstream_observer(self._label(api), time.perf_counter() - sent, outcome)


def _after_forward(
    cache: SidecarCache,
    api: str,
    request: bytes,
    load: Load | None,
    before: int | None,
    reply: Message | None,
) -> None:
    """Install a miss's reply, or note a call that may have written (``request``: its
    arguments)."""
    if load is not None:
        if reply is None:
            cache.finish(load, TMessageType.EXCEPTION, None)
        else:
            cache.finish(load, reply.mtype, reply.body)
    elif api not in CACHED:
        ok = reply is not None and reply.mtype == TMessageType.REPLY and succeeded(reply.body)
        cache.wrote(api, before, ok, request)


def _with(state: State, message: bytes) -> State:
    """``state`` after ``message`` (the same call repeated changes nothing)."""
    return state if state and state[-1] == message else (*state, message)


def _meta_field(result_cls: Any) -> str | None:
    for fid, spec in sorted(result_cls.thrift_spec.items()):
        if fid != 0 and spec[2] is hms.MetaException:
            return str(spec[1])
    return None
