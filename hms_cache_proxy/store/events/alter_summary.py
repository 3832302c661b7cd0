"""What an ALTER_TABLE message says about the change, read without building Thrift objects.

A sidecar (upstream mode) needs only the table's name before the change (a rename) and whether
its columns or partition keys changed (constraints name columns by position). Decoding both
embedded tables into ``hms.Table`` objects (``tjson.loads``) was most of a sidecar's CPU per
event; the embedded TJSON is read here as plain JSON instead (the C parser), and the two tables'
columns are compared as that JSON. The same writer wrote both tables, so equal columns give
equal JSON; JSON that differs for equal columns only drops more than needed.

TJSON that is not strict JSON (a map with container keys, as skewed-value locations) raises
ValueError like a garbled message; the caller then decodes it the full way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import messages


def _field_id(cls: type, name: str) -> str:
    for fid, spec in cls.thrift_spec.items():  # type: ignore[attr-defined]
        if spec[1] == name:
            return str(fid)
    raise AttributeError(f"{cls.__name__} has no field {name}")


_TABLE_NAME = _field_id(hms.Table, "tableName")
_DB_NAME = _field_id(hms.Table, "dbName")
_CAT_NAME = _field_id(hms.Table, "catName")
_SD = _field_id(hms.Table, "sd")
_PARTITION_KEYS = _field_id(hms.Table, "partitionKeys")
_COLS = _field_id(hms.StorageDescriptor, "cols")


@dataclass(frozen=True)
class AlterSummary:
    """The table's names before the change (catalog None when the message leaves it out)."""

    cat_before: str | None
    db_before: str
    table_before: str
    columns_changed: bool


def summarize(message: str, fmt: str | None) -> AlterSummary:
    """ValueError (or KeyError/TypeError) when the message is not an ALTER_TABLE one read so."""
    body = messages.decode(message, fmt)
    before = _table(body, "tableObjBeforeJson")
    after = _table(body, "tableObjAfterJson")
    return AlterSummary(
        cat_before=_string(before, _CAT_NAME),
        db_before=_required(before, _DB_NAME),
        table_before=_required(before, _TABLE_NAME),
        columns_changed=_columns(before) != _columns(after),
    )


def _table(body: dict[str, Any], key: str) -> dict[str, Any]:
    text = body.get(key)
    if not isinstance(text, str):
        raise ValueError(f"{key} is missing")
    table = json.loads(text)
    if not isinstance(table, dict):
        raise ValueError(f"{key} is not a TJSON struct")
    return table


def _string(struct: dict[str, Any], fid: str) -> str | None:
    value = struct.get(fid)
    if value is None:
        return None
    text = value["str"]
    if not isinstance(text, str):
        raise ValueError(f"field {fid} is not a string")
    return text


def _required(struct: dict[str, Any], fid: str) -> str:
    text = _string(struct, fid)
    if text is None:
        raise ValueError(f"field {fid} is missing")
    return text


def _columns(table: dict[str, Any]) -> tuple[Any, Any]:
    """What constraints name by position: the columns and the partition keys, as TJSON."""
    sd = table.get(_SD)
    cols = sd["rec"].get(_COLS) if sd is not None else None
    return cols, table.get(_PARTITION_KEYS)
