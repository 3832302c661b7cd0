"""The store's contract: every call the handler makes on a store, as typing Protocols.

One file shows the whole surface. Three stores implement it: the SQL store (``SqlStore``, the
database path), the caching store (``CachedStore``, reads from the cache where its rules allow)
and the direct store (``DirectStore``, the database path when there is no cache). The handler is
typed against ``HandlerStore``; the two stores in front of the database take a ``DatabaseStore``.
mypy checks all of them (tests/unit/test_types.py).

The groups follow the concerns: ``Metadata`` (catalogs, databases, tables, partitions,
statistics, constraints, functions, privileges, roles, scheduled queries, runtime statistics),
``Events`` (the notification log and what writes to it outside a metadata write),
``Transactions`` (the transaction service: transactions, write ids, locks, compactions) and the
table reads, which come in two forms: ``TableReads`` takes the request's snapshot
(``valid_write_id_list``) and may answer with encoded bytes (``encoded``), for the handler;
``DatabaseTableReads`` is the database's form, which needs neither.

Each call says in a line or two what comes back and which declared Thrift exception it raises,
with Hive's message (``<...>`` stands for a name); the handler passes declared exceptions on to
the client (docs/architecture.md, "Conventions").

Thrift types (``hms.*``) come from an IDL loaded at run time, so the checker sees them as Any:
what it checks is that every call names a method that exists with those parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from hms_cache_proxy.idl import hms
from hms_cache_proxy.thrift_bytes import Encoded

AlterTablePrepare = Callable[[hms.Table, hms.Table, Callable[[str, str], bool]], hms.Table | None]
"""alter_table's ``prepare(before, new_table, exists)``: Hive's alter rules run inside the
write with the locked table as stored; ``exists(db, name)`` says whether a table of that name
exists in the catalog (in the same transaction). Returns the table to store (None: new_table)."""


class Metadata(Protocol):
    """Metadata calls that read and write the same way on every store."""

    # -- catalogs and databases ----------------------------------------------------------------

    def create_catalog(self, catalog: hms.Catalog) -> hms.Catalog:
        """The catalog as stored; AlreadyExistsException ``Catalog <name> already exists``."""

    def alter_catalog(self, name: str, catalog: hms.Catalog) -> None:
        """Replace a catalog's description and location; NoSuchObjectException ``No catalog
        <name>``, InvalidOperationException ``Cannot change the name of a catalog``."""

    def drop_catalog(self, name: str) -> None:
        """Drop an empty catalog; NoSuchObjectException ``No catalog <name>``, MetaException ``Can
        not drop hive catalog``, InvalidOperationException ``Cannot drop a catalog with databases in
        it``."""

    def get_catalog(self, name: str) -> hms.Catalog:
        """The catalog; NoSuchObjectException ``No catalog <name>``."""

    def get_catalogs(self) -> list[str]:
        """Every catalog's name."""

    def create_database(self, database: hms.Database) -> hms.Database:
        """The database as stored (location filled); AlreadyExistsException ``Database <name>
        already exists``, NoSuchObjectException ``No catalog <cat>``."""

    def alter_database(self, cat: str, name: str, database: hms.Database) -> None:
        """Replace a database's definition (ALTER_DATABASE event); NoSuchObjectException ``database
        <cat>.<db>`` when the database is missing."""

    def drop_database(self, cat: str, name: str, *, cascade: bool) -> hms.Database:
        """Drop a database (with its tables and functions when ``cascade``); returns it as it was.
        MetaException ``Can not drop default database in catalog hive``, InvalidOperationException
        ``Database <name> is not empty. One or more tables exist.`` (or functions),
        NoSuchObjectException ``database <cat>.<db>``."""

    def get_database(self, cat: str, name: str) -> hms.Database:
        """The database; NoSuchObjectException ``database <cat>.<db>`` when the database is
        missing."""

    def get_databases(self, cat: str, pattern: str | None = ...) -> list[str]:
        """Database names of a catalog matching Hive's ``pattern`` (all when None), sorted."""

    def database_locations(self) -> list[tuple[str, str, str | None, str | None]]:
        """(catalog, database, location, managed location) of every database: the roots of file
        confinement."""

    # -- tables ----------------------------------------------------------------------------------

    def create_table(
        self,
        table: hms.Table,
        *,
        valid_write_id_list: str | None = ...,
        constraints: hms.SQLAllTableConstraints | None = ...,
    ) -> hms.Table:
        """Store a table the handler completed; returns it as stored. AlreadyExistsException ``Table
        <cat>.<db>.<tbl> already exists``, NoSuchObjectException ``database <cat>.<db>`` when the
        database is missing."""

    def alter_table(
        self,
        cat: str,
        db: str,
        name: str,
        new_table: hms.Table,
        *,
        cascade: bool = ...,
        write_id: int | None = ...,
        valid_write_id_list: str | None = ...,
        is_truncate: bool = ...,
        prepare: AlterTablePrepare | None = ...,
        relocate: Sequence[tuple[str, str]] = ...,
        expected: tuple[str, str] | None = ...,
    ) -> tuple[hms.Table, hms.Table]:
        """Replace a table's definition in one transaction; returns (before, after) as stored.
        NoSuchObjectException ``<cat>.<db>.<tbl> table not found``; InvalidOperationException for a
        catalog change or an existing new name; MetaException ``The table has been modified...``
        when ``expected`` no longer holds."""

    def drop_table(
        self, cat: str, db: str, name: str, *, check: Any = ...
    ) -> tuple[hms.Table, list[str]]:
        """Drop a table (``check(table)`` may refuse it first); returns the table and the locations
        of its partitions. NoSuchObjectException ``<cat>.<db>.<tbl> table not found``."""

    def truncate_table(
        self,
        cat: str,
        db: str,
        name: str,
        part_names: Sequence[str] | None,
        *,
        empty: Callable[[str | None, list[str | None] | None], None],
        reset: Callable[[dict[str, str]], None],
        write_id: int | None = ...,
        valid_write_id_list: str | None = ...,
    ) -> None:
        """Empty a table or the named partitions (``empty`` the directories, ``reset`` each
        parameter map) under the table lock; NoSuchObjectException ``<cat>.<db>.<tbl> table not
        found``."""

    def get_tables_by_names(self, cat: str, db: str, names: Sequence[str]) -> list[hms.Table]:
        """The named tables that exist (others are left out); NoSuchObjectException ``database
        <cat>.<db>`` when the database is missing."""

    def get_table_names(
        self, cat: str, db: str, pattern: str | None = ..., table_type: str | None = ...
    ) -> list[str]:
        """Table names of a database matching ``pattern`` and ``table_type``, sorted;
        NoSuchObjectException ``database <cat>.<db>`` when the database is missing."""

    def get_table_meta(
        self,
        cat: str,
        db_pattern: str | None,
        tbl_pattern: str | None,
        types: Sequence[str] | None,
    ) -> list[hms.TableMeta]:
        """TableMeta of the tables whose database and name match the patterns and whose type is in
        ``types`` (all when None); nothing matching is an empty list."""

    def tables_using_locations(
        self, exact: Sequence[str], below: str
    ) -> list[tuple[str, str, str, str]]:
        """(cat, db, table, location) of the tables at one of ``exact`` or below ``below``: who else
        uses a directory before it is deleted."""

    # -- partitions ------------------------------------------------------------------------------

    def add_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        parts: Sequence[hms.Partition],
        *,
        if_not_exists: bool = ...,
        valid_write_id_list: str | None = ...,
        write_id: int | None = ...,
        prepare: Callable[
            [hms.Table, Callable[[Sequence[str]], set[str]]], list[tuple[str, hms.Partition]]
        ]
        | None = ...,
    ) -> list[hms.Partition]:
        """Add partitions in one transaction; returns those added, as stored. NoSuchObjectException
        ``<cat>.<db>.<tbl> table not found``, AlreadyExistsException ``Partition already exists:
        <table> <name>`` (unless ``if_not_exists``), MetaException ``Duplicate partitions in the
        list: <name>``."""

    def alter_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        new_parts: Sequence[hms.Partition],
        *,
        write_id: int | None = ...,
        valid_write_id_list: str | None = ...,
        prepare: Callable[[hms.Table, hms.Partition, hms.Partition], None] | None = ...,
        is_truncate: bool = ...,
    ) -> list[tuple[hms.Partition, hms.Partition]]:
        """Replace partitions found by their values; returns (before, after) pairs, as stored.
        ``prepare(table, before, after)`` runs per partition inside the transaction, the table
        as read there. NoSuchObjectException ``<cat>.<db>.<tbl> table not found``,
        NoSuchObjectException ``partition values=[...]`` for a missing one."""

    def rename_partition(
        self,
        cat: str,
        db: str,
        tbl: str,
        old_values: Sequence[str],
        new_part: hms.Partition,
        *,
        prepare: Callable[[hms.Table, hms.Partition, hms.Partition], None] | None = ...,
        valid_write_id_list: str | None = ...,
    ) -> tuple[hms.Partition, hms.Partition]:
        """Give a partition new values; returns (before, after), as stored.
        InvalidOperationException ``Unable to rename partition because old partition does not
        exist``, AlreadyExistsException ``Partition already exists:<db>.<tbl>.[...]``."""

    def drop_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        names: Sequence[str],
        *,
        if_exists: bool = ...,
        check: Callable[[hms.Table, list[hms.Partition]], None] | None = ...,
    ) -> tuple[hms.Table, list[hms.Partition]]:
        """Drop partitions by name; returns the table and the dropped partitions.
        NoSuchObjectException ``<cat>.<db>.<tbl> table not found``, NoSuchObjectException ``Some
        partitions to drop are missing`` (unless ``if_exists``)."""

    def exchange_partitions(
        self,
        cat: str,
        source_db: str,
        source_tbl: str,
        dest_db: str,
        dest_tbl: str,
        spec: Mapping[str, str],
        *,
        prepare: Callable[[hms.Table, hms.Table, list[tuple[hms.Partition, hms.Partition]]], None]
        | None = ...,
    ) -> list[hms.Partition]:
        """Move the partitions ``spec`` selects from the source table to the destination; returns
        them as added. MetaException with Hive's texts (``The tables have different schemas...``,
        ``The partition ... already exists in the table ...``, transactional tables refused)."""

    # -- column statistics -----------------------------------------------------------------------

    def get_table_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        col_names: Sequence[str],
        engine: str = ...,
        *,
        valid_write_id_list: str | None = ...,
        bit_vectors: bool | None = ...,
        histograms: bool | None = ...,
    ) -> hms.ColumnStatistics | None:
        """The table's statistics of ``col_names`` for ``engine`` (None when there are none);
        NoSuchObjectException ``<cat>.<db>.<tbl> table not found``. With a snapshot,
        isStatsCompliant says whether they are valid for it."""

    def partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str = ...,
        *,
        valid_write_id_list: str | None = ...,
        bit_vectors: bool | None = ...,
        histograms: bool | None = ...,
    ) -> list[hms.ColumnStatistics]:
        """One ColumnStatistics per named partition that has statistics of ``col_names``;
        NoSuchObjectException ``<cat>.<db>.<tbl> table not found``."""

    def get_partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str = ...,
        *,
        valid_write_id_list: str | None = ...,
    ) -> dict[str, list[hms.ColumnStatisticsObj]]:
        """Partition name -> its statistics objects of ``col_names``
        (get_partitions_statistics_req); NoSuchObjectException ``<cat>.<db>.<tbl> table not
        found``."""

    def get_aggr_stats_for(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str = ...,
        *,
        valid_write_id_list: str | None = ...,
    ) -> hms.AggrStats:
        """The statistics of ``col_names`` aggregated over the named partitions (partsFound: how
        many had them); empty where Hive answers null. NoSuchObjectException ``<cat>.<db>.<tbl>
        table not found``."""

    def update_table_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        stats: hms.ColumnStatistics,
        *,
        write_id: int | None = ...,
        valid_write_id_list: str | None = ...,
        merge: bool = ...,
    ) -> None:
        """Store (or with ``merge``, merge) a table's column statistics; NoSuchObjectException
        ``<cat>.<db>.<tbl> table not found``, MetaException for a write id of no open txn."""

    def update_partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        stats_list: Sequence[hms.ColumnStatistics],
        *,
        write_id: int | None = ...,
        valid_write_id_list: str | None = ...,
        merge: bool = ...,
    ) -> None:
        """Store partitions' column statistics; InvalidObjectException ``<table> table not found``,
        NoSuchObjectException ``Partition <name> for which stats is gathered doesn't exist.``,
        InvalidInputException ``The partition name must be set``."""

    def delete_table_column_statistics(
        self, cat: str, db: str, tbl: str, col_name: str | None, engine: str | None = ...
    ) -> None:
        """Delete a table's statistics of one column (all when None); NoSuchObjectException ``Column
        stats doesn't exist for ...``, MetaException for a transactional table."""

    def delete_partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_name: str,
        col_name: str | None,
        engine: str | None = ...,
    ) -> None:
        """Delete a partition's statistics of one column (all when None); InvalidObjectException
        ``<db>.<tbl> table not found``, NoSuchObjectException for a missing partition or
        statistics."""

    # -- constraints -----------------------------------------------------------------------------

    def get_table_constraints(
        self, cat: str, db: str, name: str, *, valid_write_id_list: str | None = ...
    ) -> hms.SQLAllTableConstraints:
        """Every constraint of the table (primary, foreign, unique, not null, default, check keys);
        empty lists when it has none."""

    def get_foreign_keys(
        self, cat: str, parent: tuple[str, str] | None, child: tuple[str, str] | None
    ) -> list[hms.SQLForeignKey]:
        """Foreign keys from ``child`` (db, table) to ``parent`` (either may be None: any table)."""

    def add_constraints(self, cat: str, constraints: hms.SQLAllTableConstraints) -> None:
        """Add constraints to existing tables; InvalidObjectException ``Parent table not found``,
        ``Constraint name already exists``, MetaException ``Primary key already exists for ...``."""

    def drop_constraint(self, cat: str, db: str, name: str, constraint: str) -> None:
        """Drop a table's constraint by name; NoSuchObjectException ``The constraint: <name> does
        not exist for the associated table``."""

    # -- functions -------------------------------------------------------------------------------

    def create_function(self, func: hms.Function) -> hms.Function:
        """The function as stored; NoSuchObjectException ``The database <db> does not exist``,
        AlreadyExistsException ``Function <name> already exists``."""

    def alter_function(self, cat: str, db: str, name: str, new_func: hms.Function) -> hms.Function:
        """Replace a function (a rename included); returns it as stored. MetaException ``function
        <name> doesn't exist``, InvalidObjectException for a missing or other-catalog database."""

    def drop_function(self, cat: str, db: str, name: str) -> hms.Function:
        """Drop a function; returns it as it was. NoSuchObjectException ``Function <name> does not
        exist``."""

    def get_function(self, cat: str, db: str, name: str) -> hms.Function:
        """The function; NoSuchObjectException ``Function <db>.<name> does not exist``."""

    def get_functions(self, cat: str, db: str, pattern: str | None = ...) -> list[str]:
        """Function names of a database matching ``pattern``, sorted."""

    def get_all_functions(self, cat: str = ...) -> list[hms.Function]:
        """Every function of the catalog."""

    # -- privileges and roles --------------------------------------------------------------------

    def grant_privileges(self, privileges: Sequence[hms.HiveObjectPrivilege]) -> None:
        """Grant every privilege or none (one transaction); InvalidObjectException for a privilege
        already granted."""

    def revoke_privileges(
        self, privileges: Sequence[hms.HiveObjectPrivilege], grant_option: bool
    ) -> None:
        """Revoke each privilege (with ``grant_option``, only its grant option);
        InvalidObjectException for a privilege not held."""

    def refresh_privileges(
        self,
        ref: hms.HiveObjectRef,
        authorizer: str | None,
        grants: Sequence[hms.HiveObjectPrivilege],
    ) -> None:
        """Replace every privilege ``authorizer`` holds on the object by ``grants``."""

    def list_privileges(
        self, principal: str | None, ptype: int | None, ref: hms.HiveObjectRef | None
    ) -> list[hms.HiveObjectPrivilege]:
        """The privileges a principal holds on ``ref`` (or on everything); MetaException
        ``list_privileges without an object needs a principal_name``."""

    def get_privilege_set(
        self, ref: hms.HiveObjectRef, user: str | None, groups: Sequence[str] | None
    ) -> hms.PrincipalPrivilegeSet:
        """The privileges ``user`` and ``groups`` (and their roles) hold on ``ref``, by
        principal."""

    def partition_privilege_sets(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_values: Iterable[Sequence[str]],
        user: str | None,
        groups: Sequence[str] | None,
    ) -> list[hms.PrincipalPrivilegeSet]:
        """The privilege set of each partition (by values) for ``user`` and ``groups``;
        NoSuchObjectException ``<cat>.<db>.<tbl> table not found``."""

    def create_role(self, name: str, owner: str | None) -> None:
        """Create a role; InvalidObjectException ``Role <name> already exists.``."""

    def drop_role(self, name: str) -> None:
        """Drop a role with its grants (a missing role is no error, as Hive answers true)."""

    def get_role_names(self) -> list[str]:
        """Every role's name."""

    def grant_role(
        self,
        role: str,
        principal: str,
        ptype: int,
        grantor: str | None,
        grantor_type: int | None,
        grant_option: bool,
    ) -> None:
        """Grant a role to a principal; NoSuchObjectException ``Role <name> does not exist``,
        InvalidObjectException ``Principal <p> already has the role <r>``, MetaException for a
        cycle."""

    def revoke_role(self, role: str, principal: str, ptype: int, grant_option: bool) -> None:
        """Revoke a role (or only its grant option); NoSuchObjectException ``Principal <p> does not
        have the role <r>``, MetaException ``User <p> does not have grant option with role <r>``."""

    def list_roles(self, principal: str, ptype: int) -> list[hms.Role]:
        """The roles granted to the principal (``public`` included for a user)."""

    def get_principals_in_role(self, role: str) -> list[hms.RolePrincipalGrant]:
        """Who holds the role, as RolePrincipalGrant."""

    def get_role_grants_for_principal(
        self, principal: str, ptype: int
    ) -> list[hms.RolePrincipalGrant]:
        """The roles the principal holds, as RolePrincipalGrant."""

    # -- scheduled queries and runtime statistics ------------------------------------------------

    def create_scheduled_query(self, query: hms.ScheduledQuery) -> None:
        """Create a scheduled query; AlreadyExistsException ``Scheduled query with name: <key>
        already exists.``, InvalidInputException ``Invalid schedule: ...``."""

    def alter_scheduled_query(self, query: hms.ScheduledQuery) -> None:
        """Replace a scheduled query's fields; NoSuchObjectException ``Scheduled query with name:
        <key> doesn't exists.``."""

    def drop_scheduled_query(self, key: hms.ScheduledQueryKey) -> None:
        """Drop a scheduled query; NoSuchObjectException ``Scheduled query with name: <key> doesn't
        exists.``."""

    def get_scheduled_query(self, key: hms.ScheduledQueryKey) -> hms.ScheduledQuery:
        """The scheduled query; NoSuchObjectException ``There is no scheduled query for: <key>``."""

    def poll_scheduled_query(self, namespace: str) -> hms.ScheduledQueryPollResponse:
        """The next due query of ``namespace`` as a new execution (an empty response when none is
        due)."""

    def scheduled_query_progress(self, info: hms.ScheduledQueryProgressInfo) -> None:
        """Record an execution's state; InvalidOperationException ``No scheduled execution with id
        <id>``, ``Invalid state change: <from>=><to>``, ``invalid state: <state>``."""

    def add_runtime_stat(self, weight: int, payload: bytes) -> None:
        """Store a runtime statistic (its weight and serialized payload)."""

    def get_runtime_stats(self, max_weight: int, max_create_time: int) -> list[hms.RuntimeStat]:
        """Runtime statistics created before ``max_create_time`` (seconds; -1: any), newest first,
        until their weight passes ``max_weight``."""


