"""What Hive's REPL DUMP does with a source's notification log, for the replication tests:
the COMMIT_TXN message extended with the txn's write-event info, as
JSONCommitTxnMessage#addWriteEventInfo does, and file URIs decoded as
ReplChangeManager#decodeFileUri reads them."""

from __future__ import annotations

from typing import Any

from hms_cache_proxy.store.events import tjson

_HIVE_COMMIT_LISTS = (
    ("writeIds", "writeId"),
    ("databases", "database"),
    ("tables", "table"),
    ("tableObjs", "tableObj"),
    ("partitions", "partition"),
    ("partitionObjs", "partitionObj"),
    ("files", "files"),
)


def add_write_event_info(body: dict[str, Any], infos: list[Any]) -> dict[str, Any]:
    """The dump's CommitTxnHandler: each list created when null, then appended to."""
    out = dict(body)
    for key, field in _HIVE_COMMIT_LISTS:
        if out.get(key) is None:
            out[key] = []
        out[key] = [*out[key], *(getattr(i, field) for i in infos)]
    return out


def first_table(body: dict[str, Any], hms_table: Any) -> Any:
    """getTableObj(0) as the dump reads it (None when the message holds none)."""
    objs = body.get("tableObjs") or [None]
    return None if objs[0] is None else tjson.loads(objs[0], hms_table)


def decode_file_uri(encoded: str) -> list[str | None]:
    """[file, checksum, cmroot, subdir], an empty part read as None."""
    parts = encoded.split("#")
    return [parts[0]] + [parts[i] if i < len(parts) and parts[i] else None for i in (1, 2, 3)]
