"""Helpers for the cache's tests: several instances on one database, hit/miss counts from the
in-process Prometheus registry, transactions and snapshots through Thrift, and a comparison of
cache answers with the database path's (thriftpy2 objects, field for field)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from thrift.protocol import TBinaryProtocol
from thrift.transport import TTransport
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.utils import deserialize

from hms_cache_proxy.idl import hms
from hms_cache_proxy.observability import metrics
from hms_cache_proxy.store.cache.entries import TableName
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList, ValidReadTxnList
from tests.support.apache_thrift import apache_client
from tests.support.server import running_service

TXN = {"transactional": "true", "transactional_properties": "default"}

FAST = {"cache_poll_interval_seconds": 0.05}


@contextmanager
def instances(url: str, tmp: Path, n: int = 2, **settings: Any) -> Iterator[list[Any]]:
    """``n`` in-process services with caches on one database."""
    with ExitStack() as stack:
        out = []
        for i in range(n):
            svc = stack.enter_context(
                running_service(url, tmp / "warehouse", **{**FAST, **settings})
            )
            svc.name = f"instance{i}"  # type: ignore[attr-defined]
            out.append(svc)
        yield out


@contextmanager
def clients(*services: Any) -> Iterator[list[Any]]:
    opened = [apache_client("127.0.0.1", s.port) for s in services]
    try:
        yield [c for c, _ in opened]
    finally:
        for _, t in opened:
            t.close()


def settle(*services: Any, timeout: float = 10.0) -> None:
    """Every instance has applied every event in the log, and its loads are done. The poller
    is woken first: a trailing OPEN_TXN or ALLOC_WRITE_ID_EVENT of another instance is not
    announced (docs/cache.md, "Events without a NOTIFY"), and an eventual-mode instance would
    otherwise read it only with the next announced event or its safety check."""
    for svc in services:
        target = svc.store.current_notification_event_id()
        svc.cache.poller.wake()
        assert svc.cache.poller.wait_for(target, timeout), f"{svc.name} did not reach {target}"
        assert svc.cache.loader.wait_idle(timeout)


def entry(svc: Any, db: str, table: str) -> Any:
    with svc.cache.cache.lock:
        return svc.cache.cache.entries.get(TableName("hive", db, table))


def wait_until(check: Any, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


# -- metrics ---------------------------------------------------------------------------------


def _counts() -> dict[tuple[str, ...], float]:
    out: dict[tuple[str, ...], float] = {}
    for family in metrics.REGISTRY.collect():
        if family.name not in ("hms_cache_hits", "hms_cache_misses"):
            continue
        for s in family.samples:
            if s.name.endswith("_total"):
                out[(family.name, *s.labels.values())] = s.value
    return out


class Counted:
    """Hits and misses recorded while the ``with`` block ran (this process, all instances)."""

    def __enter__(self) -> Counted:
        self._before = _counts()
        return self

    def __exit__(self, *exc: Any) -> None:
        after = _counts()
        self.delta = {
            k: v - self._before.get(k, 0.0) for k, v in after.items() if v != self._before.get(k)
        }

    def hits(self, method: str) -> float:
        return self.delta.get(("hms_cache_hits", method), 0.0)

    def misses(self, method: str, reason: str | None = None) -> float:
        return sum(
            v
            for k, v in self.delta.items()
            if k[0] == "hms_cache_misses" and k[1] == method and (reason is None or k[2] == reason)
        )


# -- transactions ----------------------------------------------------------------------------


def open_txn(client: Any, T: Any) -> int:
    rqst = T.OpenTxnRequest(num_txns=1, user="tester", hostname="test-host")
    return client.open_txns(rqst).txn_ids[0]


def allocate(client: Any, T: Any, db: str, tbl: str, txn: int) -> int:
    rqst = T.AllocateTableWriteIdsRequest(dbName=db, tableName=tbl, txnIds=[txn])
    return client.allocate_table_write_ids(rqst).txnToWriteIds[0].writeId


def commit(client: Any, T: Any, txn: int) -> None:
    client.commit_txn(T.CommitTxnRequest(txnid=txn))


def abort(client: Any, T: Any, txn: int) -> None:
    client.abort_txn(T.AbortTxnRequest(txnid=txn))


def snapshot(client: Any, T: Any, db: str, tbl: str, txn: int | None = None) -> str:
    """The table's ValidWriteIdList now (or as txn ``txn`` sees it), as Hive's string."""
    valid_txns = None
    if txn is not None:
        valid_txns = ValidReadTxnList.from_open_txns_response(client.get_open_txns(), txn)
    rqst = T.GetValidWriteIdsRequest(
        fullTableNames=[f"{db}.{tbl}"],
        validTxnList=None if valid_txns is None else valid_txns.to_string(),
    )
    tvwi = client.get_valid_write_ids(rqst).tblValidWriteIds[0]
    return ValidReaderWriteIdList.from_table_valid_write_ids(tvwi).to_string()


def get_table_req(client: Any, T: Any, db: str, tbl: str, vwil: str | None) -> Any:
    rqst = T.GetTableRequest(dbName=db, tblName=tbl, validWriteIdList=vwil)
    return client.get_table_req(rqst).table


def get_partitions_req(client: Any, T: Any, db: str, tbl: str, vwil: str | None) -> list[Any]:
    rqst = T.PartitionsRequest(dbName=db, tblName=tbl, maxParts=-1, validWriteIdList=vwil)
    return client.get_partitions_req(rqst).partitions


# -- comparing -------------------------------------------------------------------------------


def ours(obj: Any) -> Any:
    """A thriftpy2 twin of an Apache-generated struct (thriftpy2's equality, field for field)."""
    if isinstance(obj, list):
        return [ours(o) for o in obj]
    buf = TTransport.TMemoryBuffer()
    obj.write(TBinaryProtocol.TBinaryProtocol(buf))
    cls = getattr(hms, type(obj).__name__)
    return deserialize(cls(), buf.getvalue(), TBinaryProtocolFactory())
