"""Table metadata files: read (cached by location, which never changes), parsed, written.

PyIceberg does the metadata work: ``TableMetadataUtil`` parses, ``ToOutputFile`` writes. The
raw bytes are what a load answers, so nothing the library does not model is lost on a load; a
commit rewrites the file through the library, so one whose base holds fields the library would
drop is refused (``dropped_fields``) rather than silently losing them.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import OrderedDict
from typing import Any

from pyiceberg.catalog import MetastoreCatalog
from pyiceberg.serializers import ToOutputFile
from pyiceberg.table import TableProperties
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil

from hms_cache_proxy.rest.errors import RestError, bad_request
from hms_cache_proxy.rest.fileio import Storage, storage_error


class MetadataFiles:
    """Reads metadata files through ``Storage``; keeps up to ``max_bytes`` of them in memory."""

    def __init__(self, storage: Storage, max_bytes: int, max_file_bytes: int) -> None:
        self.storage = storage
        self._max_bytes = max_bytes
        self._max_file = max_file_bytes
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def raw(self, location: str) -> bytes:
        """The file's bytes (from memory when read before)."""
        with self._lock:
            data = self._cache.get(location)
            if data is not None:
                self._cache.move_to_end(location)
                return data
        io = self.storage.io_for(location)
        try:
            with io.new_input(location).open() as stream:
                data = stream.read(self._max_file + 1)
        except RestError:
            raise
        except Exception as exc:  # noqa: BLE001 - any storage failure, named for the client
            raise storage_error(location, exc) from exc
        if len(data) > self._max_file:
            raise bad_request(f"{location} is larger than rest_max_metadata_bytes")
        self._remember(location, data)
        return data

    def parsed(self, location: str) -> tuple[TableMetadata, bytes]:
        data = self.raw(location)
        try:
            return TableMetadataUtil.parse_raw(data.decode()), data
        except Exception as exc:  # noqa: BLE001 - a file no client can use
            raise RestError(
                422, "UnprocessableEntityException", f"{location} is not Iceberg metadata: {exc}"
            ) from exc

    def write(self, metadata: TableMetadata, location: str) -> None:
        """Write ``metadata`` as a new file (never over an existing one); a failure is 503:
        nothing was committed, the client may retry."""
        io = self.storage.io_for(location)
        try:
            ToOutputFile.table_metadata(metadata, io.new_output(location))
        except Exception as exc:  # noqa: BLE001 - any storage failure, named for the client
            raise RestError(
                503, "ServiceUnavailableException", f"cannot write {location}: {exc}"
            ) from exc

    def delete(self, location: str) -> None:
        self.storage.io_for(location).delete(location)
        with self._lock:
            data = self._cache.pop(location, None)
            if data is not None:
                self._size -= len(data)

    def _remember(self, location: str, data: bytes) -> None:
        if len(data) > self._max_bytes:
            return
        with self._lock:
            if location in self._cache:
                return
            self._cache[location] = data
            self._size += len(data)
            while self._size > self._max_bytes:
                _, old = self._cache.popitem(last=False)
                self._size -= len(old)


def new_location(metadata: TableMetadata, previous: str | None) -> str:
    """``<metadata dir>/<version>-<uuid>.metadata.json``, the version one above the previous's."""
    version = MetastoreCatalog._parse_metadata_version(previous) + 1 if previous else 0
    base = metadata.properties.get(TableProperties.WRITE_METADATA_PATH)
    folder = base.rstrip("/") if base else f"{metadata.location.rstrip('/')}/metadata"
    return f"{folder}/{version:05d}-{uuid.uuid4()}.metadata.json"


def dropped_fields(raw: bytes, metadata: TableMetadata) -> list[str]:
    """Paths of fields in the file ``raw`` that writing ``metadata`` back would lose."""
    original = json.loads(raw)
    rewritten = json.loads(metadata.model_dump_json())
    out: list[str] = []
    _compare(original, rewritten, "", out)
    return out


def _compare(a: Any, b: Any, path: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key, value in a.items():
            if key not in b:
                if value not in (None, [], {}):
                    out.append(f"{path}/{key}")
            else:
                _compare(value, b[key], f"{path}/{key}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _compare(x, y, f"{path}/{i}", out)
