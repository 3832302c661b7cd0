"""Every row hms-cache-proxy writes is one a stock Java metastore reads back correctly.

hms-cache-proxy promises to share its database with stock Java metastores. The judge here is
the real thing: Hive Metastore 2.3.10 from PySpark's jars, started on the very PostgreSQL
database our service writes (a Hive 4.0 schema made by our init-db, which the stock server
opens without changing it). Each object is written through our service with an Apache Thrift
client, then read through both servers, and the two answers must agree field for field, except
for fields Hive 2.3's IDL does not have (see HIVE_2_3_LAST_FIELD).

The last test interleaves writes from both servers and checks that both read everything back
and that object ids never collide: both take ids from SEQUENCE_TABLE under its row locks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from thrift.protocol.TProtocol import TProtocolBase
from thrift.Thrift import TApplicationException, TType

from hms_cache_proxy.bench.stock_hms import StockMetastore
from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.server import running_service

pytestmark = [pytest.mark.postgres, pytest.mark.stock]

DB = "interop"
TABLE = "events"
VIEW = "events_view"
FUNCTION = "interop_upper"
DAYS = [f"2024-01-0{d}" for d in range(1, 6)]
HOURS = list(range(10))  # 5 days x 10 hours = 50 partitions
STATS_COLUMNS = ["id", "name", "amount", "price", "flag", "day", "payload"]
STATS_PARTITIONS = ["ds=2024-01-01/hr=0", "ds=2024-01-03/hr=5", "ds=2024-01-05/hr=9"]

# The last field id each struct has in Hive 2.3.10's hive_metastore.thrift. A Hive 2.3 server
# cannot send the later fields (its generated classes do not have them), so the Apache client
# shows their IDL defaults there and they are left out of the comparison:
# - Database 8-13: catalogName (Hive 3 catalogs), createTime, managedLocationUri, type,
#   connector_name, remote_dbname (Hive 4).
# - Table 16-28: creationMetadata, catName, ownerType (Hive 3 added table owner types), writeId,
#   isStatsCompliant, colStats, accessType, required*Capabilities, id, fileMetadata, dictionary,
#   txnId (Hive 3/4 ACID, capabilities and ids).
# - Partition 9-13: catName, writeId, isStatsCompliant, colStats, fileMetadata.
# - SerDeInfo 4-7: description, serializerClass, deserializerClass, serdeType (Hive 3 schema
#   registry).
# - ColumnStatisticsDesc 6: catName. ColumnStatistics 3-4: isStatsCompliant, engine (Hive 4).
# - Long/Double/Decimal/Date stats 6: histogram (Hive 4).
# - TableStatsResult / PartitionsStatsResult 2: isStatsCompliant.
# - Function 9: catName.
# - SQLPrimaryKey 9, SQLForeignKey 15: catName.
# - PartitionSpec 6-8: catName, writeId, isStatsCompliant.
# Every other struct (StorageDescriptor, FieldSchema, Order, SkewedInfo, ...) is compared whole.
HIVE_2_3_LAST_FIELD = {
    "Database": 7,
    "Table": 15,
    "Partition": 8,
    "SerDeInfo": 3,
    "ColumnStatisticsDesc": 5,
    "ColumnStatistics": 2,
    "LongColumnStatsData": 5,
    "DoubleColumnStatsData": 5,
    "DecimalColumnStatsData": 5,
    "DateColumnStatsData": 5,
    "TableStatsResult": 1,
    "PartitionsStatsResult": 1,
    "Function": 8,
    "SQLPrimaryKey": 8,
    "SQLForeignKey": 14,
    "PartitionSpec": 5,
}

# The id-bearing tables and the DataNucleus sequence rows that hand out their ids.
_MODEL = "org.apache.hadoop.hive.metastore.model."
ID_TABLES = {
    "DBS": ("DB_ID", _MODEL + "MDatabase"),
    "TBLS": ("TBL_ID", _MODEL + "MTable"),
    "SDS": ("SD_ID", _MODEL + "MStorageDescriptor"),
    "SERDES": ("SERDE_ID", _MODEL + "MSerDeInfo"),
    "CDS": ("CD_ID", _MODEL + "MColumnDescriptor"),
    "PARTITIONS": ("PART_ID", _MODEL + "MPartition"),
    "SKEWED_STRING_LIST": ("STRING_LIST_ID", _MODEL + "MStringList"),
    "FUNCS": ("FUNC_ID", _MODEL + "MFunction"),
    "TAB_COL_STATS": ("CS_ID", _MODEL + "MTableColumnStatistics"),
    "PART_COL_STATS": ("CS_ID", _MODEL + "MPartitionColumnStatistics"),
}


# -- comparing Thrift objects --------------------------------------------------------------------


def _is_struct(obj: Any) -> bool:
    return hasattr(type(obj), "thrift_spec") and not isinstance(obj, type)


def differences(stock: Any, ours: Any, path: str = "") -> list[str]:
    """Where ``stock`` and ``ours`` differ, as readable paths; fields Hive 2.3 lacks skipped."""
    if _is_struct(stock) and _is_struct(ours):
        if type(stock).__name__ != type(ours).__name__:
            return [f"{path}: {type(stock).__name__} from stock, {type(ours).__name__} from ours"]
        last = HIVE_2_3_LAST_FIELD.get(type(stock).__name__)
        out: list[str] = []
        for spec in type(stock).thrift_spec:
            if spec is None or (last is not None and spec[0] > last):
                continue
            name = spec[2]
            out += differences(getattr(stock, name), getattr(ours, name), f"{path}.{name}")
        return out
    if isinstance(stock, (list, tuple)) and isinstance(ours, (list, tuple)):
        if len(stock) != len(ours):
            return [f"{path}: {len(stock)} items from stock, {len(ours)} from ours"]
        out = []
        for i, (a, b) in enumerate(zip(stock, ours, strict=True)):
            out += differences(a, b, f"{path}[{i}]")
        return out
    if isinstance(stock, dict) and isinstance(ours, dict):
        out = [f"{path}: key {k!r} only from stock" for k in stock.keys() - ours.keys()]
        out += [f"{path}: key {k!r} only from ours" for k in ours.keys() - stock.keys()]
        for k in stock.keys() & ours.keys():
            out += differences(stock[k], ours[k], f"{path}[{k!r}]")
        return out
    if stock != ours:
        return [f"{path}: stock {stock!r} != ours {ours!r}"]
    return []


def assert_same(stock: Any, ours: Any, what: str) -> None:
    diffs = differences(stock, ours)
    assert not diffs, f"{what}: the stock server reads it differently:\n" + "\n".join(diffs)


def _read_skewed_info(self: Any, iprot: TProtocolBase) -> None:
    """SkewedInfo.read with tuple keys for skewedColValueLocationMaps.

    Apache's generated Python puts the map's list<string> keys into a dict as lists, which
    Python cannot hash, so no Python client reads a table with skew locations. This reader is
    the generated one with ``tuple(key)``; it is patched in for this module only.
    """

    def strings() -> list[str]:
        _, size = iprot.readListBegin()
        values = [iprot.readString() for _ in range(size)]
        iprot.readListEnd()
        return values

    iprot.readStructBegin()
    while True:
        _, ftype, fid = iprot.readFieldBegin()
        if ftype == TType.STOP:
            break
        if fid == 1 and ftype == TType.LIST:
            self.skewedColNames = strings()
        elif fid == 2 and ftype == TType.LIST:
            _, size = iprot.readListBegin()
            self.skewedColValues = [strings() for _ in range(size)]
            iprot.readListEnd()
        elif fid == 3 and ftype == TType.MAP:
            _, _, size = iprot.readMapBegin()
            maps: dict[tuple[str, ...], str] = {}
            for _ in range(size):
                key = tuple(strings())
                maps[key] = iprot.readString()
            iprot.readMapEnd()
            self.skewedColValueLocationMaps = maps
        else:
            iprot.skip(ftype)
        iprot.readFieldEnd()
    iprot.readStructEnd()


def _unimplemented(exc: TApplicationException) -> bool:
    return exc.type == TApplicationException.UNKNOWN_METHOD


# -- the objects ---------------------------------------------------------------------------------


def _storage(
    T: Any,
    location: str | None,
    *,
    cols: list[Any],
    serde_params: dict[str, str] | None = None,
    skewed: bool = False,
    skew_locations: dict[tuple[str, ...], str] | None = None,
) -> Any:
    skew = T.SkewedInfo(skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={})
    if skewed:
        skew = T.SkewedInfo(
            skewedColNames=["name", "flag"],
            skewedColValues=[["alpha", "true"], ["beta", "false"], ["", "true"]],
            skewedColValueLocationMaps=dict(skew_locations or {}),
        )
    return T.StorageDescriptor(
        cols=cols,
        location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        compressed=False,
        numBuckets=4,
        serdeInfo=T.SerDeInfo(
            name="events_serde",
            serializationLib="org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
            parameters=serde_params or {"serialization.format": "1", "field.delim": ","},
        ),
        bucketCols=["id"],
        sortCols=[T.Order(col="id", order=1), T.Order(col="name", order=0)],
        parameters={"sd.key": "sd value", "empty": ""},
        skewedInfo=skew,
        storedAsSubDirectories=skewed,
    )


def _columns(T: Any, extra: int = 0) -> list[Any]:
    cols = [
        T.FieldSchema(name="id", type="bigint", comment="row id"),
        T.FieldSchema(name="name", type="string", comment="the name, with ünïcödé"),
        T.FieldSchema(name="amount", type="double", comment=None),
        T.FieldSchema(name="price", type="decimal(10,2)", comment="in cents"),
        T.FieldSchema(name="flag", type="boolean", comment=""),
        T.FieldSchema(name="day", type="date", comment="a date"),
        T.FieldSchema(name="payload", type="binary", comment="bytes"),
        T.FieldSchema(
            name="attrs", type="map<string,array<struct<k:string,v:int>>>", comment="nested"
        ),
    ]
    cols += [
        T.FieldSchema(name=f"extra{i}", type="int", comment=f"added {i}") for i in range(extra)
    ]
    return cols


def _simple_table(T: Any, db: str, name: str, location: str | None = None) -> Any:
    """A plain partitioned text table (for the interleaved writes)."""
    return T.Table(
        tableName=name,
        dbName=db,
        owner="bob",
        retention=0,
        sd=T.StorageDescriptor(
            cols=[
                T.FieldSchema(name="a", type="string", comment="first"),
                T.FieldSchema(name="b", type="int", comment=None),
            ],
            location=location,
            inputFormat="org.apache.hadoop.mapred.TextInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            compressed=False,
            numBuckets=-1,
            serdeInfo=T.SerDeInfo(
                name=None,
                serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                parameters={"serialization.format": "1"},
            ),
            bucketCols=[],
            sortCols=[],
            parameters={},
            skewedInfo=T.SkewedInfo(
                skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={}
            ),
            storedAsSubDirectories=False,
        ),
        partitionKeys=[T.FieldSchema(name="dt", type="string", comment="day")],
        parameters={"creator": name},
        tableType="MANAGED_TABLE",
    )


def _partitions(T: Any, table: Any, days: list[str], origin: str) -> list[Any]:
    out = []
    for i, dt in enumerate(days):
        sd = T.StorageDescriptor(**table.sd.__dict__)
        sd.location = None  # the server puts it under the table
        out.append(
            T.Partition(
                values=[dt],
                dbName=table.dbName,
                tableName=table.tableName,
                sd=sd,
                parameters={"origin": origin, "i": str(i)},
            )
        )
    return out


def _stats(T: Any, desc: Any, seed: int) -> Any:
    data = T.ColumnStatisticsData

    def obj(name: str, col_type: str, stats: Any) -> Any:
        return T.ColumnStatisticsObj(colName=name, colType=col_type, statsData=stats)

    return T.ColumnStatistics(
        statsDesc=desc,
        statsObj=[
            obj(
                "id",
                "bigint",
                data(
                    longStats=T.LongColumnStatsData(
                        lowValue=-seed,
                        highValue=10**12 + seed,
                        numNulls=seed,
                        numDVs=1000,
                        bitVectors=b"HL\x00\x01\x02" + bytes([seed % 256]),
                    )
                ),
            ),
            obj(
                "name",
                "string",
                data(
                    stringStats=T.StringColumnStatsData(
                        maxColLen=40 + seed, avgColLen=12.25, numNulls=3, numDVs=77
                    )
                ),
            ),
            obj(
                "amount",
                "double",
                data(
                    doubleStats=T.DoubleColumnStatsData(
                        lowValue=-1.5, highValue=1e300, numNulls=0, numDVs=12
                    )
                ),
            ),
            obj(
                "price",
                "decimal(10,2)",
                data(
                    decimalStats=T.DecimalColumnStatsData(
                        lowValue=T.Decimal(scale=2, unscaled=b"\x01\x02"),
                        highValue=T.Decimal(scale=2, unscaled=b"\x7f\xff\xff"),
                        numNulls=1,
                        numDVs=5,
                    )
                ),
            ),
            obj(
                "flag",
                "boolean",
                data(booleanStats=T.BooleanColumnStatsData(numTrues=7, numFalses=9, numNulls=1)),
            ),
            obj(
                "day",
                "date",
                data(
                    dateStats=T.DateColumnStatsData(
                        lowValue=T.Date(daysSinceEpoch=19000),
                        highValue=T.Date(daysSinceEpoch=19800 + seed),
                        numNulls=2,
                        numDVs=30,
                    )
                ),
            ),
            obj(
                "payload",
                "binary",
                data(
                    binaryStats=T.BinaryColumnStatsData(maxColLen=1024, avgColLen=99.5, numNulls=4)
                ),
            ),
        ],
        engine="hive",
    )


@dataclass
class World:
    """One database written by our service, served by it and by a stock metastore."""

    T: Any
    url: str
    warehouse: Path
    ours: Any
    stock: Any
    stock_server: StockMetastore
    engine: Any
    schema_before: list[tuple[Any, ...]]
    service: Any = None
    unsupported: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def both(self, method: str, *args: Any) -> tuple[Any, Any]:
        """(stock's answer, our answer) to the same call."""
        return getattr(self.stock, method)(*args), getattr(self.ours, method)(*args)

    def require(self, part: str) -> None:
        if part in self.unsupported:
            pytest.skip(self.unsupported[part])


def _schema_snapshot(engine: Any) -> list[tuple[Any, ...]]:
    """Every column of every table (name, type, nullability, default): to prove the stock
    server changed nothing in the schema."""
    with engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT table_name, column_name, data_type, is_nullable, column_default "
                    "FROM information_schema.columns WHERE table_schema = 'public' "
                    "ORDER BY table_name, column_name"
                )
            )
        ]


