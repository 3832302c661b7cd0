"""The poller's wait for its wake-up pipe and LISTEN socket works with any descriptor number
(a busy server's pass 1023, where select(2) refuses them)."""

from __future__ import annotations

import os
import resource

import pytest

from hms_cache_proxy.store.events.poller import _readable


def test_a_descriptor_above_1023_is_waited_for() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        pytest.skip(f"this host allows only {hard} descriptors")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100), hard))
    read_end, write_end = os.pipe()
    high = os.dup2(read_end, 1050)
    try:
        assert _readable([high], 0.01) == []
        os.write(write_end, b"x")
        assert _readable([high], 1.0) == [high]
    finally:
        for fd in (high, read_end, write_end):
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_objects_with_fileno_come_back_as_themselves() -> None:
    read_end, write_end = os.pipe()

    class Source:
        def fileno(self) -> int:
            return read_end

    source = Source()
    try:
        os.write(write_end, b"x")
        assert _readable([source], 1.0) == [source]
    finally:
        os.close(read_end)
        os.close(write_end)
