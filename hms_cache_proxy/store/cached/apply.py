"""Notification events applied to the cache, in event-id order (docs/cache.md, "Rules, by
event").

Messages are decoded (TJSON objects re-encoded as the bytes the cache keeps) before the cache
lock is taken (this process's own events from the bodies still in memory, ``body_of``); a batch
is then applied under the lock in one go, so readers see all of it or none. An event changes an
entry only if it is newer than everything the entry reflects (``as_of``), and every event about
a table is reported to the cache (``touched_locked``) so a load that was under way when it
happened is refused.

- Our own events (``"writer": "hms-cache-proxy"``) hold objects exactly as the database path
  reads them back: tables, partitions (those partitions only), databases are applied as they
  are. ALTER_TABLE with ``partitionsChanged`` drops the entry's partitions (reloaded in the
  background); statistics events replace the table/partition they carry and drop the entry's
  statistics rows (reloaded on the next statistics read).
- Events of other writers invalidate what they name.
- A ``writeId`` makes the entry uncommitted until that write id's COMMIT_TXN, which also moves
  W forward; COMMIT_TXN moves W of every cached table it lists, touched or not. ABORT_TXN drops
  the entries its write ids left uncommitted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from hms_cache_proxy import thrift_bytes
from hms_cache_proxy.idl import hms
from hms_cache_proxy.observability import metrics
from hms_cache_proxy.store import partnames
from hms_cache_proxy.store.cache.cache import Cache
from hms_cache_proxy.store.cache.entries import Part, PartitionSet, TableEntry, TableName
from hms_cache_proxy.store.cached.prewarm import Loader, empty_write_ids
from hms_cache_proxy.store.cached.table_selection import TablePatterns
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events import tjson
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList

log = logging.getLogger(__name__)

LARGE_EVENT = 100
"""An event with more partitions than this drops the entry's partitions, loaded again in the
background (decoding a partition's TJSON costs about as much as loading 20 from the database)."""

MAX_WRITE_ID_GAP = 100_000
"""A commit this far above W's high-water mark drops the entry rather than list the gap."""

Op = Callable[["_Batch"], None]

IGNORED = frozenset(
    {
        msg.INSERT,
        msg.OPEN_TXN,
        msg.ACID_WRITE_EVENT,
        msg.BATCH_ACID_WRITE_EVENT,
        msg.COMMIT_COMPACTION_EVENT,
        msg.CREATE_FUNCTION,
        msg.DROP_FUNCTION,
        msg.CREATE_CATALOG,
        msg.ALTER_CATALOG,
        msg.DROP_CATALOG,
        msg.CREATE_ISCHEMA,
        msg.ALTER_ISCHEMA,
        msg.DROP_ISCHEMA,
        msg.ADD_SCHEMA_VERSION,
        msg.ALTER_SCHEMA_VERSION,
        msg.DROP_SCHEMA_VERSION,
        msg.CREATE_DATACONNECTOR,
        msg.ALTER_DATACONNECTOR,
        msg.DROP_DATACONNECTOR,
    }
)
"""Events that change nothing the cache holds."""

CONSTRAINT_EVENTS = frozenset(
    {
        msg.ADD_PRIMARYKEY,
        msg.ADD_FOREIGNKEY,
        msg.ADD_UNIQUECONSTRAINT,
        msg.ADD_NOTNULLCONSTRAINT,
        msg.ADD_DEFAULTCONSTRAINT,
        msg.ADD_CHECKCONSTRAINT,
        msg.DROP_CONSTRAINT,
    }
)
"""Events that change constraints only: whoever wrote them, the constraints of the tables
they name (and of tables with foreign keys into those) are forgotten, loaded again on read."""

STATS_EVENTS = frozenset(
    {
        msg.UPDATE_TBL_COL_STAT_EVENT,
        msg.DELETE_TBL_COL_STAT_EVENT,
        msg.UPDATE_PART_COL_STAT_EVENT,
        msg.UPDATE_PART_COL_STAT_EVENT_BATCH,
        msg.DELETE_PART_COL_STAT_EVENT,
    }
)


def _norm(name: str | None) -> str:
    return (name or "").strip().lower()


def advance_write_ids(
    w: ValidReaderWriteIdList, write_id: int, aborted: set[int] | frozenset[int] = frozenset()
) -> ValidReaderWriteIdList | None:
    """W with ``write_id`` committed; ids it skips above the hwm stay invalid: aborted if
    ``aborted`` says so, else open (or committed by a transaction whose COMMIT_TXN is still to
    come, which moves W again). None: gap too large."""
    opened = list(w.open_write_ids())
    aborted_list = list(w.aborted_write_ids())
    hwm = w.high_watermark
    if write_id <= hwm:
        if write_id in opened:
            opened.remove(write_id)
        elif write_id in aborted_list:
            aborted_list.remove(write_id)
        else:
            return w
    else:
        if write_id - hwm > MAX_WRITE_ID_GAP:
            return None
        for skipped in range(hwm + 1, write_id):
            (aborted_list if skipped in aborted else opened).append(skipped)
        hwm = write_id
    return ValidReaderWriteIdList.from_ids(w.table_name, hwm, opened, aborted_list)


def mark_aborted(w: ValidReaderWriteIdList, write_id: int) -> ValidReaderWriteIdList:
    """W with an open ``write_id`` listed as aborted (what a reader's list says after it)."""
    opened = list(w.open_write_ids())
    if write_id not in opened:
        return w
    opened.remove(write_id)
    aborted = sorted([*w.aborted_write_ids(), write_id])
    return ValidReaderWriteIdList.from_ids(w.table_name, w.high_watermark, opened, aborted)


class _Batch:
    """State while one batch is applied (under the cache lock)."""

    def __init__(self, cache: Cache, applier: EventApplier) -> None:
        self.cache = cache
        self.applier = applier
        self.event_id = 0
        self.reload: set[TableName] = set()
        self.databases = False

    def entry(self, key: TableName) -> TableEntry | None:
        """The entry this event may change (None: absent, or it already reflects the event)."""
        self.cache.touched_locked(key, self.event_id)
        entry = self.cache.entries.get(key)
        if entry is None or entry.as_of >= self.event_id:
            return None
        return entry

    def changed(self, entry: TableEntry, before_parts: int) -> None:
        entry.as_of = self.event_id
        self.cache.resized_locked(entry, before_parts)

    def update(
        self,
        key: TableName,
        write_id: int | None,
        change: Callable[[_Batch, TableEntry], None],
    ) -> None:
        """``change`` the cached entry of ``key``, if there is one; a write id stays pending on
        it until its commit, and the entry's size and event position follow the change."""
        entry = self.entry(key)
        if entry is None:
            return
        n = len(entry.parts) if entry.parts is not None else 0
        change(self, entry)
        if write_id is not None and entry.transactional:
            entry.pending[write_id] = None
        self.changed(entry, n)

    def drop(self, key: TableName, reason: str, reload: bool = True) -> None:
        self.cache.touched_locked(key, self.event_id)
        self.cache.constraints_changed_locked(key, self.event_id)
        if self.cache.drop_locked(key) is not None:
            metrics.INVALIDATIONS.labels(reason).inc()
            if reload:
                self.reload.add(key)


class EventApplier:
    """Turns notification events into cache changes (see the module docstring)."""

    def __init__(
        self,
        cache: Cache,
        loader: Loader,
        patterns: TablePatterns | None = None,
        body_of: Callable[[Any], dict | None] = lambda _event: None,
    ):
        """``body_of``: the body of an event this process wrote, still in memory
        (``EventLog.body_of``), or None: the message is decoded."""
        self.cache = cache
        self.loader = loader
        self.patterns = patterns or TablePatterns()
        self._body_of = body_of
        # (db, table, write id) -> txn id, from ALLOC_WRITE_ID_EVENT (to map ABORT_TXN).
        self._allocated: dict[tuple[str, str, int], int] = {}
        # txn id -> its keys in _allocated (insertion-ordered): a commit or abort finds its
        # txn's allocations without a scan of every allocation still open.
        self._by_txn: dict[int, dict[tuple[str, str, int], None]] = {}
        # (db, table) -> write ids aborted above some entry's hwm (so W lists them aborted).
        self._aborted: dict[tuple[str, str], set[int]] = {}
        self._counters: dict[str, Callable[[], None]] = {}

    # -- entry points --------------------------------------------------------------------------

    def apply(self, events: Iterable[Any]) -> None:
        prepared: list[tuple[int, str, Op]] = []
        for ev in events:
            try:
                op = self._prepare(ev)
            except Exception:  # noqa: BLE001 - a message we cannot read: forget its scope
                log.warning(
                    "cannot read event %s (%s); invalidating",
                    ev.eventId,
                    ev.eventType,
                    exc_info=True,
                )
                op = self._invalidate_scope(ev)
            prepared.append((ev.eventId, ev.eventType, op))
        batch = _Batch(self.cache, self)
        with self.cache.lock:
            for event_id, event_type, op in prepared:
                batch.event_id = event_id
                try:
                    op(batch)
                except Exception:  # noqa: BLE001 - never serve on after a change went wrong
                    log.exception(
                        "applying event %s (%s) failed; emptying the cache", event_id, event_type
                    )
                    batch.reload.update(self.cache.clear_locked())
                    metrics.INVALIDATIONS.labels("apply_error").inc()
                self.cache.position = event_id
        for _, event_type, _ in prepared:
            self._count(event_type)
        for key in batch.reload:
            if self.patterns.cached(key):
                self.loader.request(key, front=True)
        if batch.databases:
            self.loader.request_databases()

    def invalidate_all(self, reason: str) -> None:
        """Events were missed: nothing cached can be trusted. Reload what was cached."""
        with self.cache.lock:
            keys = self.cache.clear_locked()
            self._allocated.clear()
            self._by_txn.clear()
        metrics.INVALIDATIONS.labels(reason).inc(max(1, len(keys)))
        log.warning("cache invalidated (%s): %d tables to load again", reason, len(keys))
        self.loader.request_databases()
        for key in keys:
            self.loader.request(key)

    def _count(self, event_type: str) -> None:
        inc = self._counters.get(event_type)
        if inc is None:
            inc = self._counters[event_type] = metrics.EVENTS_APPLIED.labels(event_type).inc
        inc()

    # -- decoding ------------------------------------------------------------------------------

    def _prepare(self, ev: Any) -> Op:
        t = ev.eventType
        if t in IGNORED:
            return _nothing
        if t == msg.COMMIT_TXN:
            quiet = msg.quiet_commit_txn_id(ev.message, ev.messageFormat)
            if quiet is not None:  # a txn that wrote nothing: not worth decoding
                return self._commit({"txnid": quiet})
        body = self._body_of(ev)
        if body is None:
            body = msg.decode(ev.message, ev.messageFormat)
        ours = msg.written_by_us(body)
        cat = _norm(ev.catName) or "hive"
        if t == msg.COMMIT_TXN:
            return self._commit(body)
        if t == msg.ABORT_TXN:
            return self._abort(body)
        if t == msg.ALLOC_WRITE_ID_EVENT:
            return self._alloc(body)
        if t in (msg.CREATE_DATABASE, msg.ALTER_DATABASE, msg.DROP_DATABASE):
            return self._database(t, cat, ev, body, ours)
        if t in CONSTRAINT_EVENTS:
            return self._constraints(cat, ev, body)
        if not ours:
            return self._invalidate_scope(ev, body)
        write_id = msg.write_id(body)
        if t == msg.CREATE_TABLE:
            return self._create_table(cat, msg.table(body), write_id)
        if t == msg.ALTER_TABLE:
            return self._alter_table(cat, body, write_id)
        if t == msg.DROP_TABLE:
            key = TableName(cat, _norm(ev.dbName), _norm(ev.tableName))
            return lambda b: b.drop(key, "dropped", reload=False)
        if t in (msg.ADD_PARTITION, msg.ALTER_PARTITIONS):
            if len(body.get("partitionListJson") or ()) > LARGE_EVENT:
                return self._reload_partitions(cat, msg.table(body), write_id)
            return self._put_partitions(cat, msg.table(body), msg.partitions(body), write_id)
        if t == msg.ALTER_PARTITION:
            return self._alter_partition(cat, body, write_id)
        if t == msg.DROP_PARTITION:
            return self._drop_partitions(cat, body, write_id)
        if t in STATS_EVENTS:
            return self._stats(t, cat, ev, body, write_id)
        return self._invalidate_scope(ev, body)  # RELOAD and anything new: reload the table

    def _key(self, cat: str, table: Any) -> TableName:
        return TableName(cat, _norm(table.dbName), _norm(table.tableName))

    # -- tables --------------------------------------------------------------------------------

    def _create_table(self, cat: str, table: Any, write_id: int | None) -> Op:
        key = self._key(cat, table)
        data = thrift_bytes.encode(table)
        cached = self.patterns.cached(key)

        def op(b: _Batch) -> None:
            b.cache.touched_locked(key, b.event_id)
            old = b.cache.entries.get(key)
            if not cached or (old is not None and old.as_of >= b.event_id):
                return
            entry = TableEntry(
                key, table, data, as_of=b.event_id, write_ids=None, parts=PartitionSet()
            )
            if entry.transactional:
                entry.write_ids = empty_write_ids(key)
                if write_id is not None:
                    entry.pending[write_id] = None
            b.cache.put_locked(entry)

        return op

    def _alter_table(self, cat: str, body: dict[str, Any], write_id: int | None) -> Op:
        before, after = msg.table_before(body), msg.table_after(body)
        old_key, new_key = self._key(cat, before), self._key(cat, after)
        data = thrift_bytes.encode(after)
        parts_changed = msg.partitions_changed(body)
        columns_changed = (before.sd.cols if before.sd else None) != (
            after.sd.cols if after.sd else None
        ) or before.partitionKeys != after.partitionKeys

        def op(b: _Batch) -> None:
            if old_key != new_key:
                # A rename: names and W change; the new name is loaded whole.
                b.drop(old_key, "renamed", reload=False)
                b.drop(new_key, "renamed", reload=False)
                b.reload.add(new_key)
                return
            if columns_changed:  # constraints name columns by position
                b.cache.constraints_changed_locked(old_key, b.event_id)
            entry = b.entry(old_key)
            if entry is None:
                return
            n = len(entry.parts) if entry.parts is not None else 0
            was_txn = entry.transactional
            entry.set_table(after, data)
            if entry.transactional and not was_txn:
                b.drop(old_key, "became_transactional")
                return
            if parts_changed:
                entry.parts = None
                b.reload.add(old_key)
            entry.stats = None
            entry.stats_changed = b.event_id
            if write_id is not None and entry.transactional:
                entry.pending[write_id] = None
            b.changed(entry, n)

        return op

    # -- constraints ---------------------------------------------------------------------------

    def _constraints(self, cat: str, ev: Any, body: dict[str, Any]) -> Op:
        """The event names the table (a foreign key's: the referenced one); a foreign key's
        own table is in its message."""
        keys = {TableName(cat, _norm(ev.dbName), _norm(ev.tableName))}
        for text in body.get("foreignKeyListJson") or ():
            fk = tjson.loads(text, hms.SQLForeignKey)
            keys.add(
                TableName(_norm(fk.catName) or cat, _norm(fk.fktable_db), _norm(fk.fktable_name))
            )

        def op(b: _Batch) -> None:
            for key in keys:
                b.cache.constraints_changed_locked(key, b.event_id)

        return op

    # -- partitions ----------------------------------------------------------------------------

    @staticmethod
    def _part(keys: list[str], p: Any) -> tuple[str, Part]:
        head, cols, tail = thrift_bytes.partition_pieces(p)
        values = tuple(p.values or ())
        return partnames.make_part_name(keys, list(values)), Part(values, head, cols, tail)

    def _put_partitions(self, cat: str, table: Any, parts: list[Any], write_id: int | None) -> Op:
        key = self._key(cat, table)
        keys = [k.name for k in table.partitionKeys or []]
        pieces = [self._part(keys, p) for p in parts if p is not None]

        def change(_b: _Batch, entry: TableEntry) -> None:
            if entry.parts is not None:
                for name, part in pieces:
                    entry.parts.put(name, part)

        return lambda b: b.update(key, write_id, change)

    def _reload_partitions(self, cat: str, table: Any, write_id: int | None) -> Op:
        """Many partitions in one event: loading the table again beats decoding them."""
        key = self._key(cat, table)

        def change(b: _Batch, entry: TableEntry) -> None:
            entry.parts = None
            b.reload.add(key)

        return lambda b: b.update(key, write_id, change)

    def _alter_partition(self, cat: str, body: dict[str, Any], write_id: int | None) -> Op:
        """The partition after the change replaces the one before. The table's name, its
        partition keys and the old values come from the message's ``db``, ``table`` and
        ``keyValues`` (key name to old value, in key order) when they describe the partition
        whole: decoding the table and the partition before cost about two thirds of applying
        the event (issue 23: every INSERT into a partition's catch-up); else from the embedded
        table and partition before."""
        after = msg.partition_after(body)
        named = _alter_names(body, len(after.values or ()))
        if named is not None:
            key = TableName(cat, _norm(named[0]), _norm(named[1]))
            keys, old_values = named[2], named[3]
        else:
            table = msg.table(body)
            keys = [k.name for k in table.partitionKeys or []]
            key = self._key(cat, table)
            old_values = list(msg.partition_before(body).values or ())
        old_name = partnames.make_part_name(keys, old_values)
        new_name, part = self._part(keys, after)

        def change(b: _Batch, entry: TableEntry) -> None:
            if entry.parts is not None:
                if old_name != new_name:
                    entry.parts.remove(old_name)
                    entry.stats = None
                    entry.stats_changed = b.event_id
                entry.parts.put(new_name, part)

        return lambda b: b.update(key, write_id, change)

    def _drop_partitions(self, cat: str, body: dict[str, Any], write_id: int | None) -> Op:
        table = msg.table(body)
        keys = [k.name for k in table.partitionKeys or []]
        key = self._key(cat, table)
        names = [
            partnames.make_part_name(keys, [kv.get(k) for k in keys])
            for kv in body.get("partitions") or []
        ]

        def change(b: _Batch, entry: TableEntry) -> None:
            if entry.parts is not None:
                for name in names:
                    entry.parts.remove(name)
            if entry.stats is not None:
                for name in names:
                    entry.stats.parts.pop(name, None)
            entry.stats_changed = b.event_id

        return lambda b: b.update(key, write_id, change)

    # -- statistics ----------------------------------------------------------------------------

    def _stats(self, t: str, cat: str, ev: Any, body: dict[str, Any], write_id: int | None) -> Op:
        key = TableName(cat, _norm(ev.dbName), _norm(ev.tableName))
        table = msg.table(body) if body.get("tableObjJson") else None
        table_data = thrift_bytes.encode(table) if table is not None else None
        part = msg.partition_obj(body) if t == msg.UPDATE_PART_COL_STAT_EVENT else None
        if t == msg.UPDATE_PART_COL_STAT_EVENT and part is None:
            return self._invalidate_scope(ev, body)
        if t == msg.UPDATE_PART_COL_STAT_EVENT_BATCH:
            return self._invalidate_scope(ev, body)

        def change(b: _Batch, entry: TableEntry) -> None:
            if t == msg.UPDATE_TBL_COL_STAT_EVENT and table is not None:
                entry.set_table(table, table_data)  # type: ignore[arg-type]
            if part is not None and entry.parts is not None:
                name, piece = self._part(entry.key_names, part)
                entry.parts.put(name, piece)
            entry.stats = None
            entry.stats_changed = b.event_id

        return lambda b: b.update(key, write_id, change)

    # -- databases -----------------------------------------------------------------------------

    def _database(self, t: str, cat: str, ev: Any, body: dict[str, Any], ours: bool) -> Op:
        name = _norm(ev.dbName) or _norm(body.get("db"))
        db_key = (cat, name)
        obj = None
        if ours and t == msg.CREATE_DATABASE:
            obj = msg.database(body)
        elif ours and t == msg.ALTER_DATABASE:
            obj = msg.database_after(body)
        # Replication properties were left out of the objects: the database exists (so lists
        # keep its name) but this object is not it; the entry answers no get_database.
        unservable = obj is not None and msg.repl_left_out(body)
        data = thrift_bytes.encode(obj) if obj is not None and not unservable else None

        def op(b: _Batch) -> None:
            cache = b.cache
            if t == msg.DROP_DATABASE:
                cache.forget_constraints_locked(b.event_id, (cat, name))
                for entry in list(cache.entries_of_db_locked(cat, name)):
                    b.drop(entry.key, "dropped", reload=False)
                cache.touched_db_locked(cat, name, b.event_id)
            at = cache.databases_as_of
            if at is not None and at >= b.event_id:
                return
            cache.databases_as_of = b.event_id
            if unservable:
                cache.databases[db_key] = (None, b"")
            elif obj is None:
                cache.databases.pop(db_key, None)
                if not ours:
                    cache.databases_complete = False  # it may still exist, or exist now
                    b.databases = True
            else:
                cache.databases[db_key] = (obj, data)  # type: ignore[assignment]

        return op

    # -- transactions --------------------------------------------------------------------------

    def _alloc(self, body: dict[str, Any]) -> Op:
        db, table = _norm(body.get("dbName")), _norm(body.get("tableName"))
        pairs = list(zip(body.get("txnIdList") or [], body.get("writeIdList") or [], strict=False))
        forced = msg.write_ids_forced(body)

        def op(b: _Batch) -> None:
            for txn, wid in pairs:
                self._allocate((db, table, int(wid)), int(txn))
            if forced:  # replayed ids jumped (and the old mapping went): W cannot move on
                for entry in list(self._entries_named(b, db, table)):
                    b.drop(entry.key, "write_ids_forced")

        return op

    def _commit(self, body: dict[str, Any]) -> Op:
        txn = body.get("txnid")
        writes = [(_norm(d), _norm(t), w) for d, t, w in msg.commit_writes(body)]
        altered = [TableName(*names) for names in msg.tables_altered(body)]

        def op(b: _Batch) -> None:
            for db, table, wid in writes:
                self._forget((db, table, wid))
                for entry in self._entries_named(b, db, table):
                    w = entry.write_ids
                    if not entry.transactional or w is None:
                        entry.pending.pop(wid, None)
                        continue
                    moved = advance_write_ids(w, wid, self._aborted.get((db, table), frozenset()))
                    if moved is None:
                        b.drop(entry.key, "write_id_gap")
                        continue
                    entry.write_ids = moved
                    entry.pending.pop(wid, None)
                    entry.as_of = b.event_id
            for key in altered:  # parameters set by the commit (keyValue): load again
                b.drop(key, "commit_key_value")
            if txn is not None:
                self._forget_txn(txn)

        return op

    def _abort(self, body: dict[str, Any]) -> Op:
        txn = body.get("txnid")

        def op(b: _Batch) -> None:
            mine = self._forget_txn(txn) if txn is not None else []
            known = self._allocated
            aborted = set(mine)
            if len(self._aborted) > 10_000:
                self._aborted.clear()
            for db, table, wid in mine:
                self._aborted.setdefault((db, table), set()).add(wid)
                for entry in self._entries_named(b, db, table):
                    if entry.write_ids is not None and wid not in entry.pending:
                        entry.write_ids = mark_aborted(entry.write_ids, wid)
            for key, entry in list(b.cache.entries.items()):
                if not entry.pending or entry.as_of >= b.event_id:
                    continue
                for wid in entry.pending:
                    named = (key.db, key.table, wid)
                    # An uncommitted write of this txn, or of a txn we never saw allocate.
                    if named in aborted or named not in known:
                        b.drop(key, "aborted")
                        break

        return op

    def _allocate(self, key: tuple[str, str, int], txn: int) -> None:
        self._forget(key)
        self._allocated[key] = txn
        self._by_txn.setdefault(txn, {})[key] = None

    def _forget(self, key: tuple[str, str, int]) -> None:
        txn = self._allocated.pop(key, None)
        if txn is not None:
            keys = self._by_txn.get(txn)
            if keys is not None:
                keys.pop(key, None)
                if not keys:
                    del self._by_txn[txn]

    def _forget_txn(self, txn: Any) -> list[tuple[str, str, int]]:
        """Forget the allocations of ``txn``; returns their keys, in allocation order."""
        try:
            keys = list(self._by_txn.pop(int(txn), ()))
        except (TypeError, ValueError):
            return []
        for key in keys:
            self._allocated.pop(key, None)
        return keys

    def _entries_named(self, b: _Batch, db: str, table: str) -> list[TableEntry]:
        out = []
        for cat in b.cache.catalogs:
            key = TableName(cat, db, table)
            b.cache.touched_locked(key, b.event_id)
            entry = b.cache.entries.get(key)
            if entry is not None and entry.as_of < b.event_id:
                out.append(entry)
        return out

    # -- invalidation --------------------------------------------------------------------------

    def _invalidate_scope(self, ev: Any, body: dict[str, Any] | None = None) -> Op:
        """Forget what an event names (its table, or its database's tables, or everything)."""
        cat = _norm(ev.catName) or "hive"
        db, table = _norm(ev.dbName), _norm(ev.tableName)
        others: list[TableName] = []
        if body is not None and ev.eventType == msg.ALTER_TABLE:
            others = [TableName(cat, _norm(body.get("db")), _norm(body.get("table")))]

        def op(b: _Batch) -> None:
            if db and table:
                for key in [TableName(cat, db, table), *others]:
                    b.drop(key, "other_writer")
            elif db:
                b.cache.forget_constraints_locked(b.event_id, (cat, db))
                for entry in list(b.cache.entries_of_db_locked(cat, db)):
                    b.drop(entry.key, "other_writer")
                b.cache.touched_db_locked(cat, db, b.event_id)
                b.cache.databases.pop((cat, db), None)
                b.cache.databases_complete = False
                # A databases-map load under way read the old database: it must not install.
                b.cache.databases_as_of = max(b.cache.databases_as_of or 0, b.event_id)
                b.databases = True
            else:
                b.cache.forget_constraints_locked(b.event_id)
                for key in list(b.cache.entries):
                    b.drop(key, "unreadable_event")

        return op


def _nothing(_b: _Batch) -> None:
    return None


__all__ = ["EventApplier", "advance_write_ids", "hms"]


def _alter_names(
    body: dict[str, Any], n_values: int
) -> tuple[str, str, list[str], list[str]] | None:
    """(db, table, partition key names, old values) of an ALTER_PARTITION message from its
    ``db``, ``table`` and ``keyValues`` fields, or None when they do not name every key (a
    message without them, or keys and values that do not pair up with the new values)."""
    db, table, kv = body.get("db"), body.get("table"), body.get("keyValues")
    if not (isinstance(db, str) and isinstance(table, str) and isinstance(kv, dict) and kv):
        return None
    if len(kv) != n_values or not all(isinstance(v, str) for v in kv.values()):
        return None
    return db, table, list(kv), list(kv.values())