def _populate(w: World) -> None:
    """Everything through our service: database, table, 50 partitions, view, stats, function."""
    T, c = w.T, w.ours
    wh = w.warehouse.as_uri()
    c.create_database(
        T.Database(
            name=DB,
            description="written by hms-cache-proxy",
            locationUri=f"{wh}/{DB}.db",
            parameters={"team": "data", "empty": "", "ünï": "cödé"},
            ownerName="alice",
            ownerType=T.PrincipalType.USER,
        )
    )
    table = T.Table(
        tableName=TABLE,
        dbName=DB,
        owner="alice",
        retention=7,
        sd=_storage(
            T,
            f"{wh}/{DB}.db/{TABLE}",
            cols=_columns(T),
            skewed=True,
        ),
        partitionKeys=[
            T.FieldSchema(name="ds", type="string", comment="day partition"),
            T.FieldSchema(name="hr", type="int", comment="hour"),
        ],
        parameters={"comment": "interop table", "custom.key": "x", "numFiles": "3"},
        tableType="MANAGED_TABLE",
    )
    c.create_table(table)

    parts = []
    for i, (ds, hr) in enumerate((ds, hr) for ds in DAYS for hr in HOURS):
        # Every 10th partition has columns of its own (a column descriptor of its own); the
        # others share the table's. Each has its own location outside the table's directory.
        # No skew here: Hive 2.3's direct SQL cannot read skew on PostgreSQL (see
        # test_skewed_partitions_read_back) and its ORM fallback filters string keys only.
        cols = _columns(T, extra=1 if i % 10 == 0 else 0)
        sd = _storage(
            T,
            f"{wh}/elsewhere/{TABLE}/{ds}/{hr}",
            cols=cols,
            serde_params={"serialization.format": "1", "part": str(i)},
        )
        parts.append(
            T.Partition(
                values=[ds, str(hr)],
                dbName=DB,
                tableName=TABLE,
                sd=sd,
                parameters={"p.index": str(i), "origin": "ours", "rows": str(i * 100)},
            )
        )
    started = time.perf_counter()
    assert c.add_partitions(parts[:20]) == 20
    for p in parts[20:]:
        c.add_partition(p)
    w.timings["ours: add 50 partitions"] = time.perf_counter() - started

    c.create_table(
        T.Table(
            tableName=VIEW,
            dbName=DB,
            owner="alice",
            retention=0,
            sd=T.StorageDescriptor(
                cols=[
                    T.FieldSchema(name="id", type="bigint", comment="row id"),
                    T.FieldSchema(name="name", type="string", comment=None),
                ],
                location=None,
                inputFormat="org.apache.hadoop.mapred.SequenceFileInputFormat",
                outputFormat="org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat",
                compressed=False,
                numBuckets=-1,
                serdeInfo=T.SerDeInfo(name=None, serializationLib=None, parameters={}),
                bucketCols=[],
                sortCols=[],
                parameters={},
            ),
            partitionKeys=[],
            parameters={"comment": "a view"},
            viewOriginalText=f"SELECT id, name FROM {DB}.{TABLE}",
            viewExpandedText=f"SELECT `{TABLE}`.`id`, `{TABLE}`.`name` FROM `{DB}`.`{TABLE}`",
            tableType="VIRTUAL_VIEW",
        )
    )

    try:
        now = int(time.time())
        desc = T.ColumnStatisticsDesc(isTblLevel=True, dbName=DB, tableName=TABLE, lastAnalyzed=now)
        c.update_table_column_statistics(_stats(T, desc, 1))
        for seed, name in enumerate(STATS_PARTITIONS, start=2):
            desc = T.ColumnStatisticsDesc(
                isTblLevel=False, dbName=DB, tableName=TABLE, partName=name, lastAnalyzed=now
            )
            c.update_partition_column_statistics(_stats(T, desc, seed))
    except TApplicationException as exc:
        if not _unimplemented(exc):
            raise
        w.unsupported["stats"] = f"our server does not write column statistics yet: {exc.message}"

    try:
        c.create_function(
            T.Function(
                functionName=FUNCTION,
                dbName=DB,
                className="com.example.hive.Upper",
                ownerName="alice",
                ownerType=T.PrincipalType.USER,
                createTime=int(time.time()),
                functionType=T.FunctionType.JAVA,
                resourceUris=[
                    T.ResourceUri(resourceType=T.ResourceType.JAR, uri=f"{wh}/lib/upper.jar"),
                    T.ResourceUri(resourceType=T.ResourceType.FILE, uri=f"{wh}/lib/words.txt"),
                ],
            )
        )
    except TApplicationException as exc:
        if not _unimplemented(exc):
            raise
        w.unsupported["functions"] = f"our server does not create functions yet: {exc.message}"


