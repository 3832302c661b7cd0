"""Read-only mode, database allow-lists and admin calls, enforced between the processor and
the handler.

``guard(handler, settings)`` returns the handler itself when none is configured (no cost
per call); otherwise an object exposing the same methods, where each call that writes is
refused in read-only mode, each call naming a database outside the client's allow-list
answers as if that database did not exist, lists (databases, table metas, notification
events, functions, locks) leave hidden databases out, events naming a hidden database in
their message are hidden too, transactions and locks by id may be finished only by a client
allowed on every database they touch, and admin calls (flushCache) need an admin user.

Every method the handler implements is classified here: WRITE_CALLS or READ_CALLS for
read-only mode; for the allow-list either a database is found in its arguments (by field
name, see ``_db_paths``), or its result is filtered (FILTERED_CALLS), or it touches no database
(GLOBAL_CALLS). tests/unit/test_access.py checks that nothing is left unclassified.
"""

from __future__ import annotations

import copy
import functools
import logging
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from thriftpy2.thrift import TApplicationException, TType

from hms_cache_proxy import thrift_bytes
from hms_cache_proxy.config import Settings
from hms_cache_proxy.handler.base import HandlerBase
from hms_cache_proxy.handler.databases import database_ref
from hms_cache_proxy.idl import hms, service
from hms_cache_proxy.store.events.databases import event_databases
from hms_cache_proxy.thrift_bytes import Encoded

log = logging.getLogger(__name__)


def _calls(text: str) -> frozenset[str]:
    return frozenset(text.split())


# -- read-only -------------------------------------------------------------------------------------

WRITE_CALLS = _calls(
    """
    create_catalog alter_catalog drop_catalog create_database drop_database
    drop_database_req alter_database create_table create_table_with_environment_context
    create_table_with_constraints create_table_req drop_table
    drop_table_with_environment_context truncate_table truncate_table_req alter_table
    alter_table_with_environment_context alter_table_with_cascade alter_table_req
    add_partition add_partition_with_environment_context add_partitions add_partitions_pspec
    add_partitions_req append_partition append_partition_with_environment_context
    append_partition_by_name append_partition_by_name_with_environment_context
    drop_partition drop_partition_with_environment_context drop_partition_by_name
    drop_partition_by_name_with_environment_context drop_partitions_req exchange_partition
    exchange_partitions alter_partition alter_partitions
    alter_partitions_with_environment_context alter_partitions_req
    alter_partition_with_environment_context rename_partition rename_partition_req
    update_table_column_statistics update_partition_column_statistics
    update_table_column_statistics_req update_partition_column_statistics_req
    set_aggr_stats_for delete_partition_column_statistics delete_table_column_statistics
    create_function drop_function alter_function open_txns abort_txn abort_txns commit_txn
    allocate_table_write_ids seed_write_id repl_tbl_writeid_state lock check_lock unlock heartbeat
    heartbeat_txn_range add_dynamic_partitions fire_listener_event flushCache
    add_primary_key add_foreign_key add_unique_constraint add_not_null_constraint
    add_default_constraint add_check_constraint drop_constraint
    add_write_notification_log add_write_notification_log_in_batch
    create_role drop_role grant_role revoke_role grant_revoke_role grant_privileges
    revoke_privileges grant_revoke_privileges refresh_privileges
    compact compact2 abort_Compactions find_next_compact find_next_compact2
    update_compactor_state set_hadoop_jobid mark_compacted mark_cleaned mark_failed
    mark_refused markPartitionForEvent
    scheduled_query_maintenance scheduled_query_poll scheduled_query_progress add_runtime_stats
    update_transaction_statistics
    """
)
"""Calls that change the metastore (metadata, statistics, transactions, locks, events) or
this instance's state (flushCache)."""

