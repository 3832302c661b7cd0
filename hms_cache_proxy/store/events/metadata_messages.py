"""Message bodies of the metadata events: databases, tables, partitions, functions, INSERT,
catalogs, constraints and RELOAD (Hive's JSON*Message layouts).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hms_cache_proxy.store.events import tjson
from hms_cache_proxy.store.events.message_base import (
    PARTITIONS_CHANGED,
    REPL_LEFT_OUT,
    WRITE_ID,
    MessageBuilderBase,
    partition_key_values,
    tf,
)


class MetadataMessages(MessageBuilderBase):
    """The bodies of the events that change (or refresh) metastore objects."""

    # -- databases: JSONCreateDatabaseMessage, JSONAlterDatabaseMessage, JSONDropDatabaseMessage

    def create_database(self, db: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "db": db.name,
                "dbJson": tjson.dumps(db),
                "timestamp": self.now(),
            }
        )

    def alter_database(
        self, before: Any, after: Any, repl_left_out: bool = False
    ) -> dict[str, Any]:
        """``repl_left_out``: replication properties were taken out of the objects."""
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": before.name,
            "dbObjBeforeJson": tjson.dumps(before),
            "dbObjAfterJson": tjson.dumps(after),
            "timestamp": self.now(),
        }
        return self._extra(body, None, **{REPL_LEFT_OUT: True if repl_left_out else None})

    def drop_database(self, db: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "db": db.name,
                "dbJson": tjson.dumps(db),
                "timestamp": self.now(),
            }
        )

    # -- tables: JSONCreateTableMessage, JSONAlterTableMessage, JSONDropTableMessage

    def create_table(
        self,
        table: Any,
        files: Iterable[str] = (),
        valid_write_ids: str | None = None,
        write_id: int | None = None,
    ) -> dict[str, Any]:
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "timestamp": self.now(),
            "files": list(files),
        }
        return self._extra(body, valid_write_ids, **{WRITE_ID: self._txn_write_id(write_id)})

    def alter_table(
        self,
        before: Any,
        after: Any,
        is_truncate: bool = False,
        write_id: int = -1,
        valid_write_ids: str | None = None,
        partitions_changed: bool | None = None,
    ) -> dict[str, Any]:
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": before.dbName,
            "table": before.tableName,
            "tableType": before.tableType,
            "tableObjBeforeJson": self.table_json(before),
            "tableObjAfterJson": self.table_json(after),
            "isTruncateOp": tf(is_truncate),
            "timestamp": self.now(),
            "writeId": write_id,
        }
        return self._extra(body, valid_write_ids, **{PARTITIONS_CHANGED: partitions_changed})

    def drop_table(self, table: Any, valid_write_ids: str | None = None) -> dict[str, Any]:
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "timestamp": self.now(),
        }
        return self._extra(body, valid_write_ids)

    # -- partitions: JSONAddPartitionMessage, JSONAlterPartitionMessage,
    #    JSONAlterPartitionsMessage, JSONDropPartitionMessage

    def add_partition(
        self,
        table: Any,
        partitions: Sequence[Any],
        partition_files: Iterable[tuple[str, Sequence[str]]] = (),
        valid_write_ids: str | None = None,
        write_id: int | None = None,
    ) -> dict[str, Any]:
        """``partition_files``: (partition name, file paths) pairs, as Hive's PartitionFiles."""
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "timestamp": self.now(),
            "partitions": [partition_key_values(table, p) for p in partitions],
            "partitionListJson": [self.partition_json(p) for p in partitions],
            "partitionFiles": [
                {"partitionName": name, "files": list(files)} for name, files in partition_files
            ],
        }
        return self._extra(body, valid_write_ids, **{WRITE_ID: self._txn_write_id(write_id)})

    def alter_partition(
        self,
        table: Any,
        before: Any,
        after: Any,
        is_truncate: bool = False,
        write_id: int = -1,
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "isTruncateOp": tf(is_truncate),
            "timestamp": self.now(),
            "writeId": write_id,
            "keyValues": partition_key_values(table, before),
            "partitionObjBeforeJson": self.partition_json(before),
            "partitionObjAfterJson": self.partition_json(after),
        }
        return self._keeping(self._extra(body, valid_write_ids), partitionObjAfterJson=after)

    def alter_partitions(
        self,
        table: Any,
        partitions: Sequence[Any],
        is_truncate: bool = False,
        write_id: int = -1,
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        """ALTER_PARTITIONS: one event for a batch of altered partitions (Hive 4, HIVE-27746)."""
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "isTruncateOp": tf(is_truncate),
            "timestamp": self.now(),
            "writeId": write_id,
            "partitions": [partition_key_values(table, p) for p in partitions],
            "partitionListJson": [self.partition_json(p) for p in partitions],
        }
        return self._extra(body, valid_write_ids)

    def drop_partition(
        self, table: Any, partitions: Sequence[Any], valid_write_ids: str | None = None
    ) -> dict[str, Any]:
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "timestamp": self.now(),
            "partitions": [partition_key_values(table, p) for p in partitions],
        }
        return self._extra(body, valid_write_ids)

    # -- functions: JSONCreateFunctionMessage, JSONDropFunctionMessage

    def create_function(self, fn: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "db": fn.dbName,
                "functionObjJson": tjson.dumps(fn),
                "timestamp": self.now(),
            }
        )

    def drop_function(self, fn: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "db": fn.dbName,
                "functionName": fn.functionName,
                "timestamp": self.now(),
            }
        )

    # -- INSERT: JSONInsertMessage

    def insert(
        self,
        table: Any,
        partition: Any | None = None,
        replace: bool = False,
        files: Iterable[str] = (),
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "ptnObjJson": None if partition is None else self.partition_json(partition),
            "timestamp": self.now(),
            "replace": tf(replace),
            "files": list(files),
        }
        return self._extra(body, valid_write_ids)

    # -- catalogs: JSONCreateCatalogMessage, JSONAlterCatalogMessage, JSONDropCatalogMessage

    def create_catalog(self, catalog: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "catalog": catalog.name,
                "timestamp": self.now(),
            }
        )

    def alter_catalog(self, before: Any, after: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "catObjBeforeJson": tjson.dumps(before),
                "catObjAfterJson": tjson.dumps(after),
                "timestamp": self.now(),
            }
        )

    def drop_catalog(self, catalog: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "catalog": catalog.name,
                "timestamp": self.now(),
            }
        )

    # -- constraints: JSONAdd{PrimaryKey,ForeignKey,UniqueConstraint,NotNullConstraint,
    #    DefaultConstraint,CheckConstraint}Message, JSONDropConstraintMessage

    def add_constraints(self, list_key: str, items: Sequence[Any]) -> dict[str, Any]:
        """``list_key`` is the message's list field (``primaryKeyListJson``, ...): one TJSON
        text per constraint column, as stored (generated names filled in)."""
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "timestamp": self.now(),
                list_key: [tjson.dumps(item) for item in items],
            }
        )

    def drop_constraint(self, cat: str, db: str, table: str, name: str) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "catName": cat,
                "dbName": db,
                "tableName": table,
                "constraintName": name,
                "timestamp": self.now(),
            }
        )

    # -- RELOAD: JSONReloadMessage (fire_listener_event with refreshEvent)

    def reload(
        self,
        table: Any,
        partition: Any | None = None,
        partitions: Sequence[Any] | None = None,
        refresh: bool = True,
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "timestamp": self.now(),
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableObjJson": self.table_json(table),
            "ptnObjJson": None if partition is None else self.partition_json(partition),
            "refreshEvent": tf(refresh),
            "partitionListJson": (
                None if partitions is None else [self.partition_json(p) for p in partitions]
            ),
        }
        return self._extra(body, valid_write_ids)
