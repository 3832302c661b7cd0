"""Logging set-up: text or JSON lines, and a request id on every record emitted inside a call.

The Thrift server gives each connection thread one ``CallContext`` (``bind_connection``) and
marks each call on it (``begin``/``end``): two attribute writes per call and a counter, no
uuid4 and no contextvar churn on the hot path. Records emitted while a call runs carry its
request id, the client's address and the method; a log collector can then group every line of
one call. Ids are ``<process prefix>-<counter in hex>``, so ids of different instances differ.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import sys
import time
from contextvars import ContextVar
from typing import Any

_PREFIX = os.urandom(3).hex()
_counter = itertools.count(1)  # next() is atomic under the GIL
_worker: int | None = None  # this process's index under `serve --workers N`


def _new_prefix() -> None:
    global _PREFIX
    _PREFIX = os.urandom(3).hex()


# A forked worker gets its own prefix, so request ids of workers differ as those of instances.
os.register_at_fork(after_in_child=_new_prefix)


def set_worker(index: int) -> None:
    """Mark every record of this process as worker ``index``'s (`serve --workers N`)."""
    global _worker
    _worker = index


_current: ContextVar[CallContext | None] = ContextVar("hms_call", default=None)

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s%(call_suffix)s"


class CallContext:
    """The call a connection thread is serving now (``request_id`` None between calls)."""

    __slots__ = ("client", "seq", "method")

    def __init__(self, client: str) -> None:
        self.client = client
        self.seq = 0  # 0 between calls; the id is formatted only when a record needs it
        self.method: str | None = None

    def begin(self, method: str) -> None:
        """A call of ``method`` starts: give it a fresh request id."""
        self.seq = next(_counter)
        self.method = method

    def end(self) -> None:
        self.seq = 0
        self.method = None

    @property
    def request_id(self) -> str | None:
        return f"{_PREFIX}-{self.seq:x}" if self.seq else None


def bind_connection(client: str) -> CallContext:
    """The context of the calling thread's connection (one per connection thread)."""
    ctx = CallContext(client)
    _current.set(ctx)
    return ctx


def current() -> CallContext | None:
    """The calling thread's connection context, if it serves a connection."""
    return _current.get()


class CallFilter(logging.Filter):
    """Stamps request_id, client and method on each record (None outside a call)."""

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = _current.get()
        record.worker = _worker
        worker = "" if _worker is None else f" [worker={_worker}]"
        if ctx is None:
            record.request_id = record.client = record.method = None
            record.call_suffix = worker
        else:
            request_id = ctx.request_id
            record.request_id, record.client, record.method = request_id, ctx.client, ctx.method
            suffix = (
                f" [request_id={request_id} client={ctx.client} method={ctx.method}]"
                if request_id is not None
                else f" [client={ctx.client}]"
            )
            record.call_suffix = suffix + worker
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id, client, method,
    worker (under `serve --workers`), exception (the traceback text, when the record has one)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": _iso_time(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
            "client": getattr(record, "client", None),
            "method": getattr(record, "method", None),
        }
        worker = getattr(record, "worker", None)
        if worker is not None:
            out["worker"] = worker
        # exc_text first: the log scrubber (observability/redact.py) leaves its clean text there.
        if record.exc_text:
            out["exception"] = record.exc_text
        elif record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def _iso_time(created: float) -> str:
    millis = int((created - int(created)) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{millis:03d}Z"


def configure(level: str, log_format: str = "text") -> None:
    """Route every record to stderr in the chosen format.

    Like ``logging.basicConfig``, does nothing when the root logger already has handlers (the
    command run inside a test process, or an embedding application, keeps its own set-up).
    """
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(CallFilter())
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
        logging.captureWarnings(True)  # warnings become JSON lines too, not raw stderr text
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root.addHandler(handler)
    root.setLevel(getattr(logging, level))