READ_CALLS = _calls(
    """
    getMetaConf setMetaConf get_catalog get_catalogs get_database get_database_req
    get_databases get_all_databases get_fields get_fields_with_environment_context
    get_fields_req get_schema get_schema_with_environment_context get_schema_req get_tables
    get_tables_by_type get_table_meta get_all_tables get_table get_table_objects_by_name
    get_table_req get_table_objects_by_name_req get_partition get_partition_req
    get_partition_with_auth get_partition_by_name get_partitions get_partitions_req
    get_partitions_with_auth get_partition_names get_partition_values get_partitions_ps
    get_partitions_ps_with_auth get_partitions_ps_with_auth_req get_partition_names_ps
    get_partition_names_ps_req get_partition_names_req get_partitions_by_filter
    get_partitions_by_expr get_partitions_spec_by_expr get_num_partitions_by_filter
    get_partitions_by_names get_partitions_by_names_req get_config_value
    get_table_column_statistics get_partition_column_statistics get_table_statistics_req
    get_partitions_statistics_req get_aggr_stats_for get_functions get_function
    get_all_functions set_ugi get_open_txns get_open_txns_info get_latest_txnid_in_conflict
    get_valid_write_ids get_max_allocated_table_write_id show_locks get_next_notification
    get_current_notificationEventId get_notification_events_count
    get_metastore_db_uuid get_open_txns_req getName getVersion getStatus getStatusDetails
    getCounters getCounter setOption getOption getOptions getCpuProfile aliveSince
    reinitialize shutdown
    get_primary_keys get_foreign_keys get_unique_constraints get_not_null_constraints
    get_default_constraints get_check_constraints get_all_table_constraints
    get_all_write_event_info
    get_role_names list_roles get_principals_in_role get_role_grants_for_principal
    get_privilege_set list_privileges
    show_compact get_latest_committed_compaction_info find_columns_with_stats
    get_table_names_by_filter partition_name_has_valid_characters partition_name_to_vals
    partition_name_to_spec isPartitionMarkedForEvent
    get_partitions_pspec get_part_specs_by_filter get_partitions_with_specs get_tables_ext
    get_scheduled_query get_runtime_stats get_materialization_invalidation_info
    """
)
"""Calls that leave the metastore as it is (session settings and fb303 included)."""

READ_ONLY_MESSAGE = (
    "this metastore is read-only (read_only: true); send writes to a writable instance"
)

# -- allow-lists -----------------------------------------------------------------------------------

GLOBAL_CALLS = _calls(
    """
    getMetaConf setMetaConf create_catalog alter_catalog get_catalog get_catalogs
    drop_catalog get_config_value set_ugi get_open_txns get_open_txns_info open_txns
    abort_txn abort_txns commit_txn get_latest_txnid_in_conflict check_lock unlock heartbeat
    heartbeat_txn_range get_current_notificationEventId flushCache get_metastore_db_uuid
    get_open_txns_req getName getVersion getStatus getStatusDetails getCounters getCounter
    setOption getOption getOptions getCpuProfile aliveSince reinitialize shutdown
    create_role drop_role get_role_names grant_role revoke_role list_roles grant_revoke_role
    get_principals_in_role get_role_grants_for_principal
    abort_Compactions find_next_compact find_next_compact2 set_hadoop_jobid
    partition_name_has_valid_characters partition_name_to_vals partition_name_to_spec
    scheduled_query_maintenance scheduled_query_poll scheduled_query_progress get_scheduled_query
    add_runtime_stats get_runtime_stats update_transaction_statistics
    """
)
"""Calls that name no database (catalogs, transactions by id, session, fb303)."""

FILTERED_CALLS = _calls(
    """
    get_databases get_all_databases get_table_meta get_next_notification get_all_functions
    show_locks get_notification_events_count
    list_privileges
    show_compact
    """
)
"""Calls whose results list several databases' objects: hidden ones are left out."""

DB_ARGS = frozenset({"db_name", "dbname", "dbName", "source_db", "dest_db"})
"""Argument and struct field names that hold a database name."""
DB_FIELDS = DB_ARGS | {
    "table_db",
    "pktable_db",
    "fktable_db",
    "parent_db_name",  # ForeignKeysRequest
    "foreign_db_name",
    "db",  # WriteNotificationLogRequest, WriteNotificationLogBatchRequest
}
EMPTY_WHEN_ABSENT = _calls(
    "get_tables get_tables_by_type get_all_tables get_functions get_tables_ext"
)
"""Calls that answer an absent database with an empty list (so also a hidden one)."""
NAME_IS_DB = frozenset({"get_database", "drop_database"})
"""Calls whose ``name`` argument is a database name."""
NAME_FIELD_STRUCTS = (hms.Database, hms.GetDatabaseRequest, hms.DropDatabaseRequest)
"""Structs whose ``name`` field is a database name."""

_session = threading.local()


def set_user(user: str | None) -> None:
    """The authenticated user of this connection's thread (set after SASL negotiation)."""
    _session.user = user


def current_user() -> str | None:
    return getattr(_session, "user", None)


