"""The Iceberg REST catalog driven by PyIceberg's own RestCatalog over HTTP, on SQLite and
PostgreSQL, local files under the warehouse: the user's path (tests/support/rest_scenario.py),
register, Idempotency-Key, fields the library would drop, and the REST errors of bad requests."""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from pyiceberg.exceptions import (
    CommitFailedException,
    NoSuchTableError,
    TableAlreadyExistsError,
)

from hms_cache_proxy import failpoints
from hms_cache_proxy.observability.metrics import REGISTRY
from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.rest_scenario import SCHEMA, catalog, rows, run_scenario
from tests.support.server import running_service


@pytest.fixture
def rest(database_url: str, tmp_path: Path) -> Iterator[Any]:
    with running_service(database_url, tmp_path / "warehouse", rest_port=0) as svc:
        yield svc


def test_the_users_path_on_local_files(rest: Any, tmp_path: Path) -> None:
    def exists(location: str) -> bool:
        assert location.startswith("file:") and str(tmp_path / "warehouse") in location
        return Path(location.removeprefix("file:")).is_file()

    run_scenario(catalog(rest.rest.port), {}, exists)


def test_create_transaction_register_and_errors(rest: Any) -> None:
    cat = catalog(rest.rest.port)
    cat.create_namespace("ops")
    # stage-create, then the commit carrying assert-create (Trino's and Spark's CTAS path)
    with cat.create_table_transaction("ops.staged", SCHEMA) as tx:
        tx.append(rows(7, 8))
    staged = cat.load_table("ops.staged")
    assert sorted(staged.scan().to_arrow()["id"].to_pylist()) == [7, 8]
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table_transaction("ops.staged", SCHEMA)

    cat.register_table("ops.again", staged.metadata_location)
    assert cat.load_table("ops.again").scan().to_arrow().num_rows == 2
    # A Hive (non-Iceberg) table in the namespace is neither listed nor loaded.
    T = load_apache_modules().ttypes
    client, transport = apache_client("127.0.0.1", rest.port)
    try:
        sd = T.StorageDescriptor(
            cols=[T.FieldSchema(name="c", type="int")],
            serdeInfo=T.SerDeInfo(serializationLib="x", parameters={}),
            parameters={},
        )
        client.create_table(T.Table(tableName="plain", dbName="ops", sd=sd, parameters={}))
    finally:
        transport.close()
    with pytest.raises(NoSuchTableError):
        cat.load_table("ops.plain")
    assert sorted(cat.list_tables("ops")) == [("ops", "again"), ("ops", "staged")]

    base = f"http://127.0.0.1:{rest.rest.port}/v1"
    config = requests.get(f"{base}/config", timeout=10).json()
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}" in config["endpoints"]
    bad = requests.post(f"{base}/namespaces/ops/tables", data=b"{not json", timeout=10)
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "BadRequestException"
    missing = requests.get(f"{base}/namespaces/ops/tables/nope", timeout=10)
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "NoSuchTableException"
    nested = requests.get(f"{base}/namespaces/a%1Fb", timeout=10)
    assert nested.status_code == 400
    outside = requests.post(
        f"{base}/namespaces/ops/tables",
        json={
            "name": "t",
            "location": "file:/etc/t",
            "schema": json.loads(SCHEMA.model_dump_json()),
        },
        timeout=10,
    )
    assert outside.status_code == 400 and "outside" in outside.json()["error"]["message"]
    schema = json.loads(SCHEMA.model_dump_json())
    for name in ("..", "a/b", ""):  # a new table's name becomes part of its location
        up = requests.post(
            f"{base}/namespaces/ops/tables", json={"name": name, "schema": schema}, timeout=10
        )
        assert up.status_code == 400, name
    escape = requests.post(
        f"{base}/namespaces",
        json={"namespace": ["esc"], "properties": {"location": "/etc/esc"}},
        timeout=10,
    )
    assert escape.status_code == 400 and "outside" in escape.json()["error"]["message"]
    assert (
        requests.post(
            f"{base}/namespaces/ops/tables/staged/metrics", json={}, timeout=10
        ).status_code
        == 204
    )
    huge = requests.post(f"{base}/namespaces", data=b"x" * (5 * 1024 * 1024), timeout=30)
    assert huge.status_code == 413
    moved_out = requests.post(
        f"{base}/namespaces/ops/tables/staged",
        json={"updates": [{"action": "set-location", "location": "file:/etc/staged"}]},
        timeout=10,
    )
    assert moved_out.status_code == 400 and "outside" in moved_out.json()["error"]["message"]
    metrics = {
        (sample.labels["operation"], sample.labels["status"]): sample.value
        for family in REGISTRY.collect()
        if family.name == "hms_rest_requests"
        for sample in family.samples
        if sample.name == "hms_rest_requests_total"
    }
    assert metrics[("load_table", "404")] >= 1 and metrics[("create_table", "400")] >= 1


