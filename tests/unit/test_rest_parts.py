"""The REST catalog's small parts: its settings, its routes, idempotency keys."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from pydantic import ValidationError
from pyiceberg.types import (
    DecimalType,
    ListType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)

from hms_cache_proxy.config import Settings
from hms_cache_proxy.rest.errors import RestError
from hms_cache_proxy.rest.hive_types import hive_type
from hms_cache_proxy.rest.idempotency import IdempotencyKeys
from hms_cache_proxy.rest.routes import ENDPOINTS, match

ROOT = Path(__file__).resolve().parents[2]


def test_rest_is_off_by_default_and_needs_tokens_off_loopback() -> None:
    assert not Settings(database_url="sqlite://").rest_enabled
    assert Settings(database_url="sqlite://", rest_port=0).rest_enabled
    with pytest.raises(ValidationError, match="rest_tokens"):
        Settings(database_url="sqlite://", rest_port=0, rest_host="0.0.0.0")
    on_all = Settings(
        database_url="sqlite://", rest_port=0, rest_host="0.0.0.0", rest_tokens={"u": "t"}
    )
    assert "t" in on_all.secrets() and on_all.redacted()["rest_tokens"] == {"u": "********"}
    with pytest.raises(ValidationError, match="upstream_uri"):
        Settings(upstream_uri="thrift://127.0.0.1:9083", rest_port=0)


def test_routes_decode_namespaces_and_tell_404_from_405() -> None:
    assert match("GET", "/v1/namespaces/a%1Fb/tables/t%20x") == ("load_table", ["a", "b"], "t x")
    assert match("GET", "/v1/config")[0] == "config"
    with pytest.raises(RestError) as wrong_method:
        match("PUT", "/v1/namespaces/a")
    assert wrong_method.value.status == 405
    with pytest.raises(RestError) as unknown:
        match("GET", "/v1/namespaces/a/views")
    assert unknown.value.status == 404
    assert "POST /v1/{prefix}/tables/rename" in ENDPOINTS


def test_an_idempotency_key_answers_a_retry_with_the_first_answer_once() -> None:
    keys = IdempotencyKeys(60)
    calls: list[int] = []
    release = threading.Event()

    def work() -> tuple[int, bytes]:
        calls.append(1)
        release.wait(5)
        return 200, b"first"

    answers: list[tuple[int, bytes]] = []
    threads = [
        threading.Thread(target=lambda: answers.append(keys.run(("u", "k"), work)))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    release.set()
    for t in threads:
        t.join(5)
    assert answers == [(200, b"first")] * 3 and len(calls) == 1
    assert keys.run(("u", "other"), lambda: (500, b"x")) == (500, b"x")
    assert keys.run(("u", "other"), lambda: (200, b"y")) == (200, b"y")  # a 5xx is not kept


def test_the_service_loads_pyiceberg_only_when_the_rest_port_is_on() -> None:
    """PyIceberg brings pyarrow, whose import starts threads (before serve blocks SIGTERM
    they would let SIGTERM kill it), and a ``hive_metastore`` package of its own (it would
    shadow the suite's generated one of the same name): importing the service loads neither."""
    code = (
        "import os, sys, hms_cache_proxy.app, hms_cache_proxy.cli; "
        "print(sorted(m for m in ('pyiceberg', 'pyarrow', 'hive_metastore') if m in sys.modules),"
        " len(os.listdir('/proc/self/task')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[] 1"


def test_hive_column_types_of_nested_iceberg_types() -> None:
    struct = StructType(
        NestedField(1, "a", ListType(2, DecimalType(10, 2))),
        NestedField(3, "m", MapType(4, StringType(), 5, TimestamptzType())),
    )
    expected = "struct<a:array<decimal(10,2)>,m:map<string,timestamp with local time zone>>"
    assert hive_type(struct) == expected
