"""open_txns and commit_txn as server-side functions (store/txn/plpgsql.py) on PostgreSQL.

The same sequence of calls runs on two fresh databases, one through the functions and one
through today's statements (pgsql.py and the general path); the rows they leave in the txn
tables and the events they write must be the same (the events' bodies compared decoded: the
functions write Hive's plain JSON format, the statements gzip). Also: installing is idempotent
and a role without CREATE falls back with a logged reason.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.exc import DBAPIError

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.sql.bootstrap import ensure_ready
from hms_cache_proxy.store.txn import install, plpgsql
from hms_cache_proxy.store.txn.txn_base import TxnConfig
from hms_cache_proxy.store.txn.txn_service import TxnService
from tests.support.stores import sql_store

pytestmark = pytest.mark.postgres

USER, HOST = "tester", "test-host"


@pytest.fixture
def made(tmp_path: Path) -> Iterator[list[Database]]:
    dbs: list[Database] = []
    yield dbs
    for db in dbs:
        db.dispose()


def _service(url: str, tmp_path: Path, made: list[Database], functions: bool, level: bool):
    db = Database(url)
    made.append(db)
    ensure_ready(db, (tmp_path / "wh").as_uri(), True)
    usable = install.install(db).usable if functions else False
    assert usable == functions
    config = TxnConfig(use_min_history_level=level, server_functions=usable)
    return sql_store(db, (tmp_path / "wh").as_uri(), config).txn


def _lock(svc: TxnService, txn: int, table: str, op: int) -> None:
    component = hms.LockComponent(
        type=hms.LockType.SHARED_WRITE
        if op != hms.DataOperationType.INSERT
        else hms.LockType.SHARED_READ,
        level=hms.LockLevel.TABLE,
        dbname="default",
        tablename=table,
        operationType=op,
        isTransactional=True,
    )
    svc.lock(hms.LockRequest(component=[component], txnid=txn, user=USER, hostname=HOST))


def _calls(svc: TxnService) -> list[Any]:
    """A sequence touching every branch of both functions; returns what the calls answered."""
    out: list[Any] = []
    a = svc.open_txns(1, USER, HOST, "agent")
    out.append(a)
    svc.allocate_table_write_ids("default", "t1", a)
    svc.allocate_table_write_ids("default", "t2", a)
    _lock(svc, a[0], "t1", hms.DataOperationType.INSERT)
    _lock(svc, a[0], "t2", hms.DataOperationType.INSERT)
    b = svc.open_txns(3, USER, HOST)  # open while ``a`` is: the watermark is a[0]
    out.append(b)
    svc.commit_txn(a[0])  # inserts: components move, the event lists the write ids
    svc.commit_txn(a[0])  # again: a no-op
    svc.commit_txn(b[0])  # nothing written
    svc.abort_txn(b[1])
    r = svc.open_txns(1, USER, HOST, txn_type=hms.TxnType.READ_ONLY)  # no event
    out.append(r)
    _lock(svc, r[0], "t1", hms.DataOperationType.SELECT)
    svc.commit_txn(r[0])
    u = svc.open_txns(1, USER, HOST)
    svc.allocate_table_write_ids("default", "t1", u)
    _lock(svc, u[0], "t1", hms.DataOperationType.UPDATE)
    svc.commit_txn(u[0])  # an update: the general path
    for bad in (b[1], 10_000):
        try:
            svc.commit_txn(bad)
        except (hms.TxnAbortedException, hms.NoSuchTxnException) as exc:
            out.append(type(exc).__name__ + ": " + str(exc.message))
    svc.commit_txn(b[2])
    m = svc.open_txns(2, USER, HOST)
    out.append(svc.allocate_table_write_ids("default", "t3", [m[1], m[0]]))
    out.append(svc.allocate_table_write_ids("default", "t3", m))  # reused: no event
    out.append(svc.allocate_table_write_ids("default", "t1", [m[1]]))
    out.append(svc.allocate_table_write_ids("default", "t1", m))  # one new, one reused
    ro = svc.open_txns(1, USER, HOST, txn_type=hms.TxnType.READ_ONLY)
    for bad in ([b[1]], [m[0], 10_000], ro):
        try:
            svc.allocate_table_write_ids("default", "t1", bad)
        except (hms.TxnAbortedException, hms.NoSuchTxnException, hms.MetaException) as exc:
            out.append(type(exc).__name__ + ": " + str(exc.message))
    svc.commit_txn(m[0])
    svc.allocate_table_write_ids("db2", "t9", [m[1]])
    _lock(svc, m[1], "t1", hms.DataOperationType.INSERT)
    svc.abort_txn(m[1], error_code=1)  # write ids in two databases, a lock, a reason
    svc.abort_txn(m[1])  # again: a no-op
    svc.abort_txn(ro[0])  # read-only: no event
    d = svc.open_txns(2, USER, HOST)
    svc.allocate_table_write_ids("default", "t1", d)
    _lock(svc, d[0], "t1", hms.DataOperationType.DELETE)
    _lock(svc, d[1], "t1", hms.DataOperationType.UPDATE)
    _lock(svc, d[1], "t2", hms.DataOperationType.INSERT)
    svc.commit_txn(d[0], excl_write_enabled=False)  # the general path: the conflict check
    try:
        svc.commit_txn(d[1], excl_write_enabled=False)  # first committer wins: aborted
    except hms.TxnAbortedException as exc:
        out.append("TxnAbortedException: " + str(exc.message))
    w = svc.open_txns(1, USER, HOST)
    svc.allocate_table_write_ids("default", "t2", w)
    _lock(svc, w[0], "t2", hms.DataOperationType.DELETE)
    _lock(svc, w[0], "t1", hms.DataOperationType.INSERT)
    svc.commit_txn(w[0])  # a delete and an insert: write set, commit id, 'Y'
    e = svc.open_txns(1, USER, HOST)
    svc.abort_txn(e[0])  # no write ids: dbsUpdated []
    for bad in (a[0], 10_000):
        try:
            svc.abort_txn(bad)
        except (hms.TxnAbortedException, hms.NoSuchTxnException, hms.MetaException) as exc:
            out.append(type(exc).__name__ + ": " + str(exc.message))
    return out


def _rows(svc: TxnService) -> dict[str, Any]:
    """The txn tables' rows (no clocks) and the events (bodies decoded, no timestamps)."""
    found: dict[str, Any] = {}
    tables = {
        "TXNS": (
            "TXN_ID",
            "TXN_STATE",
            "TXN_USER",
            "TXN_HOST",
            "TXN_AGENT_INFO",
            "TXN_TYPE",
            "TXN_META_INFO",
        ),
        "MIN_HISTORY_LEVEL": ("MHL_TXNID", "MHL_MIN_OPEN_TXNID"),
        "TXN_COMPONENTS": None,
        "COMPLETED_TXN_COMPONENTS": (
            "CTC_TXNID",
            "CTC_DATABASE",
            "CTC_TABLE",
            "CTC_PARTITION",
            "CTC_WRITEID",
            "CTC_UPDATE_DELETE",
        ),
        "WRITE_SET": None,
        "HIVE_LOCKS": ("HL_LOCK_EXT_ID", "HL_TXNID", "HL_TABLE", "HL_LOCK_STATE"),
        "TXN_TO_WRITE_ID": None,
        "NEXT_WRITE_ID": None,
        "NOTIFICATION_SEQUENCE": None,
    }
    with svc.db.read() as conn:
        for name, cols in tables.items():
            table = schema.metadata.tables[name]
            columns = [table.c[c] for c in cols] if cols else list(table.c)
            found[name] = sorted(tuple(r) for r in conn.execute(select(*columns)).all())
        nl = schema.NOTIFICATION_LOG
        events = []
        for event_id, kind, cat, db, tbl, body, fmt in conn.execute(
            select(
                nl.c.EVENT_ID,
                nl.c.EVENT_TYPE,
                nl.c.CAT_NAME,
                nl.c.DB_NAME,
                nl.c.TBL_NAME,
                nl.c.MESSAGE,
                nl.c.MESSAGE_FORMAT,
            ).order_by(nl.c.EVENT_ID)
        ):
            decoded = messages.decode(body, fmt)
            # The very text the Python encoder writes (Jackson's compact form).
            assert messages.encode(decoded, fmt) == body
            decoded.pop("timestamp")
            events.append((event_id, kind, cat, db, tbl, decoded))
        found["events"] = events
    return found