@pytest.fixture(scope="module")
def world(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory, stock_hms_prerequisites: None
) -> Iterator[World]:
    T = load_apache_modules().ttypes
    base = tmp_path_factory.mktemp("stock-interop")
    warehouse = base / "warehouse"
    warehouse.mkdir()
    url = pg_server.new_database()
    engine = create_engine(url)
    transports: list[Any] = []
    mp = pytest.MonkeyPatch()
    mp.setattr(T.SkewedInfo, "read", _read_skewed_info)
    try:
        # The stock server writes no events (no DbNotificationListener), so no cache can see
        # its writes; the judge here is the database path, so ours runs without the cache.
        with running_service(url, warehouse, cache_enabled=False) as service:
            ours, t = apache_client("127.0.0.1", service.port)
            transports.append(t)
            schema_before = _schema_snapshot(engine)
            w = World(
                T=T,
                url=url,
                warehouse=warehouse,
                ours=ours,
                stock=None,  # set once the stock server runs, after our writes
                stock_server=None,  # type: ignore[arg-type]
                engine=engine,
                schema_before=schema_before,
                service=service,
            )
            _populate(w)
            started = time.perf_counter()
            with StockMetastore.start(
                url,
                create_schema=False,
                workdir=base / "stock",
                warehouse_dir=warehouse,
                jvm_args=["-XX:TieredStopAtLevel=1"],  # starts 2-3 times faster; not timed here
            ) as stock_server:
                w.timings["stock: start"] = time.perf_counter() - started
                w.stock_server = stock_server
                w.stock, t = apache_client("127.0.0.1", stock_server.port)
                transports.append(t)
                yield w
                for name, seconds in sorted(w.timings.items()):
                    print(f"timing {name}: {seconds * 1000:.0f} ms")
    finally:
        for t in transports:
            t.close()
        mp.undo()
        engine.dispose()
        pg_server.drop_database(url.rsplit("/", 1)[1])


