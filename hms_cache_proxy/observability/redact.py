"""Secrets never reach the log: every record is scrubbed when it is made.

The service registers its secrets (the database password, the admin token, the TLS key
password, SASL passwords) with ``install``; from then on each log record created in the process
has its message, and the text of its traceback, rid of them, and of any ``user:password@`` in a
URL. Scrubbing happens in the record factory, so it covers every logger and every handler,
also ones added later; records below the log level are never made, so they cost nothing.
Secrets shorter than MIN_SECRET_CHARS are not searched for (they would mask ordinary words).
"""

from __future__ import annotations

import logging
import re
import threading
import traceback
from collections.abc import Iterable
from typing import Any

MASK = "********"
MIN_SECRET_CHARS = 4
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]*:)[^@/\s]+@")

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None
_installed = False


def redact(text: str) -> str:
    """``text`` with every registered secret and URL password masked."""
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK + "@", text)
    return text


def install(secrets: Iterable[str | None]) -> None:
    """Add secrets to mask, and scrub every log record from now on (idempotent)."""
    global _pattern, _installed
    with _lock:
        _secrets.update(s for s in secrets if s and len(s) >= MIN_SECRET_CHARS)
        if _secrets:
            longest_first = sorted(_secrets, key=len, reverse=True)
            _pattern = re.compile("|".join(re.escape(s) for s in longest_first))
        if not _installed:
            previous = logging.getLogRecordFactory()

            def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
                return _scrub(previous(*args, **kwargs))

            logging.setLogRecordFactory(factory)
            _installed = True


def _scrub(record: logging.LogRecord) -> logging.LogRecord:
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad format string is logging's to report
        return record
    clean = redact(message)
    if clean != message or record.args:
        record.msg, record.args = clean, ()
    if record.exc_info and record.exc_info[0] is not None:
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        # Formatters print exc_text when there is no exc_info to format afresh.
        record.exc_text, record.exc_info = redact(text), None
    return record