def test_idempotency_key_applies_a_retried_commit_once(rest: Any) -> None:
    cat = catalog(rest.rest.port)
    cat.create_namespace("idem")
    table = cat.create_table("idem.t", SCHEMA)
    url = f"http://127.0.0.1:{rest.rest.port}/v1/namespaces/idem/tables/t"
    body = {
        "requirements": [{"type": "assert-table-uuid", "uuid": str(table.metadata.table_uuid)}],
        "updates": [{"action": "set-properties", "updates": {"n": "1"}}],
    }
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = requests.post(url, json=body, headers=key, timeout=10)
    again = requests.post(url, json=body, headers=key, timeout=10)
    assert first.status_code == again.status_code == 200
    assert first.json()["metadata-location"] == again.json()["metadata-location"]
    fresh = requests.post(url, json=body, timeout=10)  # without the key: a new commit
    assert fresh.json()["metadata-location"] != first.json()["metadata-location"]

    # Each commit went through the normal alter: one ALTER_TABLE event each, in the log.
    T = load_apache_modules().ttypes
    client, transport = apache_client("127.0.0.1", rest.port)
    try:
        request = T.NotificationEventRequest(lastEvent=0, maxEvents=1000)
        events = client.get_next_notification(request).events
    finally:
        transport.close()
    alters = [e for e in events if e.eventType == "ALTER_TABLE" and e.tableName == "t"]
    assert len(alters) == 2


def test_fields_the_library_would_drop_refuse_the_commit(rest: Any, tmp_path: Path) -> None:
    cat = catalog(rest.rest.port)
    cat.create_namespace("keep")
    table = cat.create_table("keep.t", SCHEMA)
    raw = json.loads(Path(table.metadata_location.removeprefix("file:")).read_text())
    raw["x-written-by-a-newer-client"] = {"k": "v"}
    path = Path(table.location().removeprefix("file:")) / "metadata" / "00009-extra.metadata.json"
    path.write_text(json.dumps(raw))
    cat.register_table("keep.newer", f"file:{path}")
    url = f"http://127.0.0.1:{rest.rest.port}/v1/namespaces/keep/tables/newer"
    loaded = requests.get(url, timeout=10).json()  # a load answers the file as it is
    assert loaded["metadata"]["x-written-by-a-newer-client"] == {"k": "v"}
    commit = {"updates": [{"action": "set-properties", "updates": {"n": "1"}}]}
    refused = requests.post(url, json=commit, timeout=10)
    assert refused.status_code == 400
    assert "x-written-by-a-newer-client" in refused.json()["error"]["message"]


def test_a_commit_whose_alter_fails_is_409_when_nothing_changed(rest: Any) -> None:
    """The alter's transaction fails (an injected database error just before COMMIT): the
    commit checks the table under its lock, finds the base unchanged and answers 409 (retry),
    not 500 (outcome unknown); the retry succeeds."""
    cat = catalog(rest.rest.port)
    cat.create_namespace("fail")
    table = cat.create_table("fail.t", SCHEMA, properties={"commit.retry.num-retries": "0"})
    base = table.metadata_location
    armed = [True]

    def fail_the_alter(_name: str, _detail: str) -> None:
        altering = any(f.function == "_alter_table" for f in inspect.stack())
        if armed[0] and altering:
            armed[0] = False
            raise failpoints.FailpointError("injected: connection lost")

    failpoints.set("write.before_commit", fail_the_alter)
    try:
        with pytest.raises(CommitFailedException):
            table.append(rows(1))
    finally:
        failpoints.clear("write.before_commit")
    assert not armed[0]
    assert cat.load_table("fail.t").metadata_location == base
    cat.load_table("fail.t").append(rows(1))
    assert cat.load_table("fail.t").scan().to_arrow().num_rows == 1
