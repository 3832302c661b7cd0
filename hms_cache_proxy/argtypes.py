"""argparse ``type=`` checks shared by the subcommands, so a bad value stops a command before
it starts servers or jobs (not after minutes of work, when it first uses the value)."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

_THRIFT_URI = re.compile(r"^thrift://([^:/\s]+|\[[0-9a-fA-F:.]+\]):(\d{1,5})$")


def _number(value: str, kind: type[float] | type[int]) -> float:
    try:
        return kind(value)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {what}, got {value!r}") from None


def positive_float(value: str) -> float:
    """A number of seconds (or similar) above zero."""
    n = _number(value, float)
    if not n > 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {value!r}")
    return float(n)


def non_negative_float(value: str) -> float:
    n = _number(value, float)
    if not n >= 0:
        raise argparse.ArgumentTypeError(f"expected a number of at least 0, got {value!r}")
    return float(n)


def positive_int(value: str) -> int:
    n = int(_number(value, int))
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return n


def readable_file(value: str) -> str:
    """An existing file this process may read (a CA certificate, a saved report)."""
    path = Path(value)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {value!r}")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"cannot read {value!r} (permissions)")
    return value


def output_file(value: str) -> str:
    """A file the command writes at the end: its directory must exist and be writable now."""
    path = Path(value)
    if not value.strip() or path.is_dir():
        raise argparse.ArgumentTypeError(f"expected a file name, got {value!r}")
    parent = path.parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"the directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write in {str(parent)!r} (permissions)")
    return value


def output_directory(value: str) -> str:
    """A directory the command writes into (made if missing): the nearest part of the path that
    exists must be a directory this process may write in, checked before the run starts."""
    if not value.strip():
        raise argparse.ArgumentTypeError(f"expected a directory, got {value!r}")
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value!r} exists and is not a directory")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(
            f"cannot make {value!r}: {str(existing)!r} is not a directory"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write in {str(existing)!r} (permissions)")
    return value


def key_value(value: str) -> str:
    """A ``KEY=VALUE`` pair (kept as given; the command splits it)."""
    key, sep, _ = value.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {value!r}")
    return value


def thrift_uri(value: str) -> str:
    """``thrift://HOST:PORT`` with a port from 1 to 65535."""
    m = _THRIFT_URI.match(value.strip())
    if not m or not 0 < int(m.group(2)) < 65536:
        raise argparse.ArgumentTypeError(f"expected thrift://HOST:PORT, got {value!r}")
    return value.strip()