class TableReads(Protocol):
    """Table and partition reads as the handler makes them: with the request's snapshot
    (``valid_write_id_list``), and ``encoded`` where the answer may go out as Thrift bytes
    (thrift_bytes.Encoded) instead of objects."""

    def get_table(
        self,
        cat: str,
        db: str,
        name: str,
        *,
        valid_write_id_list: str | None = ...,
        encoded: bool = ...,
    ) -> Any:
        """The table (Encoded bytes with ``encoded``); NoSuchObjectException ``<cat>.<db>.<tbl>
        table not found``."""

    def get_partition(
        self,
        cat: str,
        db: str,
        tbl: str,
        values: Sequence[str],
        *,
        valid_write_id_list: str | None = ...,
        encoded: bool = ...,
    ) -> Any:
        """The partition with these values (Encoded with ``encoded``); NoSuchObjectException
        ``<cat>.<db>.<tbl> table not found``, NoSuchObjectException ``partition values=[...]``,
        MetaException for a wrong count of values."""

    def get_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        max_parts: int = ...,
        *,
        valid_write_id_list: str | None = ...,
        encoded: bool = ...,
    ) -> Any:
        """The table's partitions in name order, at most ``max_parts`` (-1: all);
        NoSuchObjectException ``<cat>.<db>.<tbl> table not found``."""

    def get_partitions_by_names(
        self,
        cat: str,
        db: str,
        tbl: str,
        names: Sequence[str],
        *,
        valid_write_id_list: str | None = ...,
        encoded: bool = ...,
    ) -> Any:
        """The named partitions that exist, in name order; NoSuchObjectException ``<cat>.<db>.<tbl>
        table not found``."""

    def get_partitions_by_filter(
        self,
        cat: str,
        db: str,
        tbl: str,
        filter_text: str,
        max_parts: int = ...,
        *,
        valid_write_id_list: str | None = ...,
        encoded: bool = ...,
    ) -> Any:
        """The partitions Hive's ``filter_text`` accepts, in name order; NoSuchObjectException
        ``<cat>.<db>.<tbl> table not found``."""

    def get_partitions_ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        partial: Sequence[str] | None,
        max_parts: int = ...,
        *,
        valid_write_id_list: str | None = ...,
        encoded: bool = ...,
    ) -> Any:
        """The partitions matching the partial values (``""``: any), in name order;
        NoSuchObjectException ``<cat>.<db>.<tbl> table not found``, MetaException ``Incorrect number
        of partition values...``."""

    def count_partitions_by_filter(
        self,
        cat: str,
        db: str,
        tbl: str,
        filter_text: str,
        *,
        valid_write_id_list: str | None = ...,
    ) -> int:
        """How many partitions ``filter_text`` accepts; as get_partitions_by_filter."""

    def get_partition_names(
        self,
        cat: str,
        db: str,
        tbl: str,
        max_parts: int = ...,
        *,
        valid_write_id_list: str | None = ...,
    ) -> list[str]:
        """Partition names in name order, at most ``max_parts``; NoSuchObjectException
        ``<cat>.<db>.<tbl> table not found``."""

    def get_partition_names_ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        partial: Sequence[str] | None,
        max_parts: int = ...,
        *,
        valid_write_id_list: str | None = ...,
    ) -> list[str]:
        """Names of the partitions matching the partial values; as get_partitions_ps."""

    def partition_values(
        self, cat: str, db: str, tbl: str, *, valid_write_id_list: str | None = ...
    ) -> tuple[list[hms.FieldSchema], list[tuple[str, list[str]]]]:
        """The partition keys and every partition's (name, values): get_partition_values' input;
        NoSuchObjectException ``<cat>.<db>.<tbl> table not found``."""

    def partition_count(
        self, cat: str, db: str, tbl: str, *, valid_write_id_list: str | None = ...
    ) -> int:
        """How many partitions the table has; NoSuchObjectException ``<cat>.<db>.<tbl> table not
        found``."""


