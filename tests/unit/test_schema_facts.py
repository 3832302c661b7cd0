"""schema.py against the facts of Hive 4.0.0's PostgreSQL script, table by table.

A stock metastore shares the database, so every name, type, default and constraint has to be
Hive's; any difference fails here.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy import (
    CHAR,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Double,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import TextClause

from hms_cache_proxy.store.db import schema
from tests.support.schematool import load_schema_facts

FACTS = load_schema_facts()
TABLES = {t["name"]: t for t in FACTS["tables"]}

# Declared type -> (SQLAlchemy class, length).
_SIMPLE_TYPES: dict[str, type] = {
    "bigint": BigInteger,
    "bigserial": BigInteger,
    "integer": Integer,
    "serial": Integer,
    "smallint": SmallInteger,
    "boolean": Boolean,
    "double precision": Double,
    "text": Text,
    "bytea": LargeBinary,
    "timestamp": DateTime,
}


def _expected_type(declared: str) -> tuple[type, int | None]:
    if declared in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[declared], None
    if declared == "char(1)":
        return CHAR, 1
    m = re.fullmatch(r"character varying\((\d+)\)", declared)
    assert m, f"type {declared!r} has no mapping in this test"
    return String, int(m.group(1))


def _default_of(column: Any) -> str | None:
    """A column's server default in the script's spelling."""
    default = column.server_default
    if default is None:
        return None
    arg = default.arg
    if isinstance(arg, TextClause):
        return arg.text
    return "'" + str(arg).replace("'", "''") + "'"


def _fact_default(fact: dict[str, Any]) -> str | None:
    # The script writes DEFAULT NULL on varchar columns both ways; PostgreSQL stores one form.
    if fact["default"] == "NULL::character varying":
        return "NULL"
    return fact["default"]


def _table(name: str) -> Table:
    table = schema.metadata.tables.get(name)
    assert table is not None, f"table {name} missing from schema.metadata"
    return table


def test_every_table_and_no_other() -> None:
    assert len(FACTS["tables"]) == FACTS["counts"]["tables"] == 85
    ours = set(schema.metadata.tables)
    theirs = set(TABLES)
    assert not theirs - ours, f"missing tables: {sorted(theirs - ours)}"
    assert not ours - theirs, f"tables Hive does not have: {sorted(ours - theirs)}"


@pytest.mark.parametrize("name", list(TABLES))
def test_module_variable(name: str) -> None:
    assert getattr(schema, name, None) is _table(name), f"schema.{name} is not the {name} table"


@pytest.mark.parametrize("name", list(TABLES))
def test_columns(name: str) -> None:
    table, fact = _table(name), TABLES[name]
    assert [c.name for c in table.columns] == [c["name"] for c in fact["columns"]]
    for fc in fact["columns"]:
        col = table.c[fc["name"]]
        where = f"{name}.{fc['name']}"
        cls, length = _expected_type(fc["type"])
        assert type(col.type) is cls, f"{where}: {col.type!r}, Hive has {fc['type']}"
        assert getattr(col.type, "length", None) == length, f"{where}: length"
        if cls is Boolean:
            assert col.type.create_constraint is False, f"{where}: Boolean adds a CHECK"
        assert col.nullable == fc["nullable"], f"{where}: nullable {col.nullable}"
        assert _default_of(col) == _fact_default(fc), f"{where}: default {_default_of(col)!r}"


@pytest.mark.parametrize("name", list(TABLES))
def test_only_serial_columns_autoincrement(name: str) -> None:
    """Ids come from SEQUENCE_TABLE; only Hive's serial columns may have a database sequence."""
    table, fact = _table(name), TABLES[name]
    serial = [c for c in fact["columns"] if "serial_sequence" in c]
    auto = table.autoincrement_column
    if not serial:
        assert auto is None, f"{name}.{auto.name if auto is not None else ''} would autoincrement"
        return
    (fc,) = serial
    assert auto is not None and auto.name == fc["name"]
    # PostgreSQL names a serial's sequence <table>_<column>_seq, as Hive's script relies on.
    assert fc["serial_sequence"] == f"{name}_{fc['name']}_seq"
    pg = auto.type.compile(dialect=postgresql.dialect())
    assert pg == {"bigserial": "BIGINT", "serial": "INTEGER"}[fc["type"]]
    # SQLite only autoincrements INTEGER PRIMARY KEY.
    assert auto.type.compile(dialect=sqlite.dialect()) == "INTEGER"
    assert table.dialect_options["sqlite"]["autoincrement"] is True


@pytest.mark.parametrize("name", list(TABLES))
def test_primary_key(name: str) -> None:
    table, fact = _table(name), TABLES[name]
    assert [c.name for c in table.primary_key.columns] == fact["primary_key"]
    if fact["primary_key"]:
        assert table.primary_key.name == fact["primary_key_name"]


@pytest.mark.parametrize("name", list(TABLES))
def test_unique_constraints(name: str) -> None:
    table, fact = _table(name), TABLES[name]
    ours = {
        (c.name, tuple(col.name for col in c.columns))
        for c in table.constraints
        if isinstance(c, UniqueConstraint) and c is not table.primary_key
    }
    theirs = {(u["name"], tuple(u["columns"])) for u in fact["unique_constraints"]}
    assert ours == theirs


@pytest.mark.parametrize("name", list(TABLES))
def test_check_constraints(name: str) -> None:
    table, fact = _table(name), TABLES[name]
    ours = {(c.name, str(c.sqltext)) for c in table.constraints if isinstance(c, CheckConstraint)}
    theirs = {(c["name"], c["expression"]) for c in fact["check_constraints"]}
    assert ours == theirs


@pytest.mark.parametrize("name", list(TABLES))
def test_indexes(name: str) -> None:
    table, fact = _table(name), TABLES[name]
    ours = {
        (
            i.name,
            tuple(c.name for c in i.columns),
            bool(i.unique),
            i.dialect_options["postgresql"]["using"] or "btree",
        )
        for i in table.indexes
    }
    theirs = {(i["name"], tuple(i["columns"]), i["unique"], i["method"]) for i in fact["indexes"]}
    assert ours == theirs


def _action(value: str | None) -> str:
    return (value or "no action").lower()


@pytest.mark.parametrize("name", list(TABLES))
def test_foreign_keys(name: str) -> None:
    table, fact = _table(name), TABLES[name]
    ours = {
        (
            fk.name,
            tuple(c.name for c in fk.columns),
            fk.referred_table.name,
            tuple(e.column.name for e in fk.elements),
            _action(fk.ondelete),
            _action(fk.onupdate),
            bool(fk.deferrable),
            (fk.initially or "IMMEDIATE").upper() == "DEFERRED",
        )
        for fk in table.foreign_key_constraints
    }
    theirs = {
        (
            f["name"],
            tuple(f["columns"]),
            f["ref_table"],
            tuple(f["ref_columns"]),
            f["on_delete"],
            f["on_update"],
            f["deferrable"],
            f["initially_deferred"],
        )
        for f in fact["foreign_keys"]
    }
    assert ours == theirs


def test_totals_match_the_facts() -> None:
    """A last guard that nothing was counted twice or skipped by the per-table tests."""
    counts = FACTS["counts"]
    tables = schema.metadata.tables.values()
    assert sum(len(t.columns) for t in tables) == counts["columns"]
    assert sum(1 for t in tables if t.primary_key.columns) == counts["tables_with_primary_key"]
    assert sum(len(t.foreign_key_constraints) for t in tables) == counts["foreign_keys"]
    assert sum(len(t.indexes) for t in tables) == counts["indexes"]
