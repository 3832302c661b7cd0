"""Materialized-view calls of Hive 4's HiveServer2 through Apache Thrift's client, on SQLite and
PostgreSQL: update_transaction_statistics and get_materialization_invalidation_info."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import insert, select
from thrift.Thrift import TApplicationException

from hms_cache_proxy.store.db import schema
from tests.integration.test_txn_calls import transactional_table

NOTHING_OPEN = 9223372036854775807  # Long.MAX_VALUE: no open write id


def _metadata(T, tables, txn_list):
    return T.CreationMetadata(
        catName="hive",
        dbName="default",
        tblName="mv",
        tablesUsed=set(tables),
        validTxnList=txn_list,
    )


def _missing_result(client, T, cm):
    with pytest.raises(TApplicationException) as info:
        client.get_materialization_invalidation_info(cm, "")
    assert info.value.type == TApplicationException.MISSING_RESULT


def test_invalidation_info_sees_updates_and_compactions_after_the_snapshot(client, T, service):
    transactional_table(client, T, "src")
    seen = f"1$default.src:0:{NOTHING_OPEN}::"
    info = client.get_materialization_invalidation_info(_metadata(T, ["default.src"], seen), "")
    assert (info.sourceTablesUpdateDeleteModified, info.sourceTablesCompacted) == (False, False)

    ctc = schema.COMPLETED_TXN_COMPONENTS
    service.database.transaction(
        lambda conn: conn.execute(
            insert(ctc).values(
                CTC_TXNID=1,
                CTC_DATABASE="default",
                CTC_TABLE="src",
                CTC_WRITEID=1,
                CTC_UPDATE_DELETE="Y",
            )
        )
    )
    info = client.get_materialization_invalidation_info(_metadata(T, ["default.src"], seen), "")
    assert info.sourceTablesUpdateDeleteModified is True and info.sourceTablesCompacted is False
    # a snapshot that already saw write id 1 sees no change
    later = f"2$default.src:1:{NOTHING_OPEN}::"
    info = client.get_materialization_invalidation_info(_metadata(T, ["default.src"], later), "")
    assert info.sourceTablesUpdateDeleteModified is False

    client.compact(
        T.CompactionRequest(dbname="default", tablename="src", type=T.CompactionType.MAJOR)
    )
    info = client.get_materialization_invalidation_info(_metadata(T, ["default.src"], later), "")
    assert info.sourceTablesCompacted is True
    # Hive 4's JSON snapshot is read too
    as_json = json.dumps({"validTxnList": later})
    info = client.get_materialization_invalidation_info(_metadata(T, ["default.src"], as_json), "")
    assert info.sourceTablesCompacted is True


def test_invalidation_info_answers_no_result_where_hive_does(client, T):
    transactional_table(client, T, "src")
    _missing_result(client, T, _metadata(T, [], "1$"))  # no source tables
    _missing_result(client, T, _metadata(T, ["default.src"], "1$"))  # not in the snapshot
    iceberg = json.dumps({"validTxnList": "1$", "tableSnapshots": {"default.src": {}}})
    _missing_result(client, T, _metadata(T, ["default.src"], iceberg))
    # a write id open now that was not open for the view: not incrementally rebuildable
    txn = client.open_txns(T.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids[0]
    client.allocate_table_write_ids(
        T.AllocateTableWriteIdsRequest(dbName="default", tableName="src", txnIds=[txn])
    )
    _missing_result(client, T, _metadata(T, ["default.src"], f"1$default.src:0:{NOTHING_OPEN}::"))
    client.abort_txn(T.AbortTxnRequest(txnid=txn))


def test_update_transaction_statistics_adds_to_the_views_counters(client, T, service):
    transactional_table(client, T, "src")
    with service.database.read() as conn:
        query = select(schema.TBLS.c.TBL_ID).where(schema.TBLS.c.TBL_NAME == "src")
        tbl_id = conn.execute(query).scalar_one()

    def seed(conn):
        conn.execute(
            insert(schema.MV_CREATION_METADATA).values(
                MV_CREATION_METADATA_ID=1,
                CAT_NAME="hive",
                DB_NAME="default",
                TBL_NAME="mv",
                TXN_LIST="",
                MATERIALIZATION_TIME=0,
            )
        )
        conn.execute(insert(schema.MV_TABLES_USED).values(MV_CREATION_METADATA_ID=1, TBL_ID=tbl_id))

    service.database.transaction(seed)
    for _ in range(2):
        client.update_transaction_statistics(T.UpdateTransactionalStatsRequest(tbl_id, 5, 2, 1))
    client.update_transaction_statistics(T.UpdateTransactionalStatsRequest(tbl_id + 999, 1, 1, 1))
    with service.database.read() as conn:
        row = conn.execute(select(schema.MV_TABLES_USED)).one()
    assert (row.INSERTED_COUNT, row.UPDATED_COUNT, row.DELETED_COUNT) == (10, 4, 2)