class DatabaseTableReads(Protocol):
    """The same reads on the database: always current, so no snapshot; objects only."""

    def get_table(self, cat: str, db: str, name: str) -> hms.Table:
        """As ``TableReads.get_table``, from the database: current, objects only."""

    def get_partition(self, cat: str, db: str, tbl: str, values: Sequence[str]) -> hms.Partition:
        """As ``TableReads.get_partition``, from the database: current, objects only."""

    def get_partition_by_name(self, cat: str, db: str, tbl: str, name: str) -> hms.Partition:
        """The partition of that name; NoSuchObjectException ``partition <name> not found in
        <table>``."""

    def get_partitions(
        self, cat: str, db: str, tbl: str, max_parts: int = ...
    ) -> list[hms.Partition]:
        """As ``TableReads.get_partitions``, from the database: current, objects only."""

    def get_partitions_by_names(
        self, cat: str, db: str, tbl: str, names: Sequence[str]
    ) -> list[hms.Partition]:
        """As ``TableReads.get_partitions_by_names``, from the database: current, objects only."""

    def get_partitions_by_filter(
        self, cat: str, db: str, tbl: str, filter_text: str, max_parts: int = ...
    ) -> list[hms.Partition]:
        """As ``TableReads.get_partitions_by_filter``, from the database: current, objects only."""

    def get_partitions_ps(
        self, cat: str, db: str, tbl: str, partial: Sequence[str] | None, max_parts: int = ...
    ) -> list[hms.Partition]:
        """As ``TableReads.get_partitions_ps``, from the database: current, objects only."""

    def count_partitions_by_filter(self, cat: str, db: str, tbl: str, filter_text: str) -> int:
        """As ``TableReads.count_partitions_by_filter``, from the database: current, objects
        only."""

    def get_partition_names(self, cat: str, db: str, tbl: str, max_parts: int = ...) -> list[str]:
        """As ``TableReads.get_partition_names``, from the database: current, objects only."""

    def get_partition_names_by_filter(
        self, cat: str, db: str, tbl: str, filter_text: str, max_parts: int = ...
    ) -> list[str]:
        """As ``TableReads.get_partition_names_by_filter``, from the database: current, objects
        only."""

    def get_partition_names_ps(
        self, cat: str, db: str, tbl: str, partial: Sequence[str] | None, max_parts: int = ...
    ) -> list[str]:
        """As ``TableReads.get_partition_names_ps``, from the database: current, objects only."""

    def partition_values(
        self, cat: str, db: str, tbl: str
    ) -> tuple[list[hms.FieldSchema], list[tuple[str, list[str]]]]:
        """As ``TableReads.partition_values``, from the database: current, objects only."""

    def partition_count(self, cat: str, db: str, tbl: str) -> int:
        """As ``TableReads.partition_count``, from the database: current, objects only."""


