"""The transaction service's rules, checked without a server.

- The lock-conflict rule in SQL (what the service runs) equals the rule written in Python, for
  every combination of type, level, place and owner; and both give Hive's matrix.
- The open-txn list treats young gaps in TXNS as open and old ones as not (Hive's
  getOpenTxnsList), and counts excluded types in min_open_txn.
- Write-id snapshots follow Hive's getValidWriteIdsForTable, including its rule for a table
  whose committed write ids were all cleaned.
- Hive's message texts.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.db.ids import IdAllocator
from hms_cache_proxy.store.events.log import EventLog
from hms_cache_proxy.store.events.messages import MessageBuilder
from hms_cache_proxy.store.sql.bootstrap import init_db
from hms_cache_proxy.store.txn import txns as txns_module
from hms_cache_proxy.store.txn.locks import LockRow, conflict_condition, conflicts
from hms_cache_proxy.store.txn.locks import normalize_partition_name as norm
from hms_cache_proxy.store.txn.txn_base import TxnConfig, raise_unexpected_state
from hms_cache_proxy.store.txn.txn_service import TxnService
from hms_cache_proxy.store.txn.txns import OpenTxnList, TxnRow
from hms_cache_proxy.store.txn.writeids import split_table_name
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList, ValidReadTxnList

NOW_MS = 1_700_000_000_000


@pytest.fixture
def svc(tmp_path: Path) -> TxnService:
    db = Database(f"sqlite:///{tmp_path / 'm.db'}")
    init_db(db, "file:/tmp/wh")
    ids = IdAllocator(db)
    service = TxnService(
        db, EventLog(ids), MessageBuilder(), TxnConfig(), clock=lambda: NOW_MS / 1000
    )
    yield service
    db.dispose()


# -- locks ------------------------------------------------------------------------------------

PLACES = [  # (table, partition)
    (None, None),
    ("t", None),
    ("t", "p=1"),
    ("t", "p=2"),
    ("u", None),
]


def _row(ext: int, txn: int, kind: str, place: tuple, db: str = "db") -> LockRow:
    return LockRow(ext, 1, txn, db, place[0], place[1], "w", kind)


def test_sql_rule_equals_python_rule_for_every_combination(svc: TxnService) -> None:
    hl = schema.HIVE_LOCKS
    cases = []
    ext = 0
    for ex_kind, req_kind, ex_place, req_place, owners, req_db in itertools.product(
        "rwxe", "rwxe", PLACES, PLACES, [(0, 0), (5, 5), (5, 6), (0, 7), (7, 0)], ["db", "db2"]
    ):
        ext += 2
        existing = _row(ext, owners[0], ex_kind, ex_place)
        requested = _row(ext + 1, owners[1], req_kind, req_place, req_db)
        cases.append((existing, requested))
    with svc.db.write_engine.begin() as conn:
        conn.execute(
            insert(hl),
            [
                {
                    "HL_LOCK_EXT_ID": r.ext_id,
                    "HL_LOCK_INT_ID": 1,
                    "HL_TXNID": r.txn_id,
                    "HL_DB": r.db,
                    "HL_TABLE": r.table,
                    "HL_PARTITION": r.partition,
                    "HL_LOCK_STATE": "w",
                    "HL_LOCK_TYPE": r.type,
                    "HL_LAST_HEARTBEAT": 0,
                    "HL_USER": "u",
                    "HL_HOST": "h",
                }
                for pair in cases
                for r in pair
            ],
        )
    req, ex = hl.alias("req"), hl.alias("ex")
    with svc.db.read() as conn:
        blocked = {
            r[0]
            for r in conn.execute(
                select(req.c.HL_LOCK_EXT_ID)
                .select_from(req.join(ex, conflict_condition(req, ex)))
                .where(ex.c.HL_LOCK_EXT_ID == req.c.HL_LOCK_EXT_ID - 1)
            )
        }
    for existing, requested in cases:
        assert (requested.ext_id in blocked) == conflicts(requested, existing), (
            existing,
            requested,
        )


HIVE_MATRIX = {  # requested -> held -> blocked?
    "r": {"r": False, "w": False, "x": False, "e": True},
    "w": {"r": False, "w": False, "x": True, "e": True},
    "x": {"r": False, "w": True, "x": True, "e": True},
    "e": {"r": True, "w": True, "x": True, "e": True},
}


@pytest.mark.parametrize(("req", "held"), list(itertools.product("rwxe", "rwxe")))
def test_python_rule_is_hives_matrix_on_one_table(req: str, held: str) -> None:
    existing, requested = _row(1, 0, held, ("t", None)), _row(2, 0, req, ("t", None))
    assert conflicts(requested, existing) is HIVE_MATRIX[req][held]


def test_levels_and_owners() -> None:
    db_level, table, part1, part2 = (None, None), ("t", None), ("t", "p=1"), ("t", "p=2")
    assert not conflicts(_row(2, 0, "r", db_level), _row(1, 0, "e", table))
    assert not conflicts(_row(2, 0, "e", table), _row(1, 0, "r", db_level))
    assert conflicts(_row(2, 0, "r", table), _row(1, 0, "e", db_level))
    assert conflicts(_row(2, 0, "r", table), _row(1, 0, "e", part1))
    assert not conflicts(_row(2, 0, "e", part2), _row(1, 0, "e", part1))
    assert not conflicts(_row(2, 9, "e", table), _row(1, 9, "e", table))  # same txn
    assert conflicts(_row(2, 0, "e", table), _row(1, 0, "e", table))  # txn-less: never the same
    assert not conflicts(_row(2, 0, "e", table, db="other"), _row(1, 0, "e", table))


def test_lock_row_prints_as_hives_lock_info() -> None:
    row = LockRow(7, 2, 5, "db", "t", None, "a", "x")
    assert str(row) == (
        "lockid:7 intLockId:2 txnid:5 db:db table:t partition:None state:ACQUIRED type:EXCL_WRITE"
    )


def test_partition_names_are_normalised_like_hive() -> None:
    assert norm("DS=2024-01-01/Hr=10") == "ds=2024-01-01/hr=10"
    assert norm(None) is None
    with pytest.raises(hms.MetaException):
        norm("no-equals-sign")


# -- open txns --------------------------------------------------------------------------------


def _txns(svc: TxnService, rows: list[tuple[int, str, int]]) -> None:
    with svc.db.write_engine.begin() as conn:
        conn.execute(
            insert(schema.TXNS),
            [
                {
                    "TXN_ID": txn,
                    "TXN_STATE": state,
                    "TXN_STARTED": NOW_MS - age,
                    "TXN_LAST_HEARTBEAT": NOW_MS - age,
                    "TXN_USER": "u",
                    "TXN_HOST": "h",
                    "TXN_TYPE": 0,
                }
                for txn, state, age in rows
            ],
        )


def test_young_gaps_in_txns_count_as_open_and_old_ones_do_not(svc: TxnService) -> None:
    _txns(
        svc,
        [
            (3, "c", 60_000),  # old: the gap 1..2 below it is not open
            (4, "a", 60_000),
            (6, "c", 60_000),  # old: 5 is not open
            (9, "c", 100),  # young: 7 and 8 may still be being opened
            (10, "o", 100),
            (12, "c", 100),  # young: 11 too
        ],
    )
    with svc.db.read() as conn:
        listed = svc.txns.open_txn_list(conn)
    assert listed.hwm == 12
    assert [(t.txn_id, t.state) for t in listed.txns] == [
        (4, "a"),
        (7, "o"),
        (8, "o"),
        (10, "o"),
        (11, "o"),
    ]
    resp = listed.response()
    assert ValidReadTxnList.from_open_txns_response(resp).to_string() == "12:7:7,8,10,11:4"


def _settle_now(svc: TxnService) -> None:
    """Two reads, the first one's snapshot aged past the open window: the floor is set."""
    svc.get_open_txns()
    top, _ = svc.txns._settle_marks[-1]
    svc.txns._settle_marks.clear()
    svc.txns._settle_marks.append((top, time.monotonic() - 3600))
    svc.get_open_txns()


