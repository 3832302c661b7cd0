"""Builders and probes for endpoint tests: Thrift objects as clients send them (Apache
Thrift's generated types), the service's warehouse, and the notification log."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy.store.events import messages

LAZY_SIMPLE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"


def warehouse_dir(service: Any) -> Path:
    """The service's warehouse root as a local path."""
    return Path(service.settings.warehouse_uri().removeprefix("file:"))


def uri(path: Path | str) -> str:
    """How the server spells a local location (Hadoop's ``file:/x``)."""
    return f"file:{path}"


def cols(T: Any, *spec: str) -> list[Any]:
    """``cols(T, "a:int", "b:string")``."""
    out = []
    for item in spec:
        name, _, type_ = item.partition(":")
        out.append(T.FieldSchema(name=name, type=type_, comment=None))
    return out


def storage(T: Any, columns: list[Any], location: str | None = None, **extra: Any) -> Any:
    return T.StorageDescriptor(
        cols=columns,
        location=location,
        inputFormat=TEXT_INPUT,
        outputFormat=TEXT_OUTPUT,
        compressed=False,
        numBuckets=-1,
        serdeInfo=T.SerDeInfo(
            name=None, serializationLib=LAZY_SIMPLE, parameters={"serialization.format": "1"}
        ),
        bucketCols=[],
        sortCols=[],
        parameters={},
        **extra,
    )


def table(
    T: Any,
    db: str,
    name: str,
    columns: list[str] | tuple[str, ...] = ("a:int", "b:string"),
    keys: list[str] | tuple[str, ...] = (),
    *,
    location: str | None = None,
    params: dict[str, str] | None = None,
    table_type: str | None = "MANAGED_TABLE",
    owner: str | None = "alice",
) -> Any:
    return T.Table(
        tableName=name,
        dbName=db,
        owner=owner,
        createTime=0,
        lastAccessTime=0,
        retention=0,
        sd=storage(T, cols(T, *columns), location),
        partitionKeys=cols(T, *keys),
        parameters=dict(params or {}),
        tableType=table_type,
    )


def partition(
    T: Any,
    db: str,
    tbl: str,
    values: list[str],
    columns: list[str] | tuple[str, ...] = ("a:int", "b:string"),
    *,
    location: str | None = None,
    params: dict[str, str] | None = None,
) -> Any:
    return T.Partition(
        values=list(values),
        dbName=db,
        tableName=tbl,
        createTime=0,
        lastAccessTime=0,
        sd=storage(T, cols(T, *columns), location),
        parameters=dict(params or {}),
    )


def foreign_key(
    T: Any, parent: tuple[str, str, str], child: tuple[str, str, str], name: str | None
) -> Any:
    """A one-column SQLForeignKey from ``child`` (db, table, column) to ``parent``'s column,
    no rules, not enforced."""
    return T.SQLForeignKey(
        pktable_db=parent[0], pktable_name=parent[1], pkcolumn_name=parent[2],
        fktable_db=child[0], fktable_name=child[1], fkcolumn_name=child[2], key_seq=1,
        update_rule=0, delete_rule=0, fk_name=name,
        enable_cstr=False, validate_cstr=False, rely_cstr=False,
    )  # fmt: skip


def last_event_id(client: Any) -> int:
    return client.get_current_notificationEventId().eventId


def events_since(client: Any, T: Any, after: int) -> list[Any]:
    return client.get_next_notification(
        T.NotificationEventRequest(lastEvent=after, maxEvents=1000)
    ).events


def event_types(client: Any, T: Any, after: int) -> list[str]:
    return [e.eventType for e in events_since(client, T, after)]


def event_body(event: Any) -> dict[str, Any]:
    """The decoded message body of a notification event."""
    return messages.decode(event.message, event.messageFormat)


def write_files(directory: Path, files: dict[str, bytes]) -> None:
    """Create files (relative paths, subdirectories allowed) below ``directory``."""
    for rel, data in files.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@contextmanager
def raises(
    exc_type: Any, message: str | None = None, *, contains: str | None = None
) -> Iterator[Any]:
    """pytest.raises for Thrift exceptions, comparing their ``message`` field exactly (or by
    substring with ``contains``)."""
    with pytest.raises(exc_type) as info:
        yield info
    if message is not None:
        assert info.value.message == message
    if contains is not None:
        assert contains in (info.value.message or ""), info.value.message