class Events(Protocol):
    """The notification log: reading it, and the writes whose only effect is an event or a
    mark beside the log (insert events, write notifications, partition event marks)."""

    def current_notification_event_id(self) -> int:
        """The id of the newest event in NOTIFICATION_LOG."""

    def next_notifications(
        self,
        last_event: int,
        max_events: int | None,
        skip_types: Sequence[str] = ...,
        *,
        encoded: bool = ...,
    ) -> Any:
        """Events after ``last_event`` in id order, at most ``max_events``, without
        ``skip_types``: a list of NotificationEvents, or with ``encoded`` possibly their
        Encoded list (thrift_bytes.Encoded) instead."""

    def notification_events_count(
        self,
        from_event: int,
        db_name: str,
        cat_name: str | None = ...,
        to_event: int | None = ...,
        limit: int | None = ...,
        table_names: Sequence[str] | None = ...,
    ) -> int:
        """How many events of the database (and ``table_names``) follow ``from_event`` (up to
        ``to_event``, at most ``limit``)."""

    def metastore_db_uuid(self) -> str:
        """The metastore database's UUID (METASTORE_DB_PROPERTIES), made once."""

    def fire_insert_events(
        self,
        cat: str,
        db: str,
        tbl: str,
        inserts: Sequence[tuple[list[str] | None, hms.InsertEventRequestData]],
    ) -> list[int]:
        """Write one INSERT event per (partition values or None, data); returns their ids.
        NoSuchObjectException ``<cat>.<db>.<tbl> table not found``, NoSuchObjectException for a
        missing partition."""

    def add_write_notifications(
        self, cat: str, db: str, tbl: str, requests: Sequence[hms.WriteNotificationLogRequest]
    ) -> None:
        """Record each write's files (TXN_WRITE_NOTIFICATION_LOG) and its ACID_WRITE event."""

    def write_event_info(
        self, txn_id: int, db: str | None, tbl: str | None
    ) -> list[hms.WriteEventInfo]:
        """The write notifications of a txn (for one database/table when given)."""

    def repl_commit_txn(
        self, cat: str, policy: str, src_txn: int, infos: Sequence[hms.WriteEventInfo]
    ) -> None:
        """On a replication target: store the replayed txn's write notifications and commit it."""

    def mark_partition_for_event(
        self, cat: str, db: str, table: str, partition: str, event_type: int
    ) -> None:
        """Mark a partition for an event type (PARTITION_EVENTS)."""

    def is_partition_marked_for_event(
        self, cat: str, db: str, table: str, partition: str, event_type: int
    ) -> bool:
        """Whether the partition carries that mark."""