@pytest.mark.parametrize("level", [True, False], ids=["min-history-level", "no-level"])
def test_functions_leave_the_rows_and_events_the_statements_leave(
    pg_server: Any, tmp_path: Path, made: list[Database], level: bool
) -> None:
    urls = [pg_server.new_database(), pg_server.new_database()]
    try:
        old = _service(urls[0], tmp_path, made, functions=False, level=level)
        new = _service(urls[1], tmp_path, made, functions=True, level=level)
        assert _calls(new) == _calls(old)
        before, after = _rows(old), _rows(new)
        assert after == before
        kinds = [e[1] for e in after["events"]]
        assert kinds.count("COMMIT_TXN") == 7 and kinds.count("ALLOC_WRITE_ID_EVENT") == 9
        assert kinds.count("ABORT_TXN") == 4
        with new.db.read() as conn:
            formats = set(conn.execute(select(schema.NOTIFICATION_LOG.c.MESSAGE_FORMAT)).scalars())
        assert messages.JSON_FORMAT in formats  # the functions' rows
    finally:
        for db in made:
            db.dispose()
        for url in urls:
            pg_server.drop_database(url.rsplit("/", 1)[1])


def test_installing_is_idempotent_and_concurrent_starts_wait_for_each_other(
    pg_url: str, tmp_path: Path, made: list[Database]
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    dbs = [Database(pg_url) for _ in range(3)]
    made.extend(dbs)
    ensure_ready(dbs[0], (tmp_path / "wh").as_uri(), True)
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(install.install, dbs))
    assert all(r.usable for r in results)
    assert sorted(r.reason for r in results) == ["already installed"] * 2 + ["installed"]
    assert install.install(dbs[0]) == install.Installed(True, "already installed")
    with dbs[0].read() as conn:
        rows = conn.execute(text(f"SELECT version, digest FROM {install.VERSIONS_TABLE}")).all()
        assert rows == [(plpgsql.VERSION, install.DIGEST)]
        # The functions live in their own schema, none among Hive's tables.
        found = conn.execute(
            text(
                "SELECT routine_schema || '.' || routine_name FROM information_schema.routines "
                "WHERE routine_schema NOT IN ('pg_catalog', 'information_schema')"
            )
        ).scalars()
        wanted = {sig.split("(", 1)[0] for sig in plpgsql.FUNCTION_SIGNATURES}
        assert set(found) == wanted and len(wanted) == 4
    # A changed text (another build of this version) is replaced under the same version.
    with dbs[0].write_engine.connect() as conn, conn.begin():
        conn.execute(text(f"UPDATE {install.VERSIONS_TABLE} SET digest = 'old'"))
    assert install.install(dbs[0]) == install.Installed(True, "installed")


