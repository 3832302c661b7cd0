"""One REST request answered: the operation a route names, its body parsed, its answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from hms_cache_proxy.config import Settings
from hms_cache_proxy.confined_fs import ConfinedFS, Roots
from hms_cache_proxy.rest.commit import Committer
from hms_cache_proxy.rest.errors import bad_request
from hms_cache_proxy.rest.fileio import Storage
from hms_cache_proxy.rest.metadata import MetadataFiles
from hms_cache_proxy.rest.models import (
    CommitTableRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    RegisterTableRequest,
    RenameTableRequest,
    UpdateNamespacePropertiesRequest,
)
from hms_cache_proxy.rest.namespaces import Namespaces, database_name
from hms_cache_proxy.rest.routes import ENDPOINTS
from hms_cache_proxy.rest.tables import Tables

Answer = tuple[int, bytes]
NO_CONTENT: Answer = (204, b"")


def _json(value: Any) -> Answer:
    return 200, json.dumps(value).encode()


class Catalog:
    """The REST operations over the (access-guarded) Thrift handler."""

    def __init__(self, handler: Any, settings: Settings) -> None:
        storage = Storage(settings, ConfinedFS(Roots(settings.filesystem_root_uris())))
        files = MetadataFiles(
            storage, settings.rest_metadata_cache_bytes, settings.rest_max_metadata_bytes
        )
        self.settings = settings
        self.namespaces = Namespaces(handler)
        self.tables = Tables(handler, self.namespaces, files)
        self.committer = Committer(handler, self.tables, settings.rest_lock_timeout_seconds)

    def answer(
        self, op: str, ns: list[str] | None, table: str | None, query: dict[str, str], body: bytes
    ) -> Answer:
        db = database_name(ns) if ns is not None else ""
        method: Callable[[str, str, dict[str, str], bytes], Answer] = getattr(self, f"_{op}")
        return method(db, table or "", query, body)

    def _list_namespaces(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        parent = query.get("parent")
        return _json(self.namespaces.list(parent.split("\x1f") if parent else None))

    def _create_namespace(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        return _json(self.namespaces.create(_parse(CreateNamespaceRequest, body)))

    def _load_namespace(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        return _json(self.namespaces.load(db))

    def _namespace_exists(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        self.namespaces.database(db)
        return NO_CONTENT

    def _drop_namespace(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        self.namespaces.drop(db)
        return NO_CONTENT

    def _update_namespace(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        req = _parse(UpdateNamespacePropertiesRequest, body)
        return _json(self.namespaces.update_properties(db, req))

    def _list_tables(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        return _json(self.tables.list(db))

    def _create_table(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        return 200, self.tables.create(db, _parse(CreateTableRequest, body))

    def _load_table(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        return 200, self.tables.load(db, name)

    def _table_exists(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        self.tables.hms_table(db, name)
        return NO_CONTENT

    def _update_table(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        return 200, self.committer.commit(db, name, _parse(CommitTableRequest, body))

    def _drop_table(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        self.tables.drop(db, name, query.get("purgeRequested", "").lower() == "true")
        return NO_CONTENT

    def _report_metrics(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        return NO_CONTENT  # accepted and not kept

    def _register_table(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        return 200, self.tables.register(db, _parse(RegisterTableRequest, body))

    def _rename_table(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        self.tables.rename(_parse(RenameTableRequest, body))
        return NO_CONTENT

    def _config(self, db: str, name: str, query: dict[str, str], body: bytes) -> Answer:
        config: dict[str, Any] = {"defaults": {}, "overrides": {}, "endpoints": ENDPOINTS}
        lifetime = self.settings.rest_idempotency_lifetime_seconds
        if lifetime > 0:
            config["idempotency-key-lifetime"] = f"PT{int(lifetime)}S"
        return _json(config)


def _parse(model: type[BaseModel], body: bytes) -> Any:
    if not body:
        raise bad_request("this request needs a JSON body")
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        errors = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(body)'}: {e['msg']}"
            for e in exc.errors()[:5]
        )
        raise bad_request(f"invalid {model.__name__}: {errors}") from None
