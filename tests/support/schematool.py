"""A PostgreSQL metastore database built the way Hive's schematool builds one.

Stands in for running ``schematool -initSchema`` (which needs Java and Hive): the DDL is rendered
at test time from the facts in ``tests/data/hive-4.0.0-postgres-schema.json``, which were
parsed from Hive's own script, so the result is the database a stock metastore would be given,
independent of the project's SQLAlchemy schema. Like schematool it stops at the script: no
``default`` database, and the ``hive`` catalog's location is still ``'TBD'``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine, text

from tests.support.facts import SCHEMA_FACTS, load_facts


def load_schema_facts() -> dict[str, Any]:
    """The parsed facts of Hive 4.0.0's PostgreSQL schema (layout: tests/data/README.md)."""
    return load_facts(SCHEMA_FACTS)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _cols(names: list[str]) -> str:
    return ", ".join(_q(n) for n in names)


def render_ddl(facts: dict[str, Any]) -> list[str]:
    """The script's statements in an order PostgreSQL accepts: tables, indexes, foreign keys."""
    stmts: list[str] = []
    for t in facts["tables"]:
        parts = []
        for c in t["columns"]:
            col = f"{_q(c['name'])} {c['type']}"
            if c["default"] is not None:
                col += f" DEFAULT {c['default']}"
            if not c["nullable"]:
                col += " NOT NULL"
            parts.append(col)
        if t["primary_key"]:
            parts.append(
                f"CONSTRAINT {_q(t['primary_key_name'])} PRIMARY KEY ({_cols(t['primary_key'])})"
            )
        for u in t["unique_constraints"]:
            parts.append(f"CONSTRAINT {_q(u['name'])} UNIQUE ({_cols(u['columns'])})")
        for ck in t["check_constraints"]:
            parts.append(f"CONSTRAINT {_q(ck['name'])} CHECK ({ck['expression']})")
        stmts.append(f"CREATE TABLE {_q(t['name'])} (\n  " + ",\n  ".join(parts) + "\n)")
    for t in facts["tables"]:
        for i in t["indexes"]:
            unique = "UNIQUE " if i["unique"] else ""
            stmts.append(
                f"CREATE {unique}INDEX {_q(i['name'])} ON {_q(t['name'])} "
                f"USING {i['method']} ({_cols(i['columns'])})"
            )
    for t in facts["tables"]:
        for f in t["foreign_keys"]:
            fk = (
                f"ALTER TABLE {_q(t['name'])} ADD CONSTRAINT {_q(f['name'])} "
                f"FOREIGN KEY ({_cols(f['columns'])}) "
                f"REFERENCES {_q(f['ref_table'])} ({_cols(f['ref_columns'])}) "
                f"ON DELETE {f['on_delete'].upper()} ON UPDATE {f['on_update'].upper()}"
            )
            if f["deferrable"]:
                deferred = "DEFERRED" if f["initially_deferred"] else "IMMEDIATE"
                fk += f" DEFERRABLE INITIALLY {deferred}"
            stmts.append(fk)
    stmts += facts["schema_privilege_statements"]
    return stmts


def _seed_statements(facts: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for row in facts["seed_rows"]:
        params = {f"v{i}": v for i, v in enumerate(row["values"])}
        values = ", ".join(f":v{i}" for i in range(len(row["values"])))
        head = f"INSERT INTO {_q(row['table'])} ({_cols(row['columns'])}) "
        if row["conditional"]:
            out.append((head + f"SELECT {values} WHERE {row['condition']}", params))
        else:
            out.append((head + f"VALUES ({values})", params))
    return out


def build_schematool_database(url: str) -> None:
    """Create Hive 4.0.0's schema and seed rows in the (empty) PostgreSQL database at ``url``."""
    facts = load_schema_facts()
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            for stmt in render_ddl(facts):
                conn.exec_driver_sql(stmt)
            for sql, params in _seed_statements(facts):
                conn.execute(text(sql), params)
    finally:
        engine.dispose()