def _timed(w: World, label: str, fn: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    try:
        return fn()
    finally:
        w.timings[label] = w.timings.get(label, 0.0) + time.perf_counter() - started


# -- reading back what we wrote ------------------------------------------------------------------


def test_database_reads_back(world: World) -> None:
    stock, ours = world.both("get_database", DB)
    assert_same(stock, ours, f"get_database({DB})")
    assert ours.parameters == {"team": "data", "empty": "", "ünï": "cödé"}
    assert (ours.ownerName, ours.ownerType) == ("alice", world.T.PrincipalType.USER)
    stock_all, ours_all = world.both("get_all_databases")
    assert sorted(stock_all) == sorted(ours_all) == ["default", DB]


def test_table_reads_back(world: World) -> None:
    for name in (TABLE, VIEW):
        stock, ours = world.both("get_table", DB, name)
        assert_same(stock, ours, f"get_table({DB}.{name})")
    table = world.ours.get_table(DB, TABLE)
    assert [c.comment for c in table.sd.cols][:3] == ["row id", "the name, with ünïcödé", None]
    assert table.sd.skewedInfo.skewedColValues == [
        ["alpha", "true"],
        ["beta", "false"],
        ["", "true"],
    ]
    assert table.sd.serdeInfo.parameters == {"serialization.format": "1", "field.delim": ","}
    view = world.stock.get_table(DB, VIEW)
    assert view.tableType == "VIRTUAL_VIEW"
    assert view.viewExpandedText == f"SELECT `{TABLE}`.`id`, `{TABLE}`.`name` FROM `{DB}`.`{TABLE}`"
    stock_names, ours_names = world.both("get_all_tables", DB)
    assert sorted(stock_names) == sorted(ours_names) == [TABLE, VIEW]


def test_partitions_read_back(world: World) -> None:
    stock = _timed(
        world, "stock: get_partitions(50)", lambda: world.stock.get_partitions(DB, TABLE, -1)
    )
    ours = _timed(
        world, "ours: get_partitions(50)", lambda: world.ours.get_partitions(DB, TABLE, -1)
    )
    assert len(ours) == 50
    assert_same(stock, ours, "get_partitions")
    by_index = {int(p.parameters["p.index"]): p for p in stock}
    assert len(by_index[10].sd.cols) == 9 and len(by_index[11].sd.cols) == 8
    assert by_index[7].sd.location.endswith(f"/elsewhere/{TABLE}/{DAYS[0]}/7")

    stock_names, ours_names = world.both("get_partition_names", DB, TABLE, -1)
    assert stock_names == ours_names
    assert len(ours_names) == 50 and "ds=2024-01-03/hr=5" in ours_names

    some = ["ds=2024-01-02/hr=3", "ds=2024-01-05/hr=9"]
    stock_by_names, ours_by_names = world.both("get_partitions_by_names", DB, TABLE, some)
    assert_same(stock_by_names, ours_by_names, "get_partitions_by_names")
    stock_one, ours_one = world.both("get_partition", DB, TABLE, ["2024-01-04", "6"])
    assert_same(stock_one, ours_one, "get_partition")


@pytest.mark.parametrize(
    "filter_text, expected",
    [
        ('ds = "2024-01-02"', 10),
        ('ds >= "2024-01-04" and hr < 3', 6),
        ("hr = 7", 5),
        ('ds = "2024-01-01" or (ds = "2024-01-03" and hr > 8)', 11),
        # LIKE without wildcards only: Hive 2.3 reads the pattern as a Java regular expression
        # ("2024-01-0.*"), Hive 4 and we as SQL LIKE ("2024-01-0%"), by design (filter.py).
        ('ds like "2024-01-03"', 10),
    ],
)
def test_partitions_by_filter_read_back(world: World, filter_text: str, expected: int) -> None:
    ours = world.ours.get_partitions_by_filter(DB, TABLE, filter_text, -1)
    try:
        stock = world.stock.get_partitions_by_filter(DB, TABLE, filter_text, -1)
    except world.T.MetaException as exc:
        pytest.fail(f"stock server rejected {filter_text!r}: {exc.message}")
    assert_same(stock, ours, f"get_partitions_by_filter({filter_text!r})")
    assert len(ours) == expected


def test_column_statistics_read_back(world: World) -> None:
    world.require("stats")
    T = world.T
    for col in STATS_COLUMNS:
        stock, ours = world.both("get_table_column_statistics", DB, TABLE, col)
        assert_same(stock, ours, f"get_table_column_statistics({col})")
        assert [o.colName for o in ours.statsObj] == [col]
    request = T.TableStatsRequest(dbName=DB, tblName=TABLE, colNames=STATS_COLUMNS, engine="hive")
    stock, ours = world.both("get_table_statistics_req", request)
    # Neither Hive nor we promise an order of the columns' statistics.
    stock.tableStats.sort(key=lambda o: o.colName)
    ours.tableStats.sort(key=lambda o: o.colName)
    assert_same(stock, ours, "get_table_statistics_req")
    assert len(ours.tableStats) == len(STATS_COLUMNS)

    request = T.PartitionsStatsRequest(
        dbName=DB, tblName=TABLE, colNames=STATS_COLUMNS, partNames=STATS_PARTITIONS, engine="hive"
    )
    stock, ours = world.both("get_partitions_statistics_req", request)
    for result in (stock, ours):
        for objs in result.partStats.values():
            objs.sort(key=lambda o: o.colName)
    assert_same(stock, ours, "get_partitions_statistics_req")
    assert sorted(ours.partStats) == sorted(STATS_PARTITIONS)
    for name in STATS_PARTITIONS:
        stock, ours = world.both("get_partition_column_statistics", DB, TABLE, name, "id")
        assert_same(stock, ours, f"get_partition_column_statistics({name}, id)")


def test_function_reads_back(world: World) -> None:
    world.require("functions")
    stock, ours = world.both("get_function", DB, FUNCTION)
    assert_same(stock, ours, f"get_function({DB}.{FUNCTION})")
    assert [u.uri.rsplit("/", 1)[1] for u in ours.resourceUris] == ["upper.jar", "words.txt"]
    stock_names, ours_names = world.both("get_functions", DB, "*")
    assert stock_names == ours_names == [FUNCTION]


def test_skewed_partitions_read_back(world: World) -> None:
    """Skewed columns and values of partitions, as Hive 2.3's ORM path reads them.

    Hive 2.3's direct SQL has a quoting bug on PostgreSQL for skewed descriptors (it selects
    ``"SKEWED_STRING_LIST_VALUES".STRING_LIST_ID`` unquoted, which PostgreSQL folds to lower
    case), so for these the stock server falls back to DataNucleus: a second reader of our rows.
    """
    T, wh = world.T, world.warehouse.as_uri()
    name = "skewed_parts"
    table = T.Table(
        tableName=name,
        dbName=DB,
        owner="alice",
        retention=0,
        sd=_storage(T, f"{wh}/{DB}.db/{name}", cols=_columns(T), skewed=True),
        partitionKeys=[T.FieldSchema(name="ds", type="string", comment="day")],
        parameters={"skewed": "yes"},
        tableType="MANAGED_TABLE",
    )
    world.ours.create_table(table)
    parts = []
    for i, ds in enumerate(DAYS):
        sd = _storage(T, f"{wh}/elsewhere/{name}/{ds}", cols=_columns(T), skewed=i % 2 == 0)
        parts.append(T.Partition(values=[ds], dbName=DB, tableName=name, sd=sd, parameters={}))
    world.ours.add_partitions(parts)

    stock, ours = world.both("get_table", DB, name)
    assert_same(stock, ours, f"get_table({name})")
    stock, ours = world.both("get_partitions", DB, name, -1)
    assert_same(stock, ours, f"get_partitions({name})")
    assert [p.sd.skewedInfo.skewedColNames for p in ours] == [["name", "flag"], []] * 2 + [
        ["name", "flag"]
    ]
    assert ours[0].sd.skewedInfo.skewedColValues == [
        ["alpha", "true"],
        ["beta", "false"],
        ["", "true"],
    ]
    stock, ours = world.both("get_partitions_by_filter", DB, name, 'ds > "2024-01-02"', -1)
    assert_same(stock, ours, f"get_partitions_by_filter({name})")
    assert len(ours) == 3


def test_skewed_value_locations_written_by_stock_read_back(world: World) -> None:
    """Our store reads SKEWED_COL_VALUE_LOC_MAP rows as Hive writes them.

    The other direction (our server writing them) is test_skewed_value_locations_read_back.
    """
    T, wh = world.T, world.warehouse.as_uri()
    name = "stock_skew_located"
    locations = {
        ("alpha", "true"): f"{wh}/{DB}.db/{name}/name=alpha/flag=true",
        ("beta", "false"): f"{wh}/{DB}.db/{name}/name=beta/flag=false",
    }
    sd = _storage(
        T, f"{wh}/{DB}.db/{name}", cols=_columns(T), skewed=True, skew_locations=locations
    )
    world.stock.create_table(
        T.Table(
            tableName=name,
            dbName=DB,
            owner="alice",
            retention=0,
            sd=sd,
            partitionKeys=[T.FieldSchema(name="ds", type="string", comment=None)],
            parameters={},
            tableType="MANAGED_TABLE",
        )
    )
    part_sd = T.StorageDescriptor(**sd.__dict__)
    part_sd.location = f"{wh}/elsewhere/{name}/2024-01-01"
    world.stock.add_partitions(
        [T.Partition(values=["2024-01-01"], dbName=DB, tableName=name, sd=part_sd, parameters={})]
    )
    stock, ours = world.both("get_table", DB, name)
    assert_same(stock, ours, f"get_table({name})")
    assert ours.sd.skewedInfo.skewedColValueLocationMaps == locations
    stock, ours = world.both("get_partitions", DB, name, -1)
    assert_same(stock, ours, f"get_partitions({name})")
    assert ours[0].sd.skewedInfo.skewedColValueLocationMaps == locations


def _skew_located_table(w: World, name: str, locations: dict[tuple[str, ...], str]) -> Any:
    wh = w.warehouse.as_uri()
    return w.T.Table(
        tableName=name,
        dbName=DB,
        owner="alice",
        retention=0,
        sd=_storage(
            w.T, f"{wh}/{DB}.db/{name}", cols=_columns(w.T), skewed=True, skew_locations=locations
        ),
        partitionKeys=[w.T.FieldSchema(name="ds", type="string", comment=None)],
        parameters={},
        tableType="MANAGED_TABLE",
    )


def _to_thriftpy(obj: Any) -> Any:
    """The thriftpy2 twin of an Apache-generated object, via the binary protocol."""
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TTransport
    from thriftpy2.protocol import TBinaryProtocolFactory
    from thriftpy2.utils import deserialize

    from hms_cache_proxy.idl import hms

    buf = TTransport.TMemoryBuffer()
    obj.write(TBinaryProtocol.TBinaryProtocol(buf))
    return deserialize(getattr(hms, type(obj).__name__)(), buf.getvalue(), TBinaryProtocolFactory())


def test_skewed_value_locations_read_back(world: World) -> None:
    """SKEWED_COL_VALUE_LOC_MAP rows we write, read by both servers.

    Written through our handler in this process rather than over Thrift, because our server
    cannot decode such a request yet (test_server_decodes_skewed_value_locations).
    """
    from hms_cache_proxy.handler import Handler

    wh = world.warehouse.as_uri()
    name = "skew_located"
    locations = {
        ("alpha", "true"): f"{wh}/{DB}.db/{name}/name=alpha/flag=true",
        ("beta", "false"): f"{wh}/{DB}.db/{name}/name=beta/flag=false",
    }
    table = _skew_located_table(world, name, {})
    ours_table = _to_thriftpy(table)
    ours_table.sd.skewedInfo.skewedColValueLocationMaps = dict(locations)
    handler = Handler(world.service.store, world.service.settings)
    handler.create_table(ours_table)
    part = _to_thriftpy(
        world.T.Partition(
            values=["2024-01-01"], dbName=DB, tableName=name, sd=table.sd, parameters={"a": "b"}
        )
    )
    part.sd.location = f"{wh}/elsewhere/{name}/2024-01-01"
    part.sd.skewedInfo.skewedColValueLocationMaps = {("alpha", "true"): f"{wh}/elsewhere/x"}
    handler.add_partitions([part])

    stock, ours = world.both("get_table", DB, name)
    assert_same(stock, ours, f"get_table({name})")
    assert ours.sd.skewedInfo.skewedColValueLocationMaps == locations
    stock, ours = world.both("get_partitions", DB, name, -1)
    assert_same(stock, ours, f"get_partitions({name})")
    assert ours[0].sd.skewedInfo.skewedColValueLocationMaps == {
        ("alpha", "true"): f"{wh}/elsewhere/x"
    }


def test_server_decodes_skewed_value_locations(world: World) -> None:
    wh = world.warehouse.as_uri()
    locations = {("alpha", "true"): f"{wh}/{DB}.db/over_thrift/name=alpha/flag=true"}
    client, transport = apache_client("127.0.0.1", world.service.port)  # a failure closes it
    try:
        client.create_table(_skew_located_table(world, "over_thrift", locations))
    finally:
        transport.close()
    stock, ours = world.both("get_table", DB, "over_thrift")
    assert_same(stock, ours, "get_table(over_thrift)")
    assert ours.sd.skewedInfo.skewedColValueLocationMaps == locations


# -- both servers writing ------------------------------------------------------------------------


def test_interleaved_writes_read_back_and_ids_never_collide(world: World) -> None:
    T, stock, ours = world.T, world.stock, world.ours
    wh = world.warehouse.as_uri()
    days = [f"2025-02-{d:02d}" for d in range(1, 29)]

    def db(name: str, **params: str) -> Any:
        return T.Database(
            name=name,
            description=f"{name} database",
            locationUri=f"{wh}/{name}.db",
            parameters=params,
            ownerName="carol",
            ownerType=T.PrincipalType.USER,
        )

    # Alternate writers, so each one's blocks of reserved ids interleave with the other's.
    _timed(world, "stock: writes", lambda: stock.create_database(db("stock_db1", origin="stock")))
    st = _simple_table(T, "stock_db1", "st")
    stock.create_table(st)
    _timed(
        world,
        "stock: add 10 partitions",
        lambda: stock.add_partitions(_partitions(T, st, days[:10], "stock")),
    )

    ot = _simple_table(T, DB, "ot")
    ours.create_table(ot)
    _timed(
        world,
        "ours: add 10 partitions",
        lambda: ours.add_partitions(_partitions(T, ot, days[:10], "ours")),
    )

    stock.create_database(db("stock_db2"))
    ours.add_partitions(_partitions(T, st, days[10:20], "ours"))
    stock.add_partitions(_partitions(T, ot, days[10:20], "stock"))
    stock.create_table(_simple_table(T, "stock_db2", "from_stock"))
    # a location of its own, below its database's directory (managed data may not lie elsewhere)
    ours.create_table(
        _simple_table(T, "stock_db2", "from_ours", f"{wh}/stock_db2.db/custom/from_ours")
    )
    ours.create_database(db("ours_db3", origin="ours"))
    for i, dt in enumerate(days[20:]):
        writer, other = (stock, ours) if i % 2 == 0 else (ours, stock)
        writer.add_partition(_partitions(T, st, [dt], "alternating")[0])
        other.add_partition(_partitions(T, ot, [dt], "alternating")[0])
    functions = ["stock_db1.f_stock"]
    stock.create_function(
        T.Function(
            functionName="f_stock",
            dbName="stock_db1",
            className="com.example.F",
            ownerName="carol",
            ownerType=T.PrincipalType.USER,
            createTime=int(time.time()),
            functionType=T.FunctionType.JAVA,
            resourceUris=[],
        )
    )
    if "functions" not in world.unsupported:
        ours.create_function(
            T.Function(
                functionName="f_ours",
                dbName="stock_db1",
                className="com.example.G",
                ownerName="carol",
                ownerType=T.PrincipalType.ROLE,
                createTime=int(time.time()),
                functionType=T.FunctionType.JAVA,
                resourceUris=[T.ResourceUri(resourceType=T.ResourceType.JAR, uri=f"{wh}/g.jar")],
            )
        )
        functions.append("stock_db1.f_ours")

    # Both servers read every object back, the same way.
    stock_dbs, ours_dbs = world.both("get_all_databases")
    assert sorted(stock_dbs) == sorted(ours_dbs)
    assert {"stock_db1", "stock_db2", "ours_db3", DB} <= set(ours_dbs)
    for name in ours_dbs:
        s_db, o_db = world.both("get_database", name)
        assert_same(s_db, o_db, f"get_database({name})")
        s_tables, o_tables = world.both("get_all_tables", name)
        assert sorted(s_tables) == sorted(o_tables)
        for tname in o_tables:
            s_t, o_t = world.both("get_table", name, tname)
            assert_same(s_t, o_t, f"get_table({name}.{tname})")
            s_p, o_p = world.both("get_partitions", name, tname, -1)
            assert_same(s_p, o_p, f"get_partitions({name}.{tname})")
    for table in (st, ot):
        names = ours.get_partition_names(table.dbName, table.tableName, -1)
        assert names == [f"dt={d}" for d in days]
        origins = {
            p.parameters["origin"] for p in stock.get_partitions(table.dbName, table.tableName, -1)
        }
        assert origins == {"stock", "ours", "alternating"}
    # Databases the stock server wrote get Hive 4's column defaults, which we read.
    assert ours.get_database("stock_db1").parameters == {"origin": "stock"}
    if "functions" not in world.unsupported:
        for qualified in functions:
            dbname, fname = qualified.split(".")
            s_f, o_f = world.both("get_function", dbname, fname)
            assert_same(s_f, o_f, f"get_function({qualified})")

    with world.engine.connect() as conn:
        for table, (column, sequence) in ID_TABLES.items():
            count, distinct, highest = conn.execute(
                text(f'SELECT count(*), count(DISTINCT "{column}"), max("{column}") FROM "{table}"')
            ).one()
            assert count == distinct, f"{table}.{column} has duplicate ids"
            if highest is None:
                continue
            next_val = conn.execute(
                text('SELECT "NEXT_VAL" FROM "SEQUENCE_TABLE" WHERE "SEQUENCE_NAME" = :n'),
                {"n": sequence},
            ).scalar()
            assert next_val is not None, f"no SEQUENCE_TABLE row for {sequence} ({table} has ids)"
            assert next_val > highest, (
                f"SEQUENCE_TABLE {sequence} NEXT_VAL {next_val} is not past {table}.{column} "
                f"max {highest}: the next writer would reuse an id"
            )
        ctlg, kind = conn.execute(
            text('SELECT "CTLG_NAME", "TYPE" FROM "DBS" WHERE "NAME" = \'stock_db1\'')
        ).one()
        assert (ctlg, kind) == ("hive", "NATIVE")
        version = conn.execute(text('SELECT "SCHEMA_VERSION" FROM "VERSION"')).scalars().all()
        assert version == ["4.0.0"], "the stock server must not rewrite the schema version"
    assert _schema_snapshot(world.engine) == world.schema_before, (
        "the stock server altered the schema"
    )
    assert world.stock_server.proc.poll() is None, world.stock_server.log_tail()


def test_constraints_read_back(world: World) -> None:
    """Primary and foreign keys (the kinds Hive 2.3 knows) written by us, read by both."""
    T, ours = world.T, world.ours
    ours.create_database(T.Database(name="keys_db", locationUri=f"{world.warehouse.as_uri()}/k"))
    flags = {"enable_cstr": False, "validate_cstr": False, "rely_cstr": True}
    pks = [
        T.SQLPrimaryKey(table_db="keys_db", table_name="orders", column_name=c, key_seq=i, **flags)
        for i, c in enumerate(["a", "b"], start=1)
    ]
    ours.create_table_with_constraints(
        _simple_table(T, "keys_db", "orders"), pks, [], [], [], [], []
    )
    ours.create_table(_simple_table(T, "keys_db", "lines"))
    fks = [
        T.SQLForeignKey(
            pktable_db="keys_db",
            pktable_name="orders",
            pkcolumn_name=p,
            fktable_db="keys_db",
            fktable_name="lines",
            fkcolumn_name=f,
            key_seq=i,
            update_rule=0,
            delete_rule=0,
            fk_name="lines_orders",
            **flags,
        )  # fmt: skip
        for i, (p, f) in enumerate([("a", "a"), ("b", "b")], start=1)
    ]
    ours.add_foreign_key(T.AddForeignKeyRequest(fks))
    stock, mine = world.both("get_primary_keys", T.PrimaryKeysRequest("keys_db", "orders"))
    assert_same(stock, mine, "get_primary_keys(keys_db.orders)")
    assert [k.column_name for k in mine.primaryKeys] == ["a", "b"]
    assert mine.primaryKeys[0].pk_name.startswith("pk_")  # generated, read the same by both
    request = T.ForeignKeysRequest(
        parent_db_name="keys_db",
        parent_tbl_name="orders",
        foreign_db_name="keys_db",
        foreign_tbl_name="lines",
    )
    stock, mine = world.both("get_foreign_keys", request)
    assert_same(stock, mine, "get_foreign_keys(keys_db.lines -> keys_db.orders)")
    assert [(k.fkcolumn_name, k.pkcolumn_name) for k in mine.foreignKeys] == [
        ("a", "a"),
        ("b", "b"),
    ]


def test_partition_event_marks_are_shared(world: World) -> None:
    """PARTITION_EVENTS rows we write are the marks stock reads, and the other way round; both
    take their ids from SEQUENCE_TABLE's MPartitionEvent row."""
    T, stock, ours = world.T, world.stock, world.ours
    done = T.PartitionEventType.LOAD_DONE
    first = {"ds": DAYS[0], "hr": "1"}
    second = {"ds": DAYS[1], "hr": "2"}
    ours.markPartitionForEvent(DB, TABLE, first, done)
    assert world.both("isPartitionMarkedForEvent", DB, TABLE, first, done) == (True, True)
    stock.markPartitionForEvent(DB, TABLE, second, done)
    assert world.both("isPartitionMarkedForEvent", DB, TABLE, second, done) == (True, True)
    third = {"ds": DAYS[2], "hr": "3"}
    ours.markPartitionForEvent(DB, TABLE, third, done)
    assert world.both("isPartitionMarkedForEvent", DB, TABLE, third, done) == (True, True)
    unmarked = {"ds": DAYS[3], "hr": "3"}
    assert world.both("isPartitionMarkedForEvent", DB, TABLE, unmarked, done) == (False, False)


@pytest.mark.parametrize(
    "filter_text",
    [
        'hive_filter_field_owner__ = "alice"',
        'hive_filter_field_owner__ <> "alice"',
        'hive_filter_field_params__comment = "interop table"',
        'hive_filter_field_params__comment = "interop table" or hive_filter_field_owner__ = "x"',
        "hive_filter_field_last_access__ = 0",
    ],
)
def test_table_names_by_filter_agree(world: World, filter_text: str) -> None:
    stock_names, our_names = world.both("get_table_names_by_filter", DB, filter_text, -1)
    assert sorted(our_names) == sorted(stock_names)


@pytest.mark.parametrize("name", ["ds=2024-01-01/hr=5", "ds=a%2Fb/hr=1", "x/ds=1", "a=b=c"])
def test_partition_name_helpers_agree(world: World, name: str) -> None:
    stock_vals, our_vals = world.both("partition_name_to_vals", name)
    assert our_vals == stock_vals
    stock_spec, our_spec = world.both("partition_name_to_spec", name)
    assert our_spec == stock_spec


def test_partition_specs_agree(world: World) -> None:
    """Hive 2.3 serves get_partitions_pspec / get_part_specs_by_filter too: on a table without
    the grouping parameter both answer one list spec rooted at the table's location."""
    stock, ours = world.both("get_partitions_pspec", DB, TABLE, -1)
    assert len(ours) == 1 and len(ours[0].partitionList.partitions) == 50
    assert_same(stock, ours, "get_partitions_pspec")
    text = 'ds = "2024-01-02"'
    stock, ours = world.both("get_part_specs_by_filter", DB, TABLE, text, -1)
    assert len(ours[0].partitionList.partitions) == 10
    assert_same(stock, ours, "get_part_specs_by_filter")
