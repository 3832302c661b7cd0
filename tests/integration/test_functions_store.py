"""Permanent functions in the SQL store (SQLite and PostgreSQL) and the handler's checks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import select

from hms_cache_proxy.config import Settings
from hms_cache_proxy.handler.functions import FunctionHandlers
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.sql.bootstrap import init_db
from hms_cache_proxy.store.sql.sql_store import SqlStore
from tests.support import stores

WAREHOUSE = "file:/tmp/hms-warehouse"
CAT = "hive"


@contextmanager
def raises(exc: type, message: str) -> Iterator[None]:
    """The exception, with exactly this message (as a client would see it)."""
    with pytest.raises(exc) as info:
        yield
    assert info.value.message == message


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest) -> Iterator[SqlStore]:
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    db = Database(url)
    init_db(db, WAREHOUSE)
    sql_store = stores.sql_store(db, WAREHOUSE)
    for name in ("fdb", "other"):
        sql_store.create_database(hms.Database(name=name, parameters={}, catalogName=CAT))
    yield sql_store
    db.dispose()


@pytest.fixture
def handler(store: SqlStore) -> FunctionHandlers:
    settings = Settings(database_url="sqlite:///unused.db", warehouse_dir="/tmp/hms-warehouse")
    return FunctionHandlers(store, settings)


def function(name: str = "myudf", db: str = "fdb", **kw: object) -> hms.Function:
    values: dict[str, object] = {
        "functionName": name,
        "dbName": db,
        "className": "com.example.MyUdf",
        "ownerName": "alice",
        "ownerType": hms.PrincipalType.USER,
        "createTime": 1_700_000_000,
        "functionType": hms.FunctionType.JAVA,
        "resourceUris": [
            hms.ResourceUri(resourceType=hms.ResourceType.JAR, uri="hdfs:///lib/udf.jar"),
            hms.ResourceUri(resourceType=hms.ResourceType.FILE, uri="hdfs:///lib/data.txt"),
        ],
        "catName": CAT,
    }
    values.update(kw)
    return hms.Function(**values)


# -- the store -------------------------------------------------------------------------------------


def test_create_and_get_round_trip(store: SqlStore) -> None:
    before = store.current_notification_event_id()
    stored = store.create_function(function())
    assert store.get_function(CAT, "fdb", "myudf") == stored == function()
    (ev,) = store.next_notifications(before, None)
    assert (ev.eventType, ev.catName, ev.dbName, ev.tableName) == (
        messages.CREATE_FUNCTION,
        CAT,
        "fdb",
        None,
    )
    assert messages.function(messages.decode(ev.message, ev.messageFormat)) == stored
    with store.db.read() as conn:
        row = conn.execute(select(schema.FUNCS)).one()
        uris = conn.execute(select(schema.FUNC_RU).order_by(schema.FUNC_RU.c.INTEGER_IDX)).all()
    assert (row.FUNC_NAME, row.OWNER_TYPE, row.FUNC_TYPE, row.CREATE_TIME) == (
        "myudf",
        "USER",
        1,
        1_700_000_000,
    )
    assert [(u.RESOURCE_TYPE, u.RESOURCE_URI, u.INTEGER_IDX) for u in uris] == [
        (1, "hdfs:///lib/udf.jar", 0),
        (2, "hdfs:///lib/data.txt", 1),
    ]


def test_function_without_resources_reads_back_an_empty_list(store: SqlStore) -> None:
    store.create_function(function(resourceUris=None))
    assert store.get_function(CAT, "fdb", "myudf").resourceUris == []


def test_create_errors(store: SqlStore) -> None:
    store.create_function(function())
    with raises(hms.AlreadyExistsException, "Function myudf already exists"):
        store.create_function(function())
    with raises(hms.NoSuchObjectException, "The database nodb does not exist"):
        store.create_function(function(db="nodb"))
    # The same name in another database is another function.
    store.create_function(function(db="other"))


def test_get_missing_function(store: SqlStore) -> None:
    with pytest.raises(hms.NoSuchObjectException, match="Function fdb.nope does not exist"):
        store.get_function(CAT, "fdb", "nope")


def test_get_functions_by_pattern_and_all_functions(store: SqlStore) -> None:
    for name in ("zeta", "alpha", "alps", "beta"):
        store.create_function(function(name))
    store.create_function(function("gamma", db="other", resourceUris=[]))
    assert store.get_functions(CAT, "fdb", None) == ["alpha", "alps", "beta", "zeta"]
    assert store.get_functions(CAT, "fdb", "AL*|zeta") == ["alpha", "alps", "zeta"]
    assert store.get_functions(CAT, "fdb", "x*") == []
    assert store.get_functions(CAT, "nodb", "*") == []
    every = store.get_all_functions()
    assert [(f.dbName, f.functionName) for f in every] == [
        ("fdb", "alpha"),
        ("fdb", "alps"),
        ("fdb", "beta"),
        ("fdb", "zeta"),
        ("other", "gamma"),
    ]
    assert every[0].resourceUris == function().resourceUris
    assert every[-1].resourceUris == []
    assert all(f.catName == CAT for f in every)


def test_drop_function(store: SqlStore) -> None:
    store.create_function(function())
    before = store.current_notification_event_id()
    dropped = store.drop_function(CAT, "fdb", "myudf")
    assert dropped == function()
    (ev,) = store.next_notifications(before, None)
    assert ev.eventType == messages.DROP_FUNCTION
    body = messages.decode(ev.message, ev.messageFormat)
    assert (body["db"], body["functionName"]) == ("fdb", "myudf")
    with store.db.read() as conn:
        assert conn.execute(select(schema.FUNC_RU)).all() == []
    with raises(hms.NoSuchObjectException, "Function myudf does not exist"):
        store.drop_function(CAT, "fdb", "myudf")


def test_alter_function_changes_what_hive_changes(store: SqlStore) -> None:
    store.create_function(function())
    before = store.current_notification_event_id()
    new = function(
        "renamed",
        db="other",
        className="com.example.Other",
        ownerName="bob",
        ownerType=hms.PrincipalType.ROLE,
        createTime=5,
        resourceUris=[],
    )
    after = store.alter_function(CAT, "fdb", "myudf", new)
    assert after == function(
        "renamed",
        db="other",
        className="com.example.Other",
        ownerName="bob",
        ownerType=hms.PrincipalType.ROLE,
    )  # create time and resources stay
    assert store.get_functions(CAT, "fdb") == []
    assert store.get_function(CAT, "other", "renamed") == after
    assert store.current_notification_event_id() == before  # Hive writes no event
    with raises(hms.MetaException, "function nope doesn't exist"):
        store.alter_function(CAT, "fdb", "nope", function())
    with pytest.raises(hms.InvalidObjectException, match="between catalogs"):
        store.alter_function(CAT, "other", "renamed", function(catName="elsewhere"))
    with pytest.raises(hms.InvalidObjectException, match="Database nodb doesn't exist."):
        store.alter_function(CAT, "other", "renamed", function(db="nodb"))
    store.create_function(function("taken", db="other"))
    with pytest.raises(hms.MetaException, match="already exists"):
        store.alter_function(CAT, "other", "renamed", function("taken", db="other"))


def test_drop_database_cascade_drops_its_functions(store: SqlStore) -> None:
    store.create_function(function())
    with pytest.raises(hms.InvalidOperationException, match="functions exist"):
        store.drop_database(CAT, "fdb", cascade=False)
    store.drop_database(CAT, "fdb", cascade=True)
    assert store.get_all_functions() == []


# -- the handler -----------------------------------------------------------------------------------


def test_handler_normalises_and_stamps_create_time(
    handler: FunctionHandlers, store: SqlStore
) -> None:
    handler.create_function(function("MyUDF", db="FDB", createTime=1, catName=None))
    got = handler.get_function("fdb", "myudf")
    assert (got.functionName, got.dbName, got.catName) == ("myudf", "fdb", CAT)
    assert got.createTime > 1_700_000_000
    assert handler.get_function("FDB", "MYUDF") == got
    assert handler.get_functions("fdb", "my*") == ["myudf"]
    assert handler.get_functions("fdb", " MYUD. ") == ["myudf"]  # '.' is one character
    assert handler.get_functions("fdb", "") == []
    assert handler.get_functions("nodb", None) == []
    assert handler.get_all_functions() == hms.GetAllFunctionsResponse(functions=[got])
    assert handler.get_function("@hive#fdb", "myudf") == got


@pytest.mark.parametrize(
    ("changes", "exc", "message"),
    [
        ({"functionName": None}, hms.MetaException, "Function name cannot be null."),
        ({"dbName": None}, hms.MetaException, "Database name in Function cannot be null."),
        (
            {"functionName": "bad-name"},
            hms.InvalidObjectException,
            "bad-name is not a valid object name",
        ),
        ({"className": None}, hms.InvalidObjectException, "Function class name cannot be null"),
        ({"ownerType": None}, hms.MetaException, "Function owner type cannot be null."),
        ({"functionType": None}, hms.MetaException, "Function type cannot be null."),
    ],
)
def test_handler_validates_like_hive(
    handler: FunctionHandlers, changes: dict[str, object], exc: type, message: str
) -> None:
    with pytest.raises(exc) as info:
        handler.create_function(function(**changes))
    assert info.value.message == message


def test_handler_errors_echo_the_names_as_sent(handler: FunctionHandlers) -> None:
    with raises(hms.MetaException, "Function cannot be null."):
        handler.create_function(None)  # type: ignore[arg-type]
    with raises(hms.NoSuchObjectException, "The database nodb does not exist"):
        handler.create_function(function(db="nodb"))
    with raises(hms.NoSuchObjectException, "Function FDB.Nope does not exist"):
        handler.get_function("FDB", "Nope")
    with raises(hms.NoSuchObjectException, "Function Nope does not exist"):
        handler.drop_function("fdb", "Nope")
    with pytest.raises(hms.MetaException, match="Database and function name cannot be null."):
        handler.get_function(None, "x")  # type: ignore[arg-type]
    with pytest.raises(hms.MetaException, match="Function name cannot be null."):
        handler.drop_function("fdb", None)  # type: ignore[arg-type]


def test_handler_alter_maps_invalid_object_to_meta(handler: FunctionHandlers) -> None:
    handler.create_function(function())
    with raises(hms.MetaException, "Function class name cannot be null"):
        handler.alter_function("fdb", "myudf", function(className=None))
    with raises(hms.MetaException, "Database nodb doesn't exist."):
        handler.alter_function("fdb", "myudf", function(db="nodb"))
    handler.alter_function("fdb", "MyUdf", function("NewName"))
    assert handler.get_functions("fdb", None) == ["newname"]
    handler.drop_function("FDB", "NEWNAME")
    assert handler.get_functions("fdb", "*") == []


# -- over the wire (Apache Thrift's client against the running service) ----------------------------


def test_function_calls_over_the_wire(client: object, T: object) -> None:
    c, t = client, T
    c.create_database(t.Database(name="wfdb", description="", parameters={}))  # type: ignore[attr-defined]
    fn = t.Function(  # type: ignore[attr-defined]
        functionName="Upper2",
        dbName="WFDB",
        className="com.example.Upper",
        ownerName="alice",
        ownerType=t.PrincipalType.USER,  # type: ignore[attr-defined]
        createTime=0,
        functionType=t.FunctionType.JAVA,  # type: ignore[attr-defined]
        resourceUris=[t.ResourceUri(t.ResourceType.JAR, "file:///tmp/u.jar")],  # type: ignore[attr-defined]
    )
    c.create_function(fn)  # type: ignore[attr-defined]
    with pytest.raises(t.AlreadyExistsException):  # type: ignore[attr-defined]
        c.create_function(fn)  # type: ignore[attr-defined]
    got = c.get_function("wfdb", "UPPER2")  # type: ignore[attr-defined]
    assert (got.functionName, got.dbName, got.catName, got.className) == (
        "upper2",
        "wfdb",
        "hive",
        "com.example.Upper",
    )
    assert got.createTime > 0
    assert [r.uri for r in got.resourceUris] == ["file:///tmp/u.jar"]
    assert c.get_functions("wfdb", "up*") == ["upper2"]  # type: ignore[attr-defined]
    assert [f.functionName for f in c.get_all_functions().functions] == ["upper2"]  # type: ignore[attr-defined]
    with pytest.raises(t.NoSuchObjectException, match="Function wfdb.nope does not exist"):  # type: ignore[attr-defined]
        c.get_function("wfdb", "nope")  # type: ignore[attr-defined]
    with pytest.raises(t.InvalidObjectException, match="is not a valid object name"):  # type: ignore[attr-defined]
        fn.functionName = "bad name"
        c.create_function(fn)  # type: ignore[attr-defined]
    fn.functionName = "lower2"
    c.alter_function("wfdb", "upper2", fn)  # type: ignore[attr-defined]
    assert c.get_functions("wfdb", None) == ["lower2"]  # type: ignore[attr-defined]
    with pytest.raises(t.MetaException, match="function nope doesn't exist"):  # type: ignore[attr-defined]
        c.alter_function("wfdb", "nope", fn)  # type: ignore[attr-defined]
    c.drop_function("wfdb", "lower2")  # type: ignore[attr-defined]
    with pytest.raises(t.NoSuchObjectException, match="Function lower2 does not exist"):  # type: ignore[attr-defined]
        c.drop_function("wfdb", "lower2")  # type: ignore[attr-defined]
