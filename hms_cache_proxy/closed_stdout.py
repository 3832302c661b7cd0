"""Commands stop quietly when the reader of their output goes away (``status | head -5``).

Python ignores SIGPIPE, so a write to a closed pipe raises ``BrokenPipeError``: a traceback, and
one more message when the interpreter flushes stdout on exit. Here the first failed write points
file descriptor 1 at /dev/null (so no later write or the final flush can fail the same way) and
raises ``StdoutClosed``. That is a ``BaseException``, like ``KeyboardInterrupt``: the long runs'
``except Exception`` handlers (soak, bench, check) do not report it as the run's failure, while
their ``finally`` blocks still stop the servers and client processes they started. The command
then exits with status 141, what a shell reports for a process that SIGPIPE ended (``yes | head``).
"""

from __future__ import annotations

import functools
import io
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO, TypeVar

EXIT_STDOUT_CLOSED = 141  # 128 + SIGPIPE

F = TypeVar("F", bound=Callable[..., int])


class StdoutClosed(BaseException):
    """The command's standard output was closed by its reader: stop, cleaning up on the way."""


class _Guarded:
    """A stand-in for ``sys.stdout`` that turns a broken pipe into ``StdoutClosed`` once."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if self._gone:
            return len(text)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._reader_gone()
            raise StdoutClosed from None

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._gone:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_gone()
            raise StdoutClosed from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def _reader_gone(self) -> None:
        """Writes from now on go nowhere (also the interpreter's own flush at exit)."""
        self._gone = True
        try:
            fd = self._stream.fileno()
        except (OSError, ValueError, io.UnsupportedOperation):
            fd = None  # not a file (a test's StringIO): swallowing writes is enough
        if fd is not None:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, fd)
            finally:
                os.close(devnull)


def quiet_on_closed_stdout(command: F) -> F:
    """Run ``command`` with a guarded stdout; a closed one ends it with exit status 141."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> int:
        original = sys.stdout
        guarded = _Guarded(original)
        sys.stdout = guarded  # type: ignore[assignment]
        try:
            try:
                return command(*args, **kwargs)
            finally:
                guarded.flush()  # a pipe is block-buffered: most output leaves here (or --help's)
        except StdoutClosed:
            return EXIT_STDOUT_CLOSED
        finally:
            sys.stdout = original

    return run  # type: ignore[return-value]