class DatabaseRules:
    """Which databases a client may see: regexes, full match on the name, any case."""

    def __init__(self, default: Iterable[str], by_user: dict[str, list[str]]) -> None:
        self.default = _compile(default)
        self.by_user = {user: _compile(patterns) for user, patterns in by_user.items()}

    @property
    def everything(self) -> bool:
        return self.default is None and not self.by_user

    def visible(self) -> Callable[[str | None], bool]:
        """A test for the current connection (its SASL user's list, else the default)."""
        user = current_user()
        regex = self.by_user.get(user, self.default) if user is not None else self.default
        if regex is None:
            return _all
        return lambda db: db is None or regex.fullmatch(db) is not None


def _all(_db: str | None) -> bool:
    return True


def _compile(patterns: Iterable[str]) -> re.Pattern[str] | None:
    patterns = list(patterns)
    if any(p in (".*", ".+") for p in patterns):
        return None
    if not patterns:
        return re.compile(r"(?!)")  # matches nothing
    try:
        return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"allowed_databases: invalid regular expression: {exc}") from None


ADMIN_CALLS = _calls("flushCache")
"""Calls that change this instance's state for every client: admin users only."""


def admins_only(settings: Any, rules: DatabaseRules) -> bool:
    """Whether admin calls are limited to ``admin_users``: as soon as clients are told apart
    (SASL, allow-lists) or admins are named. An open service (neither) lets everyone."""
    named = getattr(settings, "admin_users", None)
    return bool(getattr(settings, "sasl_enabled", False) or named or not rules.everything)


def guard(handler: HandlerBase, settings: Settings) -> Any:
    """The handler, wrapped only where read_only, allow-lists or admin rights ask for it.

    ``handler`` is typed so that every store call made here (``handler.store``) is checked
    against the store contract (store/api.py): a call no store declares fails the type check
    instead of answering clients with an AttributeError."""
    rules = DatabaseRules(settings.allowed_databases, settings.allowed_databases_by_user)
    admins = (
        frozenset(getattr(settings, "admin_users", ())) if admins_only(settings, rules) else None
    )
    if not settings.read_only and rules.everything and admins is None:
        return handler
    wrapped: dict[str, Callable[..., Any]] = {}
    for name in service.thrift_services:
        fn = getattr(handler, name, None)
        if fn is None:
            continue
        if settings.read_only and name in WRITE_CALLS:
            fn = _refuse(name)
        elif not rules.everything:
            fn = _scoped(name, fn, handler, rules)
        elif admins is None or name not in ADMIN_CALLS:
            continue
        if admins is not None and name in ADMIN_CALLS and not settings.read_only:
            fn = _admin_only(name, fn, admins)
        wrapped[name] = fn
    if settings.read_only:
        log.info("read_only: every call that writes is refused")
    if not rules.everything:
        log.info(
            "database allow-list: %s (per user: %s)",
            list(settings.allowed_databases),
            sorted(settings.allowed_databases_by_user),
        )
    return _Guarded(handler, wrapped)


class _Guarded:
    """The handler's methods, some replaced."""

    def __init__(self, handler: HandlerBase, wrapped: dict[str, Callable[..., Any]]) -> None:
        self._handler = handler
        self.__dict__.update(wrapped)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handler, name)


def _declared(api: str) -> list[type]:
    result = getattr(service, api + "_result")
    return [spec[2] for fid, spec in sorted(result.thrift_spec.items()) if fid != 0]


def _refuse(api: str) -> Callable[..., Any]:
    declared = _declared(api)

    def refuse(*_args: Any) -> Any:
        if hms.MetaException in declared:
            raise hms.MetaException(message=READ_ONLY_MESSAGE)
        raise TApplicationException(TApplicationException.INTERNAL_ERROR, READ_ONLY_MESSAGE)

    return refuse


