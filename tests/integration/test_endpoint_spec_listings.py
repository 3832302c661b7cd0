"""Hive 4's spec-style listings (get_partitions_pspec, get_part_specs_by_filter,
get_partitions_with_specs, get_tables_ext) through Apache Thrift's client, on SQLite and
PostgreSQL: the shapes Hive's HMSHandler answers."""

from __future__ import annotations

from tests.support.cache import wait_until
from tests.support.metastore import partition, raises, table, uri, warehouse_dir
from tests.support.server import running_service

KEYS = ["ds:string", "hr:int"]
GROUPING = {"hive.hcatalog.partition.spec.grouping.enabled": "true"}


def _setup(client, T, service, params=None):
    client.create_table(table(T, "default", "pt", keys=KEYS, params=params))
    for values in (["a", "1"], ["a", "2"], ["b", "1"]):
        client.add_partition(partition(T, "default", "pt", values, params={"k1": "x"}))
    outside = uri(warehouse_dir(service) / "elsewhere")  # not below the table's directory
    client.add_partition(partition(T, "default", "pt", ["c", "3"], location=outside))
    return client.get_table("default", "pt").sd.location, outside


def test_pspec_without_grouping_is_one_list_rooted_at_the_table(client, T, service):
    root, _ = _setup(client, T, service)
    specs = client.get_partitions_pspec("default", "pt", -1)
    assert len(specs) == 1
    spec = specs[0]
    assert (spec.dbName, spec.tableName, spec.catName, spec.rootPath) == (
        "default",
        "pt",
        "hive",
        root,
    )
    assert spec.sharedSDPartitionSpec is None
    assert [p.values for p in spec.partitionList.partitions] == [
        ["a", "1"],
        ["a", "2"],
        ["b", "1"],
        ["c", "3"],
    ]
    assert len(client.get_partitions_pspec("default", "pt", 2)[0].partitionList.partitions) == 2
    with raises(T.NoSuchObjectException):
        client.get_partitions_pspec("default", "nope", -1)


def test_pspec_with_grouping_shares_the_sd_and_lists_outsiders(client, T, service):
    root, outside = _setup(client, T, service, params=GROUPING)
    specs = client.get_partitions_pspec("default", "pt", -1)
    assert len(specs) == 2
    shared, rest = specs
    assert shared.rootPath == root and shared.sharedSDPartitionSpec.sd.location == root
    assert shared.sharedSDPartitionSpec.sd.cols == client.get_table("default", "pt").sd.cols
    members = shared.sharedSDPartitionSpec.partitions
    assert [(p.values, p.relativePath) for p in members] == [
        (["a", "1"], "/ds=a/hr=1"),
        (["a", "2"], "/ds=a/hr=2"),
        (["b", "1"], "/ds=b/hr=1"),
    ]
    assert members[0].parameters["k1"] == "x"
    assert rest.rootPath is None and rest.sharedSDPartitionSpec is None
    assert [(p.values, p.sd.location) for p in rest.partitionList.partitions] == [
        (["c", "3"], outside)
    ]


def test_part_specs_by_filter(client, T, service):
    _setup(client, T, service, params=GROUPING)
    specs = client.get_part_specs_by_filter("default", "pt", "ds = 'a'", -1)
    assert len(specs) == 1
    assert [p.values for p in specs[0].sharedSDPartitionSpec.partitions] == [
        ["a", "1"],
        ["a", "2"],
    ]
    with raises(T.MetaException, contains="Error parsing partition filter"):
        client.get_part_specs_by_filter("default", "pt", "ds = ", -1)


def _request(T, projection=None, mode=None, filters=None, **kw):
    return T.GetPartitionsRequest(
        dbName="default",
        tblName="pt",
        projectionSpec=T.GetProjectionsSpec(fieldList=projection or []),
        filterSpec=T.GetPartitionsFilterSpec(filterMode=mode, filters=filters),
        **kw,
    )


