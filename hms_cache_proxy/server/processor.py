"""Reads one Thrift call, runs the handler method, writes the reply.

Differs from thriftpy2's TProcessor where an HMS client would notice:
- an unknown method gets ``TApplicationException(UNKNOWN_METHOD, "Invalid method name: 'x'")``
  (the Java server's words) and the connection stays usable;
- an exception the method does not declare never kills the connection: it becomes the method's
  MetaException when it declares one (as HMSHandler does), else an INTERNAL_ERROR
  TApplicationException carrying the message;
- arguments that cannot be decoded get a PROTOCOL_ERROR TApplicationException;
- every call is timed and counted through an observer (metrics live above this layer).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from thriftpy2.thrift import TApplicationException, TMessageType, TType

from hms_cache_proxy.handler.access import READ_CALLS
from hms_cache_proxy.idl import hms
from hms_cache_proxy.server.encoded_reply import decoded_result, write_encoded
from hms_cache_proxy.server.wire import Message
from hms_cache_proxy.store.db.engine import client_message
from hms_cache_proxy.thrift_bytes import Encoded

log = logging.getLogger(__name__)

CallObserver = Callable[[str, float, str], None]
"""Called after every call with (method, seconds, outcome); outcome is "ok" or an error name."""

Decoder = Callable[[bytes, Any], Any]
"""Fills an arguments struct from its bytes (``wire_decode.decode`` with the server's limits)."""


class _MethodInfo:
    __slots__ = ("args_cls", "result_cls", "arg_names", "oneway", "meta_field", "declared")

    def __init__(self, service: Any, name: str) -> None:
        self.args_cls = getattr(service, name + "_args")
        self.result_cls = getattr(service, name + "_result")
        self.arg_names = [spec[1] for _, spec in sorted(self.args_cls.thrift_spec.items())]
        self.oneway = bool(getattr(self.result_cls, "oneway", False))
        self.meta_field: str | None = None
        self.declared: list[tuple[str, type]] = []
        for fid, spec in sorted(self.result_cls.thrift_spec.items()):
            if fid == 0:
                continue
            exc_name, exc_cls = spec[1], spec[2]
            self.declared.append((exc_name, exc_cls))
            if exc_cls is hms.MetaException and self.meta_field is None:
                self.meta_field = exc_name


class Processor:
    """Dispatches calls of ``service`` to ``handler`` methods of the same name."""

    def __init__(self, service: Any, handler: Any, observer: CallObserver | None = None) -> None:
        self._service = service
        self._handler = handler
        self._observer = observer
        self._methods = {name: _MethodInfo(service, name) for name in service.thrift_services}
        self._bound: dict[str, Callable[..., Any] | None] = {
            name: getattr(handler, name, None) for name in service.thrift_services
        }

    @property
    def args_classes(self) -> list[type]:
        return [info.args_cls for info in self._methods.values()]

    def process(self, iprot: Any, oprot: Any, on_start: Callable[[], None] | None = None) -> None:
        """Serve one call read from a stream protocol. Transport errors propagate.

        ``on_start`` runs once a message has begun to arrive (the connection is then busy).
        The server reads through ``process_message`` instead, which checks sizes first.
        """
        api, mtype, seqid = iprot.read_message_begin()
        if on_start is not None:
            on_start()
        started = time.perf_counter()
        info = self._methods.get(api)
        if info is None or mtype not in (TMessageType.CALL, TMessageType.ONEWAY):
            iprot.skip(TType.STRUCT)
            iprot.read_message_end()
            self._refuse_method(oprot, api, mtype, seqid, info, started)
            return
        args = info.args_cls()
        iprot.read_struct(args)
        iprot.read_message_end()
        self._dispatch(info, api, seqid, args, oprot, started)

    def process_message(self, msg: Message, oprot: Any, decode: Decoder) -> None:
        """Serve one call whose bytes were read and size-checked (``wire.MessageReader``).

        Arguments that cannot be decoded (invalid UTF-8, element types contradicting the IDL)
        get a PROTOCOL_ERROR TApplicationException; the connection stays usable.
        """
        started = time.perf_counter()
        api, seqid = msg.name, msg.seqid
        info = self._methods.get(api)
        if info is None or msg.mtype not in (TMessageType.CALL, TMessageType.ONEWAY):
            self._refuse_method(oprot, api, msg.mtype, seqid, info, started)
            return
        args = info.args_cls()
        try:
            decode(msg.body, args)
        except Exception as exc:  # noqa: BLE001 - a bad request gets an answer, not a crash
            log.warning("could not read the arguments of %s: %s", api, exc)
            self._observe(api, started, "protocol_error")
            if not info.oneway:
                self._send_exception(
                    oprot,
                    api,
                    seqid,
                    TApplicationException(
                        TApplicationException.PROTOCOL_ERROR,
                        f"Could not read the arguments of '{api}': {exc}",
                    ),
                )
            return
        self._dispatch(info, api, seqid, args, oprot, started)

    def note(self, api: str, outcome: str) -> None:
        """Count a message the server refused before decoding it (a limit, malformed bytes)."""
        self._observe(
            api if api in self._methods else "unknown_method", time.perf_counter(), outcome
        )

    def _refuse_method(
        self, oprot: Any, api: str, mtype: int, seqid: int, info: Any, started: float
    ) -> None:
        reason = (
            f"Invalid method name: '{api}'"
            if info is None
            else f"Unexpected message type {mtype} for method '{api}'"
        )
        self._send_exception(
            oprot,
            api,
            seqid,
            TApplicationException(
                TApplicationException.UNKNOWN_METHOD
                if info is None
                else TApplicationException.INVALID_MESSAGE_TYPE,
                reason,
            ),
        )
        self._observe("unknown_method", started, "unknown_method")

    def _dispatch(
        self, info: _MethodInfo, api: str, seqid: int, args: Any, oprot: Any, started: float
    ) -> None:
        result = info.result_cls()
        outcome = "ok"
        fn = self._bound[api]
        try:
            if fn is None:
                raise TApplicationException(
                    TApplicationException.UNKNOWN_METHOD,
                    f"Method '{api}' is not implemented by hms-cache-proxy",
                )
            call_args = [getattr(args, n) for n in info.arg_names]
            try:
                result.success = fn(*call_args)
            except Exception as exc:
                # A database restart cut a pooled connection (the pool has now dropped every
                # connection of before the cut). A read is safe to run again, once; a write's
                # outcome is unknown (the cut may have come at its commit), so it fails.
                if not (getattr(exc, "connection_invalidated", False) and api in READ_CALLS):
                    raise
                cause = getattr(exc, "orig", exc)  # the driver's error, under SQLAlchemy's
                log.warning("%s: database connection lost (%s); reading again", api, cause)
                result.success = fn(*call_args)
        except TApplicationException as exc:
            log.debug("%s failed: TApplicationException: %s", api, exc.message)
            self._observe(api, started, "application_error")
            if not info.oneway:
                self._send_exception(oprot, api, seqid, exc)
            return
        except Exception as exc:  # noqa: BLE001 - every error becomes a Thrift answer
            outcome = type(exc).__name__
            field = _declared_field(info, exc)
            if field is None:
                log.exception("%s failed with an undeclared %s", api, type(exc).__name__)
                message = client_message(exc) or f"{type(exc).__name__}: {exc}"
                if info.meta_field is not None:
                    field, exc = info.meta_field, hms.MetaException(message=message)
                else:
                    self._observe(api, started, outcome)
                    if not info.oneway:
                        self._send_exception(
                            oprot,
                            api,
                            seqid,
                            TApplicationException(TApplicationException.INTERNAL_ERROR, message),
                        )
                    return
            else:
                # One line per failed call (its request id is on the record); DEBUG, since
                # clients ask for absent objects routinely (NoSuchObjectException).
                log.debug("%s failed: %s: %s", api, outcome, getattr(exc, "message", exc))
            setattr(result, field, exc)
        if not info.oneway:
            if isinstance(getattr(result, "success", None), Encoded):  # the cache's bytes
                if write_encoded(oprot, api, seqid, result.success):
                    self._observe(api, started, outcome)
                    return
                result = decoded_result(info.result_cls, result.success)
            oprot.write_message_begin(api, TMessageType.REPLY, seqid)
            oprot.write_struct(result)
            oprot.write_message_end()
            oprot.trans.flush()
        self._observe(api, started, outcome)

    def _send_exception(self, oprot: Any, api: str, seqid: int, exc: TApplicationException) -> None:
        oprot.write_message_begin(api, TMessageType.EXCEPTION, seqid)
        exc.write(oprot)
        oprot.write_message_end()
        oprot.trans.flush()

    def _observe(self, api: str, started: float, outcome: str) -> None:
        if self._observer is not None:
            self._observer(api, time.perf_counter() - started, outcome)


def _declared_field(info: _MethodInfo, exc: Exception) -> str | None:
    for name, cls in info.declared:
        if isinstance(exc, cls):
            return name
    return None
