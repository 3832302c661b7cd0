"""Tables: list, create (and stage-create), load, drop (and purge), rename, register.

Loads answer the HMS row's ``metadata_location`` (from the cache, through the handler) and the
metadata file's own bytes (cached by location). Only ICEBERG tables are listed or loaded."""

from __future__ import annotations

import json
import logging
from typing import Any

from pyiceberg.catalog import delete_data_files, delete_files
from pyiceberg.io import FileIO, InputFile, OutputFile
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

from hms_cache_proxy.handler.access import current_user
from hms_cache_proxy.handler.validate import is_valid_name
from hms_cache_proxy.idl import hms
from hms_cache_proxy.rest import hive_table
from hms_cache_proxy.rest.errors import RestError, bad_request, no_namespace, no_table
from hms_cache_proxy.rest.metadata import MetadataFiles, new_location
from hms_cache_proxy.rest.models import (
    CreateTableRequest,
    RegisterTableRequest,
    RenameTableRequest,
)
from hms_cache_proxy.rest.namespaces import Namespaces, database_name
from hms_cache_proxy.rest.thrift_errors import mapped
from hms_cache_proxy.thrift_bytes import Encoded, decode

log = logging.getLogger(__name__)


def table_result(location: str | None, metadata: bytes) -> bytes:
    """A LoadTableResult with the metadata file's bytes as they are."""
    head = json.dumps({"metadata-location": location, "config": {}})[:-1]
    return head.encode() + b', "metadata": ' + metadata + b"}"


def dump(metadata: TableMetadata) -> bytes:
    return metadata.model_dump_json().encode()


