"""log_format json on a real `serve` process: every line of its output is one JSON object, and
the records emitted during one Thrift call carry that call's request id, method and client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.apache_thrift import apache_client
from tests.support.server import ServerProcess

FIELDS = {"time", "level", "logger", "message", "request_id", "client", "method"}


def test_json_log_lines_carry_the_request_id_of_their_call(
    sqlite_url: str, tmp_path: Path, T: object
) -> None:
    log_path = tmp_path / "server.log"
    server = ServerProcess(
        sqlite_url, tmp_path / "wh", log_path, "--log-format", "json", "--log-level", "DEBUG"
    )
    not_a_dir = tmp_path / "wh" / "a-file"  # inside the warehouse, where directories are made
    not_a_dir.parent.mkdir(exist_ok=True)
    not_a_dir.write_text("")
    try:
        client, trans = apache_client("127.0.0.1", server.port)
        try:
            with pytest.raises(T.NoSuchObjectException):  # type: ignore[attr-defined]
                client.get_table("default", "absent")
            # A location that cannot be made: a warning from the handler, then the failure.
            location = f"file:{not_a_dir}/sub"
            db = T.Database(name="unmakeable", locationUri=location)  # type: ignore[attr-defined]
            with pytest.raises(T.MetaException):  # type: ignore[attr-defined]
                client.create_database(db)
        finally:
            trans.close()
    finally:
        server.stop()

    lines = [line for line in log_path.read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line, or this raises
    assert all(FIELDS <= set(r) for r in records)
    assert any("serving thrift://" in r["message"] and r["request_id"] is None for r in records)

    get_table = [r for r in records if r["method"] == "get_table"]
    create = [r for r in records if r["method"] == "create_database"]
    assert len(get_table) == 1 and "NoSuchObjectException" in get_table[0]["message"]
    assert get_table[0]["level"] == "DEBUG"
    assert len(create) >= 2
    assert {r["level"] for r in create} >= {"WARNING", "DEBUG"}
    assert len({r["request_id"] for r in create}) == 1
    assert create[0]["request_id"] not in (None, get_table[0]["request_id"])
    assert all(r["client"].startswith("127.0.0.1:") for r in get_table + create)
    # The same connection served both calls: same client, different ids.
    assert get_table[0]["client"] == create[0]["client"]
