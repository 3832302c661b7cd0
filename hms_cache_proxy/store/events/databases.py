"""Which databases a notification event names, for hiding events from restricted clients.

An event's DB_NAME column is not the whole story: transaction events carry none, yet their
messages name databases (ABORT_TXN ``dbsUpdated``, COMMIT_TXN ``databases`` and ``tables``,
ALLOC_WRITE_ID ``dbName``, write-id lists ``db.table:...``). This reads every such field of the
message body, at any depth.
"""

from __future__ import annotations

from typing import Any

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import messages, tjson

_NAME_KEYS = frozenset({"db", "dbname", "database"})
_LIST_KEYS = frozenset({"dbsupdated", "databases"})
_WRITE_ID_LIST_KEYS = frozenset({"validwriteidlist", "validtxnwriteidlist", "writeidlist"})
_TABLE_LIST_KEYS = frozenset({"tables"})  # COMMIT_TXN: table names, "db.table" when qualified
# COMMIT_TXN's own fields: rows whose item at this index is a database name
# (txnWrites: [db, table, writeId]; tablesAltered: [cat, db, table]).
_ROW_KEYS = {"txnwrites": 0, "tablesaltered": 1}


def _db_of(obj: Any) -> str | None:
    return getattr(obj, "dbName", None)


# Thrift objects embedded as TJSON text (by key, lower case): their class and where the
# database name is in them. A renamed table's "after" object can name another database.
_EMBEDDED: dict[str, tuple[type, Any]] = {
    **{k: (hms.Table, _db_of) for k in ("tableobjjson", "tableobjbeforejson")},
    **{k: (hms.Table, _db_of) for k in ("tableobjafterjson", "tableobjs")},
    **{
        k: (hms.Partition, _db_of)
        for k in (
            "ptnobjjson",
            "partitionobjbeforejson",
            "partitionobjafterjson",
            "partitionlistjson",
            "partitionobjs",
            "partitionobjjson",
        )
    },
    **{
        k: (hms.Database, lambda d: d.name) for k in ("dbjson", "dbobjbeforejson", "dbobjafterjson")
    },
    "functionobjjson": (hms.Function, _db_of),
    # constraints: the event's dbName is a foreign key's referenced database; its own is here
    "primarykeylistjson": (hms.SQLPrimaryKey, lambda c: c.table_db),
    "foreignkeylistjson": (hms.SQLForeignKey, lambda c: c.fktable_db),
    "uniqueconstraintlistjson": (hms.SQLUniqueConstraint, lambda c: c.table_db),
    "notnullconstraintlistjson": (hms.SQLNotNullConstraint, lambda c: c.table_db),
    "defaultconstraintlistjson": (hms.SQLDefaultConstraint, lambda c: c.table_db),
    "checkconstraintlistjson": (hms.SQLCheckConstraint, lambda c: c.table_db),
    "colstatsjson": (hms.ColumnStatistics, lambda c: c.statsDesc and c.statsDesc.dbName),
}


class _Unreadable(Exception):
    """An embedded object that does not decode."""


def event_databases(event: Any) -> set[str] | None:
    """The database names (lower case) an event names, or None when its message cannot be read
    (such an event is hidden from a restricted client: what it names is unknown)."""
    found: set[str] = set()
    if event.dbName:
        found.add(event.dbName.lower())
    if not event.message:
        return found
    try:
        body = messages.decode(event.message, event.messageFormat)
        _collect(body, found)
    except (ValueError, UnicodeDecodeError, _Unreadable):
        return None
    return found


def _collect(value: Any, found: set[str]) -> None:
    """Walks the JSON body without recursion (a hostile body may nest deeply)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                k = key.lower() if isinstance(key, str) else ""
                if k in _NAME_KEYS and isinstance(child, str):
                    found.add(child.lower())
                elif k in _LIST_KEYS and isinstance(child, list):
                    found.update(d.lower() for d in child if isinstance(d, str))
                elif k in _WRITE_ID_LIST_KEYS and isinstance(child, str):
                    found.update(_write_id_list_databases(child))
                elif k in _TABLE_LIST_KEYS and isinstance(child, list):
                    found.update(
                        t.split(".", 1)[0].lower() for t in child if isinstance(t, str) and "." in t
                    )
                elif k in _ROW_KEYS and isinstance(child, list):
                    found.update(_row_databases(child, _ROW_KEYS[k]))
                elif k in _EMBEDDED and child is not None:
                    found.update(_embedded_databases(k, child))
                else:
                    stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)


def _row_databases(rows: list[Any], index: int) -> set[str]:
    """The database of each row; a row that does not hold one there is unreadable."""
    out = set()
    for row in rows:
        if not isinstance(row, list) or len(row) <= index or not isinstance(row[index], str):
            raise _Unreadable("row")
        out.add(row[index].lower())
    return out


def _write_id_list_databases(text: str) -> set[str]:
    """``db.table:hwm:...`` (ValidWriteIdList), ``txnid$db.t1:...$db.t2:...`` (per txn)."""
    out = set()
    for part in text.split("$"):
        head = part.split(":", 1)[0]
        if "." in head:
            out.add(head.split(".", 1)[0].lower())
    return out


def _embedded_databases(key: str, value: Any) -> set[str]:
    cls, db_of = _EMBEDDED[key]
    texts = value if isinstance(value, list) else [value]
    out = set()
    for text in texts:
        if text is None:
            continue
        if not isinstance(text, str):
            raise _Unreadable(key)
        try:
            db = db_of(tjson.loads(text, cls))
        except Exception as exc:  # noqa: BLE001 - any decoding failure: unreadable
            raise _Unreadable(key) from exc
        if isinstance(db, str) and db:
            out.add(db.lower())
    return out
