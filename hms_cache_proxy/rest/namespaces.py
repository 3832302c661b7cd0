"""Namespaces: a namespace is one database of the ``hive`` catalog (no nesting)."""

from __future__ import annotations

from typing import Any

from hms_cache_proxy.handler.access import current_user
from hms_cache_proxy.handler.validate import is_valid_name
from hms_cache_proxy.idl import hms
from hms_cache_proxy.rest.errors import RestError, bad_request, no_namespace
from hms_cache_proxy.rest.models import CreateNamespaceRequest, UpdateNamespacePropertiesRequest
from hms_cache_proxy.rest.thrift_errors import mapped

LOCATION = "location"
COMMENT = "comment"


def database_name(namespace: list[str]) -> str:
    """The database a namespace names; 400 for nested or empty ones."""
    if len(namespace) != 1 or not is_valid_name(namespace[0], special_characters=True):
        raise bad_request(
            f"namespace {'.'.join(namespace) or '(empty)'}: this catalog has one level of "
            "namespaces (Hive databases)"
        )
    return namespace[0]


class Namespaces:
    """The namespace endpoints over the (guarded) Thrift handler."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    def database(self, name: str) -> hms.Database:
        with mapped(lambda: no_namespace(name)):
            return self.handler.get_database(name)

    def list(self, parent: list[str] | None) -> dict[str, Any]:
        if parent:
            self.database(database_name(parent))
            return {"namespaces": []}
        with mapped():
            names = self.handler.get_all_databases()
        return {"namespaces": [[n] for n in sorted(names)]}

    def load(self, name: str) -> dict[str, Any]:
        db = self.database(name)
        return {"namespace": [db.name], "properties": properties(db)}

    def create(self, req: CreateNamespaceRequest) -> dict[str, Any]:
        name = database_name(req.namespace)
        props = dict(req.properties)
        db = hms.Database(
            name=name,
            description=props.pop(COMMENT, None),
            locationUri=props.pop(LOCATION, None),
            parameters=props,
            ownerName=current_user() or "iceberg-rest",
            ownerType=hms.PrincipalType.USER,
        )
        try:
            with mapped(refusal=True):
                self.handler.create_database(db)
        except RestError as exc:
            if exc.status == 409:
                raise RestError(
                    409, "AlreadyExistsException", f"Namespace already exists: {name}"
                ) from exc
            raise
        return {"namespace": [name], "properties": properties(self.database(name))}

    def drop(self, name: str) -> None:
        self.database(name)
        try:
            with mapped(lambda: no_namespace(name)):
                self.handler.drop_database(name, False, False)
        except RestError as exc:
            if exc.status == 400:
                raise RestError(409, "NamespaceNotEmptyException", exc.message) from exc
            raise

    def update_properties(self, name: str, req: UpdateNamespacePropertiesRequest) -> dict[str, Any]:
        both = sorted(set(req.removals) & set(req.updates))
        if both:
            raise RestError(
                422, "UnprocessableEntityException", f"both removed and updated: {both}"
            )
        if LOCATION in req.removals:
            raise bad_request("a namespace's location cannot be removed")
        db = self.database(name)
        params = dict(db.parameters or {})
        current = properties(db)
        missing = [k for k in req.removals if k not in current]
        for key in req.removals:
            if key == COMMENT:
                db.description = None
            params.pop(key, None)
        for key, value in req.updates.items():
            if key == COMMENT:
                db.description = value
            elif key == LOCATION:
                db.locationUri = value
            else:
                params[key] = value
        db.parameters = params
        with mapped(lambda: no_namespace(name), refusal=True):
            self.handler.alter_database(name, db)
        return {
            "updated": sorted(req.updates),
            "removed": sorted(k for k in req.removals if k not in missing),
            "missing": sorted(missing),
        }


def properties(db: hms.Database) -> dict[str, str]:
    out = dict(db.parameters or {})
    if db.locationUri:
        out[LOCATION] = db.locationUri
    if db.description:
        out[COMMENT] = db.description
    return out