def test_a_role_without_create_falls_back_to_the_statements_and_says_why(
    pg_server: Any,
    pg_url: str,
    tmp_path: Path,
    made: list[Database],
    caplog: pytest.LogCaptureFixture,
) -> None:
    import secrets

    owner = Database(pg_url)
    made.append(owner)
    ensure_ready(owner, (tmp_path / "wh").as_uri(), True)
    role = f"limited_{secrets.token_hex(4)}"
    dbname = pg_url.rsplit("/", 1)[1]
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE ROLE "{role}" LOGIN')
        conn.exec_driver_sql(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}"')
        conn.exec_driver_sql(f'GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO "{role}"')
        conn.exec_driver_sql(f'REVOKE CREATE ON DATABASE "{dbname}" FROM PUBLIC')
    try:
        url = pg_url.replace("://", f"://{role}@", 1).replace(
            pg_url.split("://", 1)[1].split("@", 1)[0] + "@", "", 1
        )
        limited = Database(url)
        made.append(limited)
        with caplog.at_level(logging.WARNING, logger="hms_cache_proxy.store.txn.install"):
            refused = install.install(limited)
        assert not refused.usable
        assert "permission denied" in refused.reason
        assert "transaction functions not installed" in caplog.text
        # The calls then take today's statements, and they work.
        config = TxnConfig(server_functions=refused.usable)
        svc = sql_store(limited, (tmp_path / "wh").as_uri(), config).txn
        ids = svc.open_txns(2, USER, HOST)
        svc.commit_txn(ids[0])
        with limited.read() as conn:
            fmts = set(conn.execute(select(schema.NOTIFICATION_LOG.c.MESSAGE_FORMAT)).scalars())
        assert fmts == {messages.GZIP_FORMAT}
        # Functions an administrator installed serve the role without CREATE.
        assert install.install(owner).usable
        with admin.connect() as conn:
            conn.exec_driver_sql(f'GRANT USAGE ON SCHEMA {plpgsql.SCHEMA} TO "{role}"')
            conn.exec_driver_sql(f'GRANT SELECT ON {install.VERSIONS_TABLE} TO "{role}"')
        assert install.install(limited) == install.Installed(True, "already installed")
    finally:
        for db in made:
            db.dispose()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP OWNED BY "{role}"')
        admin.dispose()
        pg_server.drop_database(dbname)
        pg_server.execute(f'DROP ROLE "{role}"')


def _terminate_others(url: str) -> int:
    """pg_terminate_backend on every other session of ``url``'s database; how many."""
    conn = psycopg2.connect(url.replace("postgresql+psycopg2://", "postgresql://"))
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            (n,) = cur.fetchone()
        return int(n)
    finally:
        conn.close()