def _admin_only(api: str, fn: Callable[..., Any], admins: frozenset[str]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        user = current_user()
        if user is None or user not in admins:
            who = "a client without SASL" if user is None else f"user {user!r}"
            raise TApplicationException(
                TApplicationException.INTERNAL_ERROR,
                f"{api} needs an admin user (admin_users); {who} is not one",
            )
        return fn(*args)

    return call


def _declared_not_found(cls: Callable[..., Exception], cat: str, db: str) -> Exception:
    return cls(message=database_ref(cat, db))


def _not_found(api: str) -> Callable[[str, str], Exception]:
    """The error a call declares for an absent database (NoSuchObject, UnknownDB, Meta)."""
    if api == "create_database":  # "does not exist" would make no sense here
        return lambda cat, db: hms.MetaException(
            message=f"database {cat}.{db} may not be created here (allowed_databases)"
        )
    declared = _declared(api)
    for cls in (hms.NoSuchObjectException, hms.UnknownDBException, hms.MetaException):
        if cls in declared:  # worded as get_database words an absent database
            return functools.partial(_declared_not_found, cls)
    return lambda cat, db: TApplicationException(
        TApplicationException.INTERNAL_ERROR, database_ref(cat, db)
    )


def _scoped(
    api: str, fn: Callable[..., Any], handler: HandlerBase, rules: DatabaseRules
) -> Callable[..., Any]:
    arg_specs = [spec for _, spec in sorted(getattr(service, api + "_args").thrift_spec.items())]
    paths = [(i, spec) for i, spec in enumerate(arg_specs) if _has_db(api, spec)]
    not_found = _not_found(api)
    empty = api in EMPTY_WHEN_ABSENT
    filter_result = _RESULT_FILTERS.get(api)
    owned = _OWNED.get(api)
    counted = api == "get_notification_events_count"
    paged = api == "get_next_notification"

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        visible = rules.visible()
        if visible is _all:
            return fn(*args)
        for i, spec in paths:
            for name in _db_names(api, spec, args[i], 0):
                cat, db = _split(handler, name)
                if db and not visible(db):
                    if empty:
                        return []
                    raise not_found(cat, db)
        replayed = _check_repl_policy(api, args, visible)
        if owned is not None and not replayed:
            _check_owned(api, handler, owned(*args), visible)
        if counted:
            return _visible_events_count(handler, args[0], visible)
        if paged:
            return _visible_events(fn, args[0], visible, handler.settings.notification_max_events)
        result = fn(*args)
        return filter_result(result, visible) if filter_result is not None else result

    return call


def _split(handler: HandlerBase, name: str) -> tuple[str, str | None]:
    try:
        return handler.split_db(name)
    except Exception:  # noqa: BLE001 - a malformed name is the handler's to refuse
        return "hive", None


# -- finding database names in arguments -----------------------------------------------------------


def _has_db(api: str, spec: tuple[Any, ...], depth: int = 0) -> bool:
    """Whether an argument (by its Thrift spec) can carry a database name."""
    ttype, name = spec[0], spec[1]
    if ttype == TType.STRING:
        return depth == 0 and (name in DB_ARGS or (name == "name" and api in NAME_IS_DB))
    if ttype == TType.STRUCT:
        return _struct_has_db(spec[2], depth)
    if ttype == TType.LIST and isinstance(spec[2], tuple) and spec[2][0] == TType.STRUCT:
        return _struct_has_db(spec[2][1], depth)
    return False


@functools.cache
def _struct_has_db(cls: type[Any], depth: int) -> bool:
    if depth > 3:
        return False
    if cls in NAME_FIELD_STRUCTS or cls in (hms.GetValidWriteIdsRequest, hms.GetTablesExtRequest):
        return True
    for spec in cls.thrift_spec.values():
        if spec[0] == TType.STRING and spec[1] in DB_FIELDS:
            return True
        if spec[0] in (TType.STRUCT, TType.LIST) and _has_db("", spec, depth + 1):
            return True
    return False


def _db_names(api: str, spec: tuple[Any, ...], value: Any, depth: int) -> Iterable[str]:
    """The database names in one argument value, following the spec (a few levels deep)."""
    if value is None or depth > 3:
        return
    ttype = spec[0]
    if ttype == TType.STRING:
        if isinstance(value, str):
            yield value
    elif ttype == TType.STRUCT:
        yield from _struct_db_names(value, depth)
    elif ttype == TType.LIST and isinstance(spec[2], tuple) and spec[2][0] == TType.STRUCT:
        for item in value:
            yield from _struct_db_names(item, depth)


def _struct_db_names(obj: Any, depth: int) -> Iterable[str]:
    if obj is None or not _struct_has_db(obj.__class__, depth):
        return
    if isinstance(obj, NAME_FIELD_STRUCTS) and isinstance(obj.name, str):
        yield obj.name
    if isinstance(obj, hms.GetValidWriteIdsRequest):
        for full in obj.fullTableNames or ():
            yield full.split(".", 1)[0]
    if isinstance(obj, hms.GetTablesExtRequest) and isinstance(obj.database, str):
        yield obj.database
    for spec in obj.thrift_spec.values():
        ttype, field = spec[0], spec[1]
        value = getattr(obj, field, None)
        if value is None:
            continue
        if ttype == TType.STRING:
            if field in DB_FIELDS and isinstance(value, str):
                yield value
        elif ttype in (TType.STRUCT, TType.LIST):
            yield from _db_names("", spec, value, depth + 1)


# -- transactions and locks by id ------------------------------------------------------------------


def _txn_ids(field: str) -> Callable[..., dict[str, list[int]]]:
    def ids(rqst: Any = None, *_rest: Any) -> dict[str, list[int]]:
        value = getattr(rqst, field, None)
        listed = value if isinstance(value, list) else [value]
        return {"txn_ids": [int(v) for v in listed if isinstance(v, int)]}

    return ids


def _lock_ids(rqst: Any = None, *_rest: Any) -> dict[str, list[int]]:
    lock = getattr(rqst, "lockid", None)
    return {"lock_ids": [lock] if isinstance(lock, int) else []}


_OWNED: dict[str, Callable[..., dict[str, list[int]]]] = {
    "commit_txn": _txn_ids("txnid"),
    "abort_txn": _txn_ids("txnid"),
    "abort_txns": _txn_ids("txn_ids"),
    "unlock": _lock_ids,
}
"""Calls that act on transactions or locks by id: allowed only when the client may see every
database they touch (their TXN_COMPONENTS, TXN_TO_WRITE_ID and HIVE_LOCKS rows)."""


_REPL_CALLS = frozenset({"open_txns", "commit_txn", "abort_txn", "allocate_table_write_ids"})


def _check_repl_policy(
    api: str, args: tuple[Any, ...], visible: Callable[[str | None], bool]
) -> bool:
    """A request with ``replPolicy`` (REPL LOAD) acts for the policy's database ("<db>.*"):
    allowed only when the client may use it ("*.*", every database: never for a client
    with an allow-list). Returns whether the request names a replayed txn, whose txn id is a
    *source* id (so the owned-transaction check, which reads this metastore's txns, does not
    apply)."""
    rqst = args[0] if args and api in _REPL_CALLS else None
    policy = getattr(rqst, "replPolicy", None)
    if not policy:
        return False
    db = policy.split(".", 1)[0].strip().lower()
    if db == "*" or not visible(db):
        message = (
            f"replication policy {policy} names a database this client may not use "
            "(allowed_databases)"
        )
        declared = _declared(api)
        for cls in (hms.NoSuchTxnException, hms.MetaException):
            if cls in declared:
                raise cls(message=message)
        raise TApplicationException(TApplicationException.INTERNAL_ERROR, message)
    return getattr(rqst, "txn_type", None) == hms.TxnType.REPL_CREATED


def _check_owned(
    api: str,
    handler: HandlerBase,
    ids: dict[str, list[int]],
    visible: Callable[[str | None], bool],
) -> None:
    if not any(ids.values()):
        return
    touched = handler.store.txn.databases_touched(**ids)
    if all(visible(db) for db in touched):
        return
    what = "lock" if "lock_ids" in ids else "transaction"
    shown = ", ".join(str(i) for i in next(iter(ids.values())))
    message = (
        f"{what} {shown} touches a database this client may not use (allowed_databases); "
        f"only a client allowed on every database a {what} touches may {api.split('_')[0]} it"
    )
    declared = _declared(api)
    for cls in (hms.NoSuchTxnException, hms.NoSuchLockException, hms.MetaException):
        if cls in declared:
            raise cls(message=message)
    raise TApplicationException(TApplicationException.INTERNAL_ERROR, message)


# -- filtering results -----------------------------------------------------------------------------


def _filter_names(result: Any, visible: Callable[[str | None], bool]) -> Any:
    return [name for name in result if visible(name.lower())]


def _filter_field(attr: str, field: str) -> Callable[[Any, Callable[[str | None], bool]], Any]:
    def apply(result: Any, visible: Callable[[str | None], bool]) -> Any:
        items = getattr(result, attr, None) if attr else result
        if items is None:
            return result
        kept = [x for x in items if visible(_lower(getattr(x, field, None)))]
        if not attr:
            return kept
        setattr(result, attr, kept)
        return result

    return apply


def _lower(name: str | None) -> str | None:
    return name.lower() if isinstance(name, str) else None


def _event_visible(event: Any, visible: Callable[[str | None], bool]) -> bool:
    """An event is shown only when every database it names (column and message) is visible;
    one whose message cannot be read is hidden."""
    names = event_databases(event)
    return names is not None and all(visible(db) for db in names)


_EVENT_PAGES = 10
"""Pages of the log one get_next_notification reads for a restricted client at most."""


def _visible_events(
    fn: Callable[..., Any], rqst: Any, visible: Callable[[str | None], bool], configured: int
) -> Any:
    """get_next_notification for a restricted client: hidden events are left out, and further
    pages read (up to _EVENT_PAGES) so that a run of hidden events does not make an empty page
    that a client would take for the end of the log."""
    if rqst is None or rqst.lastEvent is None:
        return fn(rqst)  # the handler's error
    asked = rqst.maxEvents
    page = asked if asked is not None and 0 < asked < configured else configured
    kept: list[Any] = []
    last = rqst.lastEvent
    for _ in range(_EVENT_PAGES):
        step = copy.copy(rqst)
        step.lastEvent, step.maxEvents = last, page
        response = fn(step)
        if isinstance(response, Encoded):  # the answer sidecars share, as bytes
            response = thrift_bytes.decode(hms.NotificationEventResponse, response)
        batch = response.events or []
        kept += [e for e in batch if _event_visible(e, visible)]
        if len(kept) >= page or len(batch) < page:
            break
        last = batch[-1].eventId
    return hms.NotificationEventResponse(events=kept[:page])


def _visible_events_count(
    handler: HandlerBase, rqst: Any, visible: Callable[[str | None], bool]
) -> hms.NotificationEventsCountResponse:
    """get_notification_events_count over the events this client may see: read page by page
    (the count alone would include events naming hidden databases)."""
    if rqst is None or rqst.fromEventId is None:
        raise hms.MetaException(message="fromEventId must be set")
    cat = handler.catalog(rqst.catName)
    db = (rqst.dbName or "").strip().lower() or "*"
    last, count = int(rqst.fromEventId), 0
    page = max(1, int(handler.settings.notification_max_events))
    while True:
        events = handler.store.next_notifications(last, page, ())
        for e in events:
            if rqst.toEventId is not None and e.eventId > rqst.toEventId:
                return hms.NotificationEventsCountResponse(eventsCount=count)
            in_scope = (e.catName in (None, cat)) and (db == "*" or e.dbName in (None, db))
            if in_scope and _event_visible(e, visible):
                count += 1
                if rqst.limit is not None and count >= rqst.limit:
                    return hms.NotificationEventsCountResponse(eventsCount=count)
        if len(events) < page:
            return hms.NotificationEventsCountResponse(eventsCount=count)
        last = events[-1].eventId


_RESULT_FILTERS: dict[str, Callable[[Any, Callable[[str | None], bool]], Any]] = {
    "get_databases": _filter_names,
    "get_all_databases": _filter_names,
    "get_table_meta": _filter_field("", "dbName"),
    "get_all_functions": _filter_field("functions", "dbName"),
    "show_locks": _filter_field("locks", "dbname"),
    # foreign keys referencing a visible table may be held by tables of hidden databases
    "get_foreign_keys": _filter_field("foreignKeys", "fktable_db"),
    "get_all_write_event_info": _filter_field("", "database"),  # dbName is optional
    "list_privileges": lambda result, visible: [
        p for p in result if p.hiveObject is None or visible(_lower(p.hiveObject.dbName))
    ],
    "show_compact": _filter_field("compacts", "dbname"),
}


def unclassified(
    implemented: Iterable[str],
    write: frozenset[str] = WRITE_CALLS,
    read: frozenset[str] = READ_CALLS,
    global_calls: frozenset[str] = GLOBAL_CALLS,
    filtered: frozenset[str] = FILTERED_CALLS,
) -> dict[str, list[str]]:
    """Implemented calls missing from the read-only or the allow-list classification (or in
    both halves of one)."""
    implemented = list(implemented)
    out: dict[str, list[str]] = {
        "read_only": [n for n in implemented if (n in write) == (n in read)],
        "allow_list": [],
    }
    for name in implemented:
        specs = getattr(service, name + "_args").thrift_spec.values()
        finds_db = any(_has_db(name, spec) for spec in specs)
        if not finds_db and name not in global_calls and name not in filtered:
            out["allow_list"].append(name)
        if finds_db and name in global_calls:
            out["allow_list"].append(name)  # said to name no database, yet it can
    return out
