"""A table commit, serialised with every other writer of the table.

Under the table's HMS lock (EXCLUSIVE, as Iceberg's HiveCatalog takes it, so lock-mode writers
on any instance wait for each other): read ``metadata_location``, check the requirements on that
base and apply the updates with PyIceberg, write the new metadata file, and alter the table only
if ``metadata_location`` still holds the base (Hive's expected-parameter alter, against writers
that do not lock). The alter writes the ALTER_TABLE event, so caches and other instances follow.
A failed check is 409 (the client refreshes and retries); 500 only when the outcome is unknown.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

from pyiceberg.catalog import MetastoreCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table.update import AssertCreate, update_table_metadata

from hms_cache_proxy.handler.access import current_user
from hms_cache_proxy.idl import hms
from hms_cache_proxy.rest import hive_table
from hms_cache_proxy.rest.errors import (
    RestError,
    bad_request,
    commit_failed,
    commit_unknown,
    no_table,
)
from hms_cache_proxy.rest.metadata import dropped_fields, new_location
from hms_cache_proxy.rest.models import CommitTableRequest
from hms_cache_proxy.rest.tables import Tables, dump, table_result
from hms_cache_proxy.rest.thrift_errors import mapped

log = logging.getLogger(__name__)

DO_NOT_UPDATE_STATS = "DO_NOT_UPDATE_STATS"
_HOST = socket.gethostname()


class Committer:
    """updateTable (and the create-by-commit that follows a stage-create)."""

    def __init__(self, handler: Any, tables: Tables, lock_timeout_seconds: float) -> None:
        self.handler = handler
        self.tables = tables
        self.lock_timeout = lock_timeout_seconds

    def commit(self, db: str, name: str, req: CommitTableRequest) -> bytes:
        if any(isinstance(r, AssertCreate) for r in req.requirements):
            return self._create(db, name, req)
        lockid = self._lock(db, name)
        try:
            return self._commit_locked(db, name, req, lockid)
        finally:
            self._unlock(lockid)

    def _commit_locked(self, db: str, name: str, req: CommitTableRequest, lockid: int) -> bytes:
        current = self.tables.hms_table(db, name)
        base_location = current.parameters[hive_table.METADATA_LOCATION]
        base, raw = self.tables.files.parsed(base_location)
        try:
            for requirement in req.requirements:
                requirement.validate(base)
        except CommitFailedException as exc:
            raise commit_failed(str(exc)) from exc
        updated = _apply(base, req, base_location)
        if updated == base:
            return table_result(base_location, raw)
        lost = dropped_fields(raw, base)
        if lost:
            raise bad_request(
                f"{base_location} holds fields this catalog's Iceberg library would drop on "
                f"rewrite ({', '.join(lost[:5])}); commit through a catalog that knows them"
            )
        location = new_location(updated, base_location)
        self.tables.files.write(updated, location)
        env = hms.EnvironmentContext(
            properties={
                hms.EXPECTED_PARAMETER_KEY: hive_table.METADATA_LOCATION,
                hms.EXPECTED_PARAMETER_VALUE: base_location,
                DO_NOT_UPDATE_STATS: "true",
            }
        )
        row = hive_table.committed(current, base, updated, location)
        try:
            self.handler.alter_table_with_environment_context(db, name, row, env)
        except hms.MetaException as exc:
            if "has been modified" in (exc.message or ""):  # the swap refused: rolled back
                self.tables.forget(location)
                raise commit_failed(f"{db}.{name} was changed by another writer") from exc
            self._settle(db, name, lockid, base_location, location, exc)
        except hms.InvalidOperationException as exc:  # refused before anything was written
            self.tables.forget(location)
            if "not found" in (exc.message or ""):
                raise commit_failed(f"{db}.{name} was dropped meanwhile") from exc
            raise bad_request(exc.message or "alter refused") from exc
        except Exception as exc:  # noqa: BLE001 - the database may or may not have committed
            self._settle(db, name, lockid, base_location, location, exc)
        return table_result(location, dump(updated))

    def _create(self, db: str, name: str, req: CommitTableRequest) -> bytes:
        """A stage-created table's first commit: ``assert-create`` and the updates that make it."""
        base = MetastoreCatalog._empty_table_metadata()
        try:
            for requirement in req.requirements:
                requirement.validate(None)
        except CommitFailedException as exc:
            raise commit_failed(str(exc)) from exc
        self.tables.namespaces.database(db)
        updated = _apply(base, req, None)
        self.tables.files.storage.io_for(updated.location)
        try:
            return self.tables.create_from(db, name, updated)
        except RestError as exc:
            if exc.status == 409:
                raise commit_failed(f"Table already exists: {db}.{name}") from exc
            raise

    def _settle(self, db: str, name: str, lockid: int, base: str, new: str, exc: Exception) -> None:
        """After an alter failed in an unexpected way: returns if it committed after all,
        409 if the table still points at ``base`` (we hold the lock, so nothing else moved
        it), 500 (outcome unknown) otherwise. check_lock on the held lock brings this
        instance's cache up to the log first, so the read below is current."""
        log.warning("commit of %s.%s failed (%s); checking whether it took effect", db, name, exc)
        try:
            self.handler.check_lock(hms.CheckLockRequest(lockid=lockid))
            current = self.tables.hms_table(db, name).parameters[hive_table.METADATA_LOCATION]
        except Exception as again:  # noqa: BLE001 - cannot tell
            log.exception("commit of %s.%s: outcome unknown", db, name)
            raise commit_unknown(f"commit of {db}.{name}: outcome unknown: {exc}") from again
        if current == new:
            return
        if current == base:
            self.tables.forget(new)
            raise commit_failed(f"commit of {db}.{name} failed, nothing changed: {exc}") from exc
        raise commit_unknown(f"commit of {db}.{name}: outcome unknown: {exc}") from exc

    def _lock(self, db: str, name: str) -> int:
        component = hms.LockComponent(
            type=hms.LockType.EXCLUSIVE,
            level=hms.LockLevel.TABLE,
            dbname=db,
            tablename=name,
            isTransactional=True,
        )
        request = hms.LockRequest(
            component=[component], user=current_user() or "iceberg-rest", hostname=_HOST
        )
        with mapped(lambda: no_table(db, name)):
            response = self.handler.lock(request)
            deadline = time.monotonic() + self.lock_timeout
            pause = 0.005
            while response.state == hms.LockState.WAITING and time.monotonic() < deadline:
                time.sleep(pause)
                pause = min(pause * 2, 0.1)
                response = self.handler.check_lock(hms.CheckLockRequest(lockid=response.lockid))
        if response.state != hms.LockState.ACQUIRED:
            self._unlock(response.lockid)
            raise commit_failed(
                f"{db}.{name} is locked by another writer (waited {self.lock_timeout:g} s); retry"
            )
        return int(response.lockid)

    def _unlock(self, lockid: int) -> None:
        try:
            self.handler.unlock(hms.UnlockRequest(lockid=lockid))
        except Exception:  # noqa: BLE001 - the lock times out on its own
            log.warning("could not release lock %s", lockid, exc_info=True)


def _apply(base: Any, req: CommitTableRequest, base_location: str | None) -> Any:
    try:
        return update_table_metadata(
            base, req.updates, enforce_validation=True, metadata_location=base_location
        )
    except CommitFailedException as exc:
        raise commit_failed(str(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - PyIceberg refusing an update: the client's fault
        raise bad_request(f"invalid update: {exc}") from exc