def _full_list(svc: TxnService) -> list[tuple[int, str]]:
    with svc.db.read() as conn:
        return [(t.txn_id, t.state) for t in svc.txns.open_txn_list(conn).txns]


def test_settled_floor_skips_old_committed_rows_and_lists_the_same(svc: TxnService) -> None:
    _txns(svc, [(1, "a", 60_000), (2, "o", 60_000)])
    _txns(svc, [(txn, "c", 60_000) for txn in range(3, 53)])
    _settle_now(svc)
    settled = svc.txns._settled_txns
    assert settled is not None and settled.floor == 52
    assert settled.unsettled == {1, 2}
    # Below the floor the open txn commits; above it old and young rows (with gaps) arrive.
    with svc.db.write_engine.begin() as conn:
        conn.execute(schema.TXNS.update().where(schema.TXNS.c.TXN_ID == 2).values(TXN_STATE="c"))
    _txns(svc, [(53, "a", 60_000), (54, "c", 60_000), (57, "c", 100), (58, "o", 100)])
    expected = _full_list(svc)
    assert expected == [(1, "a"), (53, "a"), (55, "o"), (56, "o"), (58, "o")]
    resp = svc.get_open_txns()
    assert resp.open_txns == [1, 53, 55, 56, 58] and resp.txn_high_water_mark == 58
    info = svc.get_open_txns_info()
    assert [(t.id, t.state) for t in info.open_txns] == [
        (1, hms.TxnState.ABORTED),
        (53, hms.TxnState.ABORTED),
        (55, hms.TxnState.OPEN),
        (56, hms.TxnState.OPEN),
        (58, hms.TxnState.OPEN),
    ]


