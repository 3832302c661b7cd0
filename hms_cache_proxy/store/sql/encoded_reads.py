"""Database-path replies written as bytes straight from the rows, without a tree of Thrift
objects: the cache loader's partition encoder (cacheload) serves get_partitions of a whole
table when there is no cache, or the cache cannot answer. The bytes are those the objects of
``get_partitions`` encode to (tests/integration/test_cache_reads.py checks the loader's)."""

from __future__ import annotations

from hms_cache_proxy import thrift_bytes
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.sql import cacheload
from hms_cache_proxy.store.sql.partition_reads import PartitionReads
from hms_cache_proxy.thrift_bytes import Encoded


def all_partitions_encoded(
    database: Database, partitions: PartitionReads, cat: str, db: str, tbl: str
) -> Encoded:
    """Every partition of the table, in name order, as one encoded LIST of Partition structs
    (NoSuchObjectException when the table does not exist)."""
    with database.read() as conn:
        keys = partitions.resolve_table(conn, cat, db, tbl)
        parts = cacheload._partition_bytes(conn, database.dialect, keys.tbl_id, cat, db, tbl)
    parts.sort(key=_name)  # code-point order on every database (the cache's order too)
    pieces: list[bytes] = []
    extend = pieces.extend
    for part in parts:
        extend(part[2:])  # head, cols, tail
    return thrift_bytes.join_list(pieces, len(parts))


def _name(part: cacheload.PartitionBytes) -> str:
    return part[0]