class Transactions(Protocol):
    """The transaction service (``store.txn``): Hive's TxnHandler calls.

    ``<txn>`` stands for Hive's ``txnid:<id>`` and ``<lock>`` for ``lockid:<id>``. A call on a
    txn that is not open raises as TxnUtils.raiseTxnUnexpectedState: TxnAbortedException
    ``Transaction <txn> already aborted``, NoSuchTxnException ``Transaction <txn> is already
    committed.`` or ``No such transaction <txn>`` (below: "not open").
    """

    # -- transactions ----------------------------------------------------------------------------

    def open_txns(
        self,
        num_txns: int,
        user: str,
        host: str,
        agent_info: str | None = ...,
        txn_type: int = ...,
    ) -> list[int]:
        """The new txn ids, ascending (at most metastore.txn.max.open.batch); MetaException
        ``Invalid input for number of txns: <n>``, or ``Could not open transactions within
        metastore.txn.opentxn.timeout ...``."""
        ...

    def commit_txn(
        self, txn_id: int, key_value: Any | None = ..., excl_write_enabled: bool = ...
    ) -> None:
        """Commit (a committed txn again: nothing); not open: TxnAbortedException /
        NoSuchTxnException; a write conflict aborts it: TxnAbortedException ``Aborting
        [<txn>,<commit id>] due to a write conflict on <db>/<table>[/<part>] ...``;
        MetaException ``Error updating key/value in the sql backend with txnId=<id>, ...``
        (a ``key_value`` key not starting with ``_meta``, or not one row changed)."""
        ...

    def abort_txn(self, txn_id: int, error_code: int | None = ...) -> None:
        """Abort (an aborted txn again: nothing); NoSuchTxnException ``Transaction <txn> is
        already committed.`` or ``No such transaction <txn>``."""
        ...

    def abort_txns(self, txn_ids: Sequence[int], error_code: int | None = ...) -> int:
        """Abort those of the txns that are open (the others are skipped, as Hive); the count."""
        ...

    def get_open_txns(self, exclude_types: Iterable[int] = ...) -> Any:
        """GetOpenTxnsResponse: the high-water mark, the open and aborted txns (READ_ONLY
        ones left out) with abortedBits; MetaException when TXNS misses more ids than
        max_gap_fill inside the open window."""
        ...

    def get_open_txns_info(self) -> Any:
        """GetOpenTxnsInfoResponse: every open or aborted txn with its user, host and times."""
        ...

    def heartbeat(self, lock_id: int | None, txn_id: int | None) -> None:
        """Heartbeat the lock, then the txn; NoSuchLockException ``No such lock: <lock>``;
        txn not open: TxnAbortedException / NoSuchTxnException."""
        ...

    def heartbeat_txn_range(self, low: int, high: int) -> tuple[set[int], set[int]]:
        """Heartbeat the open txns of ``low..high``; (aborted, no such) among the others;
        MetaException when the range is longer than max_heartbeat_range."""
        ...

    def latest_txn_in_conflict(self, txn_id: int) -> int:
        """Hive's getLatestTxnIdInConflict: the newest committed txn that updated or deleted
        what ``txn_id`` did, -1 for none."""
        ...

    def add_dynamic_partitions(
        self,
        txn_id: int,
        write_id: int,
        db: str,
        table: str,
        partition_names: Sequence[str],
        operation_type: int | None,
    ) -> None:
        """Record the partitions the txn wrote in place of its table-level component; txn not
        open: TxnAbortedException / NoSuchTxnException."""
        ...

    def databases_touched(
        self, txn_ids: Sequence[int] = ..., lock_ids: Sequence[int] = ...
    ) -> set[str]:
        """The databases the transactions and locks name: handler/access.py lets a client
        commit, abort or unlock them only when it may use every one."""
        ...

    # -- write ids -------------------------------------------------------------------------------

    def allocate_table_write_ids(
        self, db: str, table: str, txn_ids: Sequence[int]
    ) -> list[tuple[int, int]]:
        """(txn, write id) per txn, ascending, a txn's earlier one reused; a txn not open:
        TxnAbortedException / NoSuchTxnException; MetaException ``Write ID allocation failed
        on <db>.<table> as not all input txns in open state or read-only``."""
        ...

    def get_valid_write_ids(
        self,
        full_table_names: Sequence[str],
        valid_txn_list: str | None = ...,
        write_id: int | None = ...,
    ) -> list[Any]:
        """TableValidWriteIds per table under the given ValidTxnList (else that of the txn of
        ``write_id``, else now); MetaException ``Invalid validTxnList: ...``, ``invalid write
        id <n> for table <db>.<table>``, ``Invalid table name ...``."""
        ...

    def max_allocated_write_id(self, db: str, table: str) -> int:
        """The table's highest allocated write id, 0 when it never had one."""
        ...

    def seed_write_id(self, db: str, table: str, seed: int) -> None:
        """Start the table's write ids after ``seed``; MetaException ``Unable to update
        transaction database: <db>.<table> already has write ids``."""
        ...

    # -- replayed transactions (REPL LOAD on a target) ------------------------------------------

    def repl_open_txns(
        self, policy: str, src_ids: Sequence[int], user: str, host: str, agent_info: str | None
    ) -> list[int]:
        """The target txns (REPL_CREATED) of the source txns, ascending; those already mapped
        if any are; MetaException ``replSrcTxnIds must name the source txns`` or over
        metastore.txn.max.open.batch."""
        ...

    def repl_allocate_write_ids(
        self, db: str, table: str, policy: str, src_pairs: Sequence[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """(target txn, source write id) per pair; [] when a source txn is no longer mapped;
        MetaException ``srcTxnToWriteIdList must not be empty`` or ``Write ID allocation
        failed on <db>.<table> ...``."""
        ...

    def repl_table_write_id_state(
        self, valid_write_ids: str, db: str, table: str, part_names: Sequence[str] = ...
    ) -> None:
        """Seed a bootstrapped table's write ids from the source's ValidWriteIdList (nothing
        when it has write ids); ValueError for an unreadable list (the handler's
        MetaException ``invalid validWriteIdlist ...``)."""
        ...

    def repl_abort_txn(self, policy: str, src_txn: int) -> None:
        """Abort the target txn of a replayed abort (nothing when not mapped or aborted);
        NoSuchTxnException ``Transaction <txn> is already committed.``."""
        ...

    def load_open_txn(self, user: str, host: str, agent_info: str | None) -> int:
        """REPL LOAD's own txn id (DEFAULT, no OPEN_TXN event)."""
        ...

    def load_commit_txn(self, txn_id: int) -> None:
        """Commit REPL LOAD's own txn without an event (again: nothing); not open:
        TxnAbortedException / NoSuchTxnException; MetaException when it holds write ids."""
        ...

    def load_abort_txn(self, txn_id: int) -> None:
        """Abort REPL LOAD's own txn without an event (again: nothing); NoSuchTxnException
        when it is committed or unknown."""
        ...

    # -- locks -----------------------------------------------------------------------------------

    def lock(self, rqst: Any) -> Any:
        """LockResponse (ACQUIRED, or WAITING with the blocker recorded); the txn not open:
        TxnAbortedException / NoSuchTxnException; MetaException ``LockRequest has no
        components``, ``Couldn't find a lock we just created! ...``."""
        ...

    def check_lock(self, ext_id: int) -> Any:
        """Heartbeat and retry the lock: LockResponse; NoSuchLockException ``No such lock
        <lock>``; its txn not open: TxnAbortedException / NoSuchTxnException."""
        ...

    def unlock(self, ext_id: int) -> None:
        """Release a txn-less lock or a waiting one (no such lock: nothing); TxnOpenException
        ``Unlocking locks associated with transaction not permitted.  <lock row>``."""
        ...

    def show_locks(
        self,
        db: str | None = ...,
        table: str | None = ...,
        partition: str | None = ...,
        txn_id: int | None = ...,
    ) -> list[Any]:
        """ShowLocksResponseElements of the matching locks, acquired first."""
        ...

    # -- compactions and materialized views ------------------------------------------------------

    def compact(self, rqst: Any) -> hms.CompactionResponse:
        """CompactionResponse: the queued id, or accepted=False ``Compaction is already
        scheduled with state='<state>' and id=<id>``; MetaException ``Unexpected compaction
        type ...``."""
        ...

    def show_compact(self, rqst: Any) -> hms.ShowCompactResponse:
        """The queue and the history as the request filters them, latest first; MetaException
        ``Unknown compaction state ...`` or an unknown order column."""
        ...

    def abort_compactions(self, ids: Sequence[int]) -> hms.AbortCompactResponse:
        """Per id: aborted if it was initiated, else its status (``No Such Compaction Id
        Available``)."""
        ...

    def latest_committed_compactions(
        self, db: str, table: str, partitions: Sequence[str] | None, after_id: int | None
    ) -> list[hms.CompactionInfoStruct]:
        """Per table or partition the newest compaction whose result is committed, after
        ``after_id`` when given."""
        ...

    def find_next_compact(
        self, worker_id: str | None, worker_version: str | None, pool: str | None
    ) -> hms.CompactionInfoStruct | None:
        """The oldest initiated request of the pool, now the worker's; None when there is none."""
        ...

    def find_columns_with_stats(self, ci: Any) -> list[str]:
        """The columns with statistics in the compacted table or partition."""
        ...

    def update_compactor_state(self, ci: Any, txn_id: int) -> None:
        """Record the worker's compactor txn; MetaException ``No compaction with id <id> in
        the queue``."""
        ...

    def set_hadoop_jobid(self, job_id: str | None, cq_id: int) -> None:
        """Record the compaction's job; MetaException ``No compaction with id <id> in the
        queue``."""
        ...

    def mark_compacted(self, ci: Any) -> None:
        """Ready for cleaning; MetaException ``No compaction with id <id> in the queue``."""
        ...

    def mark_cleaned(self, ci: Any) -> None:
        """To history as succeeded, obsolete components dropped; MetaException ``No compaction
        with id <id> in the queue``."""
        ...

    def mark_failed(self, ci: Any, state: str = ...) -> None:
        """To history as failed (or refused); MetaException ``No record with CQ_ID=<id> found
        in COMPACTION_QUEUE``."""
        ...

    def materialization_invalidation_info(
        self, tables_used: list[str], view_txn_list: str | None, valid_txn_list: str | None
    ) -> hms.Materialization | None:
        """Whether the view's source tables changed since its snapshot (None: no sources, or
        Iceberg ones); MetaException ``Invalid validTxnList of the view: ...``."""
        ...

    def update_transaction_statistics(
        self, table_id: int, inserted: int, updated: int, deleted: int
    ) -> None:
        """Add a txn's row counts to every materialized view using the table."""
        ...


class DatabaseStore(Metadata, DatabaseTableReads, Events, Protocol):
    """The SQL store, as the caching and direct stores use it."""

    @property
    def txn(self) -> Transactions: ...

    # The statistics settings and flags the caching store answers statistics reads with.
    @property
    def txn_stats_enabled(self) -> bool: ...
    @property
    def stats_ndv_tuner(self) -> float: ...
    @property
    def stats_ndv_density_function(self) -> bool: ...
    def fetch_flags(
        self, bit_vectors: bool | None = ..., histograms: bool | None = ...
    ) -> dict[str, bool]: ...

    def all_partitions_encoded(self, cat: str, db: str, tbl: str) -> Encoded:
        """get_partitions of a whole table, encoded straight from the rows."""
        ...


class HandlerStore(Metadata, TableReads, Events, Protocol):
    """What the handler talks to: the caching store, or the direct store without a cache."""

    @property
    def txn(self) -> Transactions: ...

    def flush_all(self) -> int:
        """Empty the cache (flushCache); the number of entries dropped."""
        ...

    def notification_event_id(self) -> int:
        """What ``get_current_notificationEventId`` answers: the newest event id the answers
        of ``next_notifications`` reach, never below an event this process committed."""
        ...
