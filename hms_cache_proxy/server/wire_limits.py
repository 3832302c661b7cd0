"""The limits a request is read under, and the errors of a message that breaks them.

Shared by the request reader (``wire.py``), the decoder (``wire_decode.py``) and the pure-Python
engine (``wire_python.py``); ``translate`` turns either decoder's own errors into these, in
words that name the setting or the fault.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thrift.protocol.TProtocol import TProtocolException
from thrift.transport.TTransport import TTransportException as _ApacheError

WINDOW = 64 * 1024
"""Most bytes the decoder is handed at once, unless one read asks for more."""

MAX_DEPTH = 64
"""Nesting depth of structs and containers refused past this (fixed by the C decoder)."""


@dataclass(frozen=True)
class Limits:
    max_message_bytes: int = 100 * 1024 * 1024
    max_string_bytes: int = 16 * 1024 * 1024
    max_container_elements: int = 1_000_000
    max_decoded_structures: int = 2_000_000
    client_timeout_seconds: float = 600.0
    message_timeout_seconds: float = 60.0

    @property
    def window(self) -> int:
        return max(16, min(WINDOW, self.max_string_bytes))

    @classmethod
    def of(cls, settings: Any) -> Limits:
        """The limits among ``settings`` (any object with the same attribute names)."""
        names = [f for f in cls.__dataclass_fields__ if hasattr(settings, f)]
        return cls(**{f: getattr(settings, f) for f in names})


class WireError(Exception):
    """A message that cannot be read. ``name``/``seqid`` are set once its header was read."""

    name: str | None = None
    seqid: int = 0


class LimitExceeded(WireError):
    """A declared or actual size past a configured limit; ``limit`` names the setting."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


class Malformed(WireError):
    """Bytes that are not a Thrift message of the configured protocol."""


class ClientGone(Exception):
    """The client closed the connection (``mid_message`` says whether it left one unfinished)."""

    def __init__(self, mid_message: bool) -> None:
        super().__init__("client closed the connection" + (" mid-message" if mid_message else ""))
        self.mid_message = mid_message


class ClientTimeout(Exception):
    """Nothing arrived for a configured time: between calls (idle) or mid-message (stalled)."""

    def __init__(self, idle: bool, seconds: float) -> None:
        what = "idle" if idle else "stalled mid-message"
        super().__init__(f"{what} for {seconds:.0f} s")
        self.idle = idle


def translate(exc: BaseException, limits: Limits) -> WireError:
    """The decoders' errors, in words that name the setting or the fault."""
    text = str(exc)
    if isinstance(exc, TProtocolException) and exc.type == TProtocolException.DEPTH_LIMIT:
        return Malformed(f"structs and containers nested deeper than {MAX_DEPTH}")
    negative = "negative length" in text.lower() or (
        isinstance(exc, _ApacheError) and exc.type == _ApacheError.NEGATIVE_SIZE
    )
    if negative:
        return Malformed("negative size for a string or container")
    if isinstance(exc, OverflowError) or (
        isinstance(exc, _ApacheError) and exc.type == _ApacheError.SIZE_LIMIT
    ):
        # fastbinary checks container sizes; pure-Python also strings (its message says which)
        if isinstance(exc, _ApacheError) and "string" in text:
            return LimitExceeded(
                "max_string_bytes",
                f"string longer than max_string_bytes = {limits.max_string_bytes}",
            )
        return LimitExceeded(
            "max_container_elements",
            f"container of more than max_container_elements = {limits.max_container_elements} "
            "elements",
        )
    if isinstance(exc, TypeError) and "TType" in text:
        return Malformed(f"unknown Thrift type code ({text})")
    return Malformed(text)
