"""The raw-bytes client's reply walker: skipper.c, built once with the machine's C compiler and
loaded with ctypes. ``load()`` returns None when there is no compiler (or the build fails); the
client then uses thriftpy2's cython skip, which is about ten times slower on large replies
(it makes a bytes object of every string it passes)."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

_SOURCE = Path(__file__).with_name("skipper.c")


class Walker:
    """Feeds bytes to one reply's walk; ``feed`` says how many it consumed and if it ended."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib = lib
        self._state = ctypes.create_string_buffer(lib.hms_walker_size())
        self._done = ctypes.c_int32()

    def reset(self) -> None:
        self._lib.hms_walker_reset(self._state)

    def feed(self, address: int, length: int) -> tuple[int, bool]:
        used = self._lib.hms_walk(self._state, address, length, ctypes.byref(self._done))
        if used < 0:
            raise ValueError("malformed Thrift binary-protocol message")
        return used, bool(self._done.value)


@functools.cache
def load() -> ctypes.CDLL | None:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler or not _SOURCE.is_file():
        return None
    source = _SOURCE.read_bytes()
    key = hashlib.sha256(source).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"hms-cache-proxy-skipper-{os.getuid()}-{key}.so"
    if not target.is_file():
        build = Path(tempfile.mkdtemp(prefix="hms-skipper-"))
        try:
            out = build / "skipper.so"
            proc = subprocess.run(
                [compiler, "-O2", "-shared", "-fPIC", "-o", str(out), str(_SOURCE)],
                capture_output=True,
                check=False,
            )
            if proc.returncode != 0:
                return None
            os.replace(out, target)
        except OSError:
            return None
        finally:
            shutil.rmtree(build, ignore_errors=True)
    try:
        lib = ctypes.CDLL(str(target))
    except OSError:
        return None
    lib.hms_walker_size.restype = ctypes.c_size_t
    lib.hms_walker_reset.argtypes = [ctypes.c_void_p]
    lib.hms_walk.restype = ctypes.c_int64
    lib.hms_walk.argtypes = [
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.POINTER(ctypes.c_int32),
    ]
    return lib