def test_partitions_with_specs_filters_and_projections(client, T, service):
    root, _ = _setup(client, T, service)
    # grouping regardless of the table parameter
    full = client.get_partitions_with_specs(_request(T)).partitionSpec
    assert [len(s.sharedSDPartitionSpec.partitions) for s in full[:1]] == [3]
    assert [p.values for p in full[1].partitionList.partitions] == [["c", "3"]]

    def values(mode, filters):
        out = []
        for spec in client.get_partitions_with_specs(
            _request(T, None, mode, filters)
        ).partitionSpec:
            if spec.sharedSDPartitionSpec is not None:
                out += [p.values for p in spec.sharedSDPartitionSpec.partitions]
            else:
                out += [p.values for p in spec.partitionList.partitions]
        return sorted(out)

    mode = T.PartitionFilterMode
    assert values(mode.BY_NAMES, ["ds=a/hr=2", "ds=z/hr=1"]) == [["a", "2"]]
    assert values(mode.BY_VALUES, ["a"]) == [["a", "1"], ["a", "2"]]
    assert values(mode.BY_EXPR, ["hr = 1", "ds = 'b'"]) == [["b", "1"]]
    with raises(T.MetaException, "Invalid filter expressions in the filter spec"):
        values(mode.BY_EXPR, [])

    # no SD requested: all partitions in one spec with an empty SD
    reply = client.get_partitions_with_specs(_request(T, ["values", "parameters"]))
    (spec,) = reply.partitionSpec
    assert spec.rootPath is None and spec.sharedSDPartitionSpec.sd.location is None
    parts = spec.sharedSDPartitionSpec.partitions
    assert [p.values for p in parts] == [["a", "1"], ["a", "2"], ["b", "1"], ["c", "3"]]
    assert parts[0].relativePath is None and parts[0].parameters["k1"] == "x"
    assert parts[0].createTime == 0  # not requested: 0, as Java's getter reads it

    # only the location of the SD
    reply = client.get_partitions_with_specs(_request(T, ["values", "sd.location"]))
    shared = reply.partitionSpec[0].sharedSDPartitionSpec
    assert shared.sd.location == root and shared.sd.cols is None
    assert shared.partitions[0].relativePath == "/ds=a/hr=1"

    # parameter keys narrowed by LIKE patterns
    request = _request(T, ["values", "parameters"])
    request.projectionSpec.includeParamKeyPattern = "k%"
    spec = client.get_partitions_with_specs(request).partitionSpec[0]
    assert all(set(p.parameters) <= {"k1"} for p in spec.sharedSDPartitionSpec.partitions)
    request.projectionSpec.excludeParamKeyPattern = "k_"
    spec = client.get_partitions_with_specs(request).partitionSpec[0]
    assert all(p.parameters == {} for p in spec.sharedSDPartitionSpec.partitions)

    with raises(T.MetaException, "Invalid field name sd.nope"):
        client.get_partitions_with_specs(_request(T, ["sd.nope"]))
    with raises(T.MetaException, "hive.default.x table not found"):
        client.get_partitions_with_specs(T.GetPartitionsRequest(dbName="default", tblName="x"))


def test_tables_ext_lists_matching_tables_for_processors_with_capabilities(client, T):
    for name in ("t1", "t2", "u1"):
        client.create_table(table(T, "default", name))

    def ext(pattern, caps=("HIVEFULLACIDREAD",), fields=1, limit=None, db="default"):
        request = T.GetTablesExtRequest(
            catalog="hive",
            database=db,
            tableNamePattern=pattern,
            requestedFields=fields,
            limit=limit,
            processorCapabilities=list(caps) if caps is not None else None,
        )
        return client.get_tables_ext(request)

    got = ext("t*")
    assert [(i.tblName, i.accessType) for i in got] == [("t1", 0), ("t2", 0)]
    assert [i.tblName for i in ext("*", limit=2)] == ["t1", "t2"]
    assert [i.tblName for i in ext("t1|u*")] == ["t1", "u1"]
    assert ext("t1", fields=2)[0].accessType is None
    # Hive skips processors that name no capabilities, or ask for raw metadata
    assert ext("*", caps=None) == []
    assert ext("*", caps=["MANAGERAWMETADATA"]) == []
    assert ext("*", db="nodb") == []


def test_specs_written_on_one_instance_are_listed_on_another(database_url, tmp_path, T, client):
    from tests.support.apache_thrift import apache_client

    with running_service(database_url, tmp_path / "warehouse2") as other:
        reader, transport = apache_client("127.0.0.1", other.port)
        try:
            client.create_table(table(T, "default", "pt", keys=KEYS, params=GROUPING))
            client.add_partition(partition(T, "default", "pt", ["a", "1"]))

            def listed() -> list[list[str]]:
                try:
                    specs = reader.get_partitions_pspec("default", "pt", -1)
                except T.NoSuchObjectException:
                    return []
                return [p.values for s in specs for p in s.sharedSDPartitionSpec.partitions]

            wait_until(lambda: listed() == [["a", "1"]], what="the partition on the other one")
            client.add_partition(partition(T, "default", "pt", ["b", "2"]))
            wait_until(lambda: listed() == [["a", "1"], ["b", "2"]], what="the second partition")
            request = _request(T, ["values"])
            spec = reader.get_partitions_with_specs(request).partitionSpec[0]
            assert [p.values for p in spec.sharedSDPartitionSpec.partitions] == [
                ["a", "1"],
                ["b", "2"],
            ]
        finally:
            transport.close()
