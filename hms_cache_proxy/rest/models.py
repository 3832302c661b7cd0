"""The REST payloads this catalog reads and writes, as thin pydantic models over PyIceberg's
own Schema, PartitionSpec, SortOrder, TableRequirement and TableUpdate (the spec's shapes; the
client-side models of PyIceberg make fields required that the spec leaves optional)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortOrder
from pyiceberg.table.update import TableRequirement, TableUpdate


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


def _strings(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): v if isinstance(v, str) else str(v) for k, v in value.items()}
    return value


class CreateNamespaceRequest(_Model):
    namespace: list[str]
    properties: dict[str, str] = Field(default_factory=dict)

    _props = field_validator("properties", mode="before")(lambda cls, v: _strings(v))


class UpdateNamespacePropertiesRequest(_Model):
    removals: list[str] = Field(default_factory=list)
    updates: dict[str, str] = Field(default_factory=dict)

    _props = field_validator("updates", mode="before")(lambda cls, v: _strings(v))


class TableIdentifierModel(_Model):
    namespace: list[str]
    name: str


class CreateTableRequest(_Model):
    name: str
    location: str | None = None
    table_schema: Schema = Field(alias="schema")
    partition_spec: PartitionSpec | None = Field(default=None, alias="partition-spec")
    write_order: SortOrder | None = Field(default=None, alias="write-order")
    stage_create: bool = Field(default=False, alias="stage-create")
    properties: dict[str, str] = Field(default_factory=dict)

    _props = field_validator("properties", mode="before")(lambda cls, v: _strings(v))


class CommitTableRequest(_Model):
    identifier: TableIdentifierModel | None = None
    requirements: tuple[TableRequirement, ...] = ()
    updates: tuple[TableUpdate, ...] = ()


class RenameTableRequest(_Model):
    source: TableIdentifierModel
    destination: TableIdentifierModel


class RegisterTableRequest(_Model):
    name: str
    metadata_location: str = Field(alias="metadata-location")
    overwrite: bool = False
