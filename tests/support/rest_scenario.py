"""The user's path through the Iceberg REST catalog with PyIceberg's RestCatalog, the same on
every database and storage: namespaces, create / append / read back, schema evolution, a 409
when another writer committed first and the retry, a create transaction, rename, purge."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
)
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
)


def rows(*ids: int) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "name": pa.array([f"n{i}" for i in ids], pa.string())}
    )


def catalog(port: int, **props: str) -> RestCatalog:
    return RestCatalog("rest", uri=f"http://127.0.0.1:{port}", **props)


def run_scenario(
    cat: RestCatalog, namespace_props: dict[str, str], exists: Callable[[str], bool]
) -> Any:
    """Runs the path; ``exists`` tells whether a file (a location URI) is in storage."""
    cat.create_namespace("sales", {"owner_team": "a", **namespace_props})
    assert ("sales",) in cat.list_namespaces()
    assert cat.load_namespace_properties("sales")["owner_team"] == "a"
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace("sales")

    table = cat.create_table("sales.orders", SCHEMA)
    assert exists(table.metadata_location)
    table.append(rows(1, 2))
    table.append(rows(3))
    again = cat.load_table("sales.orders")
    assert sorted(again.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    assert cat.list_tables("sales") == [("sales", "orders")]

    with again.update_schema() as update:
        update.add_column("qty", LongType())
    assert cat.load_table("sales.orders").schema().find_field("qty").field_id == 3

    # Two clients on the same base: the second commit is refused (409), a refresh and retry wins
    # (PyIceberg's own retry off, so the 409 reaches the test).
    with again.transaction() as tx:
        tx.set_properties({"commit.retry.num-retries": "0"})
    first, second = cat.load_table("sales.orders"), cat.load_table("sales.orders")
    first.append(pa.table({"id": [4], "name": ["n4"], "qty": [1]}))
    with pytest.raises(CommitFailedException):
        second.append(pa.table({"id": [5], "name": ["n5"], "qty": [2]}))
    second = cat.load_table("sales.orders")
    second.append(pa.table({"id": [5], "name": ["n5"], "qty": [2]}))
    ids = cat.load_table("sales.orders").scan().to_arrow()["id"].to_pylist()
    assert sorted(ids) == [1, 2, 3, 4, 5]

    # stage-create, then the commit carrying assert-create (Trino's and Spark's CTAS path)
    with cat.create_table_transaction("sales.staged", SCHEMA) as tx:
        tx.append(rows(7, 8))
    assert sorted(cat.load_table("sales.staged").scan().to_arrow()["id"].to_pylist()) == [7, 8]
    cat.purge_table("sales.staged")

    cat.rename_table("sales.orders", "sales.orders2")
    assert not cat.table_exists("sales.orders")
    moved = cat.load_table("sales.orders2")
    assert moved.scan().to_arrow().num_rows == 5
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("sales")
    referenced = [t.file.file_path for t in moved.scan().plan_files()] + [moved.metadata_location]
    assert all(exists(f) for f in referenced)
    cat.purge_table("sales.orders2")
    with pytest.raises(NoSuchTableError):
        cat.load_table("sales.orders2")
    assert not [f for f in referenced if exists(f)]
    cat.drop_namespace("sales")
    with pytest.raises(NoSuchNamespaceError):
        cat.load_namespace_properties("sales")
    return moved