def test_a_function_call_on_a_connection_the_server_ended_is_counted_and_retried(
    pg_url: str, tmp_path: Path, made: list[Database]
) -> None:
    """The calls go through a bare DB-API cursor (Database.autocommit_cursor): a pooled
    connection the server ended must still be discarded and the call retried on a new one,
    and the error counted in driver_errors as SQLAlchemy's own statements' errors are."""
    svc = _service(pg_url, tmp_path, made, functions=True, level=True)
    assert svc.txns.functions.usable()
    seen: list[str] = []
    svc.db.driver_errors.listeners.append(seen.append)
    (txn,) = svc.open_txns(1, USER, HOST)  # the pool now holds a connection
    assert _terminate_others(pg_url) >= 1
    svc.commit_txn(txn)  # straight to the function: its call meets the ended session first
    assert "OperationalError" in seen
    (second,) = svc.open_txns(1, USER, HOST)
    assert second > txn
    with svc.db.read() as conn:
        state = conn.execute(
            text('SELECT "TXN_STATE" FROM "TXNS" WHERE "TXN_ID" = :t'), {"t": txn}
        ).scalar()
    assert state == "c"


def test_a_function_call_error_is_sqlalchemys_dbapi_error_and_leaves_the_connection_usable(
    pg_url: str, tmp_path: Path, made: list[Database]
) -> None:
    """An error the function raises (here: the function is gone) reaches the caller as
    SQLAlchemy's DBAPIError (the handler's mapping expects it), counted, and not as a
    broken connection: the next call on the pool works."""
    svc = _service(pg_url, tmp_path, made, functions=True, level=False)
    seen: list[str] = []
    svc.db.driver_errors.listeners.append(seen.append)
    (txn,) = svc.open_txns(1, USER, HOST)
    with svc.db.single_statement(write=True) as conn:
        conn.exec_driver_sql(f"ALTER FUNCTION {plpgsql.COMMIT_FN} RENAME TO gone_commit")
    with pytest.raises(DBAPIError) as caught:
        svc.commit_txn(txn)
    assert not caught.value.connection_invalidated
    assert seen and seen[-1] == "ProgrammingError"
    (again,) = svc.open_txns(1, USER, HOST)
    assert again > txn


def test_function_calls_are_prepared_once_per_pooled_session(
    pg_url: str, tmp_path: Path, made: list[Database]
) -> None:
    """The calls' top-level SELECT is PREPAREd on the pooled session the first time it runs
    there and sent as EXECUTE from then on (store/db/prepared.py)."""
    svc = _service(pg_url, tmp_path, made, functions=True, level=False)
    for _ in range(3):
        (txn,) = svc.open_txns(1, USER, HOST)
        svc.commit_txn(txn)
    with svc.db.autocommit_cursor() as pooled:
        names = set(pooled.info.get("hms_prepared", ()))
        pooled.cursor.execute("SELECT name FROM pg_prepared_statements")
        on_server = {row[0] for row in pooled.cursor.fetchall()}
    wanted = {f"hms_open_txns_fn_v{plpgsql.VERSION}", f"hms_commit_txn_fn_v{plpgsql.VERSION}"}
    assert wanted <= names
    assert wanted <= on_server


@pytest.mark.parametrize("functions", [True, False], ids=["functions", "statements"])
def test_an_open_and_an_allocation_are_not_announced_the_commit_is(
    pg_url: str, tmp_path: Path, made: list[Database], functions: bool
) -> None:
    """OPEN_TXN and ALLOC_WRITE_ID_EVENT are written without a NOTIFY (log.UNANNOUNCED_TYPES):
    a listener woken by the commit hears the commit's event id alone. Notifications reach a
    listener in commit order, so an announced open or allocation would be heard before it."""
    import select as io_select

    from sqlalchemy.engine import make_url

    from hms_cache_proxy.store.events.log import NOTIFY_CHANNEL

    svc = _service(pg_url, tmp_path, made, functions=functions, level=False)
    url = make_url(pg_url)
    conn = psycopg2.connect(host=url.host, port=url.port, user=url.username, dbname=url.database)
    conn.autocommit = True
    try:
        conn.cursor().execute(f"LISTEN {NOTIFY_CHANNEL}")
        (txn,) = svc.open_txns(1, USER, HOST)
        svc.allocate_table_write_ids("default", "t1", [txn])
        svc.commit_txn(txn)
        with svc.db.read() as read:
            kinds = read.execute(
                select(schema.NOTIFICATION_LOG.c.EVENT_TYPE).order_by(
                    schema.NOTIFICATION_LOG.c.EVENT_ID
                )
            ).scalars()
            assert list(kinds)[-3:] == ["OPEN_TXN", "ALLOC_WRITE_ID_EVENT", "COMMIT_TXN"]
            last = read.execute(select(schema.NOTIFICATION_SEQUENCE.c.NEXT_EVENT_ID)).scalar()
        payloads: list[str] = []
        while str(last - 1) not in payloads:  # the commit's, at most a few seconds away
            assert io_select.select([conn], [], [], 10)[0], "no notification within 10 s"
            conn.poll()
            payloads += [n.payload for n in conn.notifies]
            conn.notifies.clear()
        assert payloads == [str(last - 1)]
    finally:
        conn.close()