def test_settled_floor_follows_the_newest_read_old_enough(svc: TxnService) -> None:
    """Reads leave marks (top txn id, time); a later read moves the floor to the newest mark
    the open window (plus the margin) lies behind, not only to the oldest one."""
    txns = svc.txns
    delay = txns.config.open_txn_timeout_ms / 1000 + 1.0
    txns._settle(time.monotonic(), 10, None, [])
    time.sleep(0.15)  # more than the marks' spacing
    txns._settle(time.monotonic(), 20, None, [4])
    assert txns._settled_txns is None  # neither read is old enough yet
    txns._settle(time.monotonic() + delay + 1, 30, None, [4, 25])
    settled = txns._settled_txns
    assert settled is not None and (settled.floor, settled.unsettled) == (20, {4})
    # A young row caps it, as before.
    time.sleep(0.15)
    txns._settle(time.monotonic(), 40, None, [])
    txns._settle(time.monotonic() + 2 * delay + 2, 50, 33, [])
    assert txns._settled_txns is not None and txns._settled_txns.floor == 33


def test_settled_floor_moves_with_a_long_open_window(
    svc: TxnService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With metastore.txn.opentxn.timeout at 30 s and a read every 0.1 s, the marks kept
    still reach back past the window, so the floor moves (it never did when the marks were
    spaced 0.1 s apart: the 64 kept covered 6.4 s)."""
    clock = [1000.0]
    monkeypatch.setattr(txns_module.time, "monotonic", lambda: clock[0])
    txns = svc.txns
    monkeypatch.setattr(txns, "config", TxnConfig(open_txn_timeout_ms=30_000))
    for top in range(1, 700):  # 70 s of reads
        txns._settle(clock[0], top, None, [])
        clock[0] += 0.1
    settled = txns._settled_txns
    assert settled is not None and 370 <= settled.floor <= 390  # the read 31 s before the last


def test_settled_floor_keeps_the_row_before_the_first_young_one(svc: TxnService) -> None:
    _txns(svc, [(txn, "c", 60_000) for txn in range(1, 11)])
    _settle_now(svc)
    assert svc.txns._settled_txns is not None and svc.txns._settled_txns.floor == 10
    # The first young row is the floor's successor: gaps below it reach down to row 10 only.
    _txns(svc, [(13, "c", 100)])
    assert _full_list(svc) == [(11, "o"), (12, "o")]
    assert svc.get_open_txns().open_txns == [11, 12]
    # Cleaning removes row 10: the row before the young one now lies below the floor.
    with svc.db.write_engine.begin() as conn:
        conn.execute(schema.TXNS.delete().where(schema.TXNS.c.TXN_ID == 10))
    assert _full_list(svc) == [(10, "o"), (11, "o"), (12, "o")]
    assert svc.get_open_txns().open_txns == [10, 11, 12]


def test_min_open_counts_excluded_txns_and_aborted_bits_follow_the_list() -> None:
    listed = OpenTxnList(
        9,
        (
            TxnRow(2, "o", hms.TxnType.READ_ONLY),
            TxnRow(3, "a", hms.TxnType.DEFAULT),
            TxnRow(5, "o", hms.TxnType.DEFAULT),
        ),
    )
    resp = listed.response()
    assert resp.open_txns == [3, 5] and resp.min_open_txn == 2
    assert resp.abortedBits == b"\x01"
    assert listed.response([]).abortedBits == b"\x02"


@pytest.mark.parametrize(
    "states",
    [(), ("o",), ("a",), ("a", "a"), ("o", "a", "o"), ("a", "o", "a", "a", "o")],
)
@pytest.mark.parametrize("read_only_at", [None, 0, 2])
def test_snapshot_is_the_snapshot_of_the_response(
    states: tuple[str, ...], read_only_at: int | None
) -> None:
    rows = tuple(
        TxnRow(
            3 + 2 * i,
            state,
            hms.TxnType.READ_ONLY if i == read_only_at else hms.TxnType.DEFAULT,
        )
        for i, state in enumerate(states)
    )
    listed = OpenTxnList(20, rows)
    expected = ValidReadTxnList.from_open_txns_response(listed.response())
    got = listed.snapshot()
    assert got == expected
    assert (got.exceptions, got.aborted_bits, got.min_open_txn) == (
        expected.exceptions,
        expected.aborted_bits,
        expected.min_open_txn,
    )
    assert got.to_string() == expected.to_string()


# -- write ids --------------------------------------------------------------------------------


def _t2w(svc: TxnService, rows: list[tuple[int, int]], table: str = "t") -> None:
    with svc.db.write_engine.begin() as conn:
        conn.execute(
            insert(schema.TXN_TO_WRITE_ID),
            [
                {"T2W_TXNID": txn, "T2W_DATABASE": "db", "T2W_TABLE": table, "T2W_WRITEID": w}
                for txn, w in rows
            ],
        )
        conn.execute(
            insert(schema.NEXT_WRITE_ID).values(
                NWI_DATABASE="db", NWI_TABLE=table, NWI_NEXT=max(w for _, w in rows) + 1
            )
        )


def _snapshot_string(svc: TxnService, snapshot: str) -> str:
    with svc.db.read() as conn:
        tvwi = svc.table_write_ids(conn, "db.t", ValidReadTxnList.parse(snapshot))
    return ValidReaderWriteIdList.from_table_valid_write_ids(tvwi).to_string()


def test_write_id_snapshot_from_a_txn_snapshot(svc: TxnService) -> None:
    # txns 11..15 wrote ids 1..5; 13 open, 14 aborted, 16 (past the hwm) wrote 6
    _t2w(svc, [(11, 1), (12, 2), (13, 3), (14, 4), (15, 5), (16, 6)])
    assert _snapshot_string(svc, "15:13:13:14") == "db.t:5:3:3:4"
    # The hwm is the highest id of a txn at or below the txn hwm: 16 is not visible.
    assert _snapshot_string(svc, "15:9223372036854775807::") == "db.t:5:9223372036854775807::"
    # A snapshot that sees 16 open (hwm 16, 16 listed open).
    assert _snapshot_string(svc, "16:16:16:") == "db.t:6:6:6:"


def test_only_the_lowest_invalid_id_is_kept_when_no_committed_id_is_left(svc: TxnService) -> None:
    _t2w(svc, [(21, 7), (22, 8), (23, 9)])  # committed ids were cleaned; 7 aborted, 8 and 9 open
    assert _snapshot_string(svc, "23:22:22,23:21") == "db.t:7:8::7"


def test_what_table_writes_check(svc: TxnService) -> None:
    a, b = svc.open_txns(2, "u", "h")
    svc.allocate_table_write_ids("db", "t", [a, b])
    svc.commit_txn(a)
    with svc.db.write_engine.begin() as conn:
        assert svc.require_open_write_id(conn, "db", "t", 2) == b
        assert svc.write_id_owner(conn, "db", "t", 1) == (a, "c")
        assert svc.write_id_owner(conn, "db", "t", 3) is None
        assert svc.table_write_id(conn, "db", "t", b) == 2
        # The writer's own snapshot: its write is valid, nothing else open.
        assert svc.txn_write_id_list(conn, "db", "t", b) == "db.t:2:9223372036854775807::"
        with pytest.raises(hms.MetaException) as done:
            svc.require_open_write_id(conn, "db", "t", 1)
        assert done.value.message == (
            f"write id 1 of db.t: Transaction txnid:{a} is already committed."
        )
        with pytest.raises(hms.MetaException, match="invalid write id 9 for table db.t"):
            svc.require_open_write_id(conn, "db", "t", 9)


def test_split_table_name() -> None:
    assert split_table_name("Db.Tbl") == ("db", "tbl")
    with pytest.raises(hms.MetaException):
        split_table_name("nodot")


# -- messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "exc", "text"),
    [
        ("a", hms.TxnAbortedException, "Transaction txnid:5 already aborted"),
        ("c", hms.NoSuchTxnException, "Transaction txnid:5 is already committed."),
        ("u", hms.NoSuchTxnException, "No such transaction txnid:5"),
        ("o", hms.NoSuchTxnException, "txnid:5 is OPEN"),
    ],
)
def test_unexpected_state_messages_are_hives(state: str, exc: type, text: str) -> None:
    with pytest.raises(exc) as raised:
        raise_unexpected_state(state, 5)
    assert raised.value.message == text
