"""When the HTTP intake holds a whole request (and may hand it to a handler thread)."""

from __future__ import annotations

import pytest

from hms_cache_proxy.observability.http_intake import MAX_HEAD_BYTES, whole_request


@pytest.mark.parametrize(
    ("data", "whole"),
    [
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n", None),  # headers still coming
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", True),
        (b"GET /healthz HTTP/1.0\n\n", True),  # bare LF line ends, as http.server accepts
        (b'POST /admin/flush HTTP/1.1\r\nContent-Length: 8\r\n\r\n{"db":', None),
        (b'POST /admin/flush HTTP/1.1\r\ncontent-length:  8\r\n\r\n{"db":1}', True),
        # a body past the handler's limit is not waited for: the handler answers 413
        (b"POST /admin/flush HTTP/1.1\r\nContent-Length: 101\r\n\r\n", True),
        # chunked: not waited for either (the handler answers 411)
        (b"POST /admin/flush HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", True),
        (b"GET / HTTP/1.1\r\nX: " + b"a" * MAX_HEAD_BYTES, False),  # head too long: 431
        (b"GET / HTTP/1.1\r\nX: " + b"a" * MAX_HEAD_BYTES + b"\r\n\r\n", False),
    ],
)
def test_a_request_is_whole_when_its_head_and_acceptable_body_are_in(
    data: bytes, whole: bool | None
) -> None:
    assert whole_request(bytearray(data), max_body_bytes=100) is whole