class Tables:
    """The table endpoints over the (guarded) Thrift handler."""

    def __init__(self, handler: Any, namespaces: Namespaces, files: MetadataFiles) -> None:
        self.handler = handler
        self.namespaces = namespaces
        self.files = files

    def hms_table(self, db: str, name: str) -> hms.Table:
        """The table's HMS row; 404 when missing or not an Iceberg table."""
        with mapped(lambda: no_table(db, name)):
            table = self.handler.get_table(db, name)
        if isinstance(table, Encoded):  # the cache's stored bytes
            table = decode(hms.Table, table)
        if not hive_table.is_iceberg(table):
            raise no_table(db, name)
        return table

    def list(self, db: str) -> dict[str, Any]:
        self.namespaces.database(db)
        with mapped(lambda: no_namespace(db)):
            names = self.handler.get_tables(db, "*")
            tables = self.handler.get_table_objects_by_name(db, names) if names else []
        ids = sorted(t.tableName for t in tables if hive_table.is_iceberg(t))
        return {"identifiers": [{"namespace": [db], "name": n} for n in ids]}

    def load(self, db: str, name: str) -> bytes:
        location = self.hms_table(db, name).parameters[hive_table.METADATA_LOCATION]
        return table_result(location, self.files.raw(location))

    def create(self, db: str, req: CreateTableRequest) -> bytes:
        table_name(req.name)
        database = self.namespaces.database(db)
        location = req.location or _child(database.locationUri, req.name)
        self.files.storage.io_for(location)  # refused before anything is built
        try:
            metadata = new_table_metadata(
                req.table_schema,
                req.partition_spec or UNPARTITIONED_PARTITION_SPEC,
                req.write_order or UNSORTED_SORT_ORDER,
                location,
                dict(req.properties),
            )
        except Exception as exc:  # noqa: BLE001 - PyIceberg's validation of the request
            raise bad_request(f"invalid table: {exc}") from exc
        with mapped(lambda: no_namespace(db)):
            if self.handler.get_tables(db, req.name.lower()):
                raise RestError(
                    409, "AlreadyExistsException", f"Table already exists: {db}.{req.name}"
                )
        if req.stage_create:
            return table_result(None, dump(metadata))
        return self.create_from(db, req.name, metadata)

    def create_from(self, db: str, name: str, metadata: TableMetadata) -> bytes:
        """Write ``metadata``'s first file and create the HMS table pointing at it (409 when
        the table appeared meanwhile; the file is removed again)."""
        table_name(name)
        location = new_location(metadata, None)
        self.files.write(metadata, location)
        row = hive_table.new_table(db, name, current_user() or "iceberg-rest", metadata, location)
        try:
            with mapped(lambda: no_namespace(db), refusal=True):
                self.handler.create_table(row)
        except RestError:
            self.forget(location)
            raise
        return table_result(location, dump(metadata))

    def drop(self, db: str, name: str, purge: bool) -> None:
        table = self.hms_table(db, name)
        location = table.parameters[hive_table.METADATA_LOCATION]
        metadata = self.files.parsed(location)[0] if purge else None
        with mapped(lambda: no_table(db, name)):
            self.handler.drop_table(db, name, False)
        if metadata is not None:
            self._purge(metadata, location)

    def rename(self, req: RenameTableRequest) -> None:
        src_db, dst_db = (
            database_name(req.source.namespace),
            database_name(req.destination.namespace),
        )
        table = self.hms_table(src_db, req.source.name)
        table_name(req.destination.name)
        self.namespaces.database(dst_db)
        with mapped():
            if self.handler.get_tables(dst_db, req.destination.name.lower()):
                raise RestError(
                    409,
                    "AlreadyExistsException",
                    f"Table already exists: {dst_db}.{req.destination.name}",
                )
        new = hms.Table(**table.__dict__)
        new.dbName, new.tableName = dst_db, req.destination.name
        with mapped(lambda: no_table(src_db, req.source.name), refusal=True):
            self.handler.alter_table(src_db, req.source.name, new)

    def register(self, db: str, req: RegisterTableRequest) -> bytes:
        table_name(req.name)
        if req.overwrite:
            raise RestError(
                406, "UnsupportedOperationException", "register with overwrite is not supported"
            )
        self.namespaces.database(db)
        metadata, raw = self.files.parsed(req.metadata_location)
        row = hive_table.new_table(
            db, req.name, current_user() or "iceberg-rest", metadata, req.metadata_location
        )
        with mapped(lambda: no_namespace(db), refusal=True):
            self.handler.create_table(row)
        return table_result(req.metadata_location, raw)

    def _purge(self, metadata: TableMetadata, location: str) -> None:
        """Delete the files of a dropped table that lie below its location (never others')."""
        io = self.files.storage.io_for(metadata.location)
        prefix = metadata.location.rstrip("/") + "/"
        manifests = []
        lists = set()
        for snapshot in metadata.snapshots:
            lists.add(snapshot.manifest_list)
            manifests.extend(snapshot.manifests(io))
        mine = [m for m in {m.manifest_path: m for m in manifests}.values()]
        delete_data_files(_Below(io, prefix), mine)
        delete_files(_Below(io, prefix), {m.manifest_path for m in mine}, "manifest")
        delete_files(_Below(io, prefix), lists, "manifest list")
        olds = {e.metadata_file for e in metadata.metadata_log} | {location}
        delete_files(_Below(io, prefix), olds, "metadata")
        for path in olds:
            self.forget(path)

    def forget(self, location: str) -> None:
        try:
            self.files.delete(location)
        except Exception:  # noqa: BLE001 - best effort; logged
            log.warning("could not delete %s", location, exc_info=True)


class _Below(FileIO):
    """A FileIO that deletes only below ``prefix`` (other paths are logged and kept)."""

    def __init__(self, io: FileIO, prefix: str) -> None:
        super().__init__({})
        self._io, self._prefix = io, prefix

    def new_input(self, location: str) -> InputFile:
        return self._io.new_input(location)

    def new_output(self, location: str) -> OutputFile:
        raise PermissionError("purge writes nothing")

    def delete(self, location: str | InputFile | OutputFile) -> None:
        if not isinstance(location, str):
            location = location.location
        if not location.startswith(self._prefix):
            log.warning("purge keeps %s: it lies outside the table's location", location)
            return
        self._io.delete(location)


def table_name(name: str) -> None:
    """400 unless a new table's name is letters, digits and _ (it becomes part of a path)."""
    if not is_valid_name(name, special_characters=False):
        raise bad_request(f"{name!r} is not a valid table name here: use letters, digits and _")


def _child(parent: str | None, name: str) -> str:
    if not parent:
        raise bad_request("the namespace has no location; give the table a location")
    return f"{parent.rstrip('/')}/{name.lower()}"
