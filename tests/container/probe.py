"""Thrift calls that scripts/container-test.sh makes from the host against a running container,
with Apache Thrift's own client (tests/support/apache_thrift.py), as Spark or Hive would.

    python -m tests.container.probe create HOST:PORT DB TABLE   creates both (an existing database
                                                                 is reused) and reads the table back
    python -m tests.container.probe expect HOST:PORT DB TABLE   the table is there (waits up to
                                                                 --wait seconds: another proxy's
                                                                 cache follows the notification log)

Exit status 0 when the metastore answered as expected; otherwise a message saying what it did
answer, and status 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.metastore import table


class ProbeFailed(RuntimeError):
    """The metastore answered, but not as expected (or not at all)."""


def _client(address: str, wait: float) -> tuple[Any, Any]:
    """A connected client; retries while the port refuses (the container is still starting)."""
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + wait
    while True:
        try:
            return apache_client(host, int(port), timeout=30.0)
        except Exception as exc:  # OSError, or thrift's TTransportException (not an OSError)
            if time.monotonic() > deadline:
                raise ProbeFailed(f"no Thrift connection to {address}: {exc}") from exc
            time.sleep(0.5)


def create(address: str, db: str, name: str, wait: float) -> str:
    """Create database ``db`` (unless present) and table ``db.name``; return its location."""
    T = load_apache_modules().ttypes
    client, transport = _client(address, wait)
    try:
        if db not in client.get_all_databases():
            client.create_database(T.Database(name=db, parameters={}))
        client.create_table(table(T, db, name, ["id:bigint", "name:string"], ["day:string"]))
        got = client.get_table(db, name)
        columns = [(c.name, c.type) for c in got.sd.cols]
        if columns != [("id", "bigint"), ("name", "string")]:
            raise ProbeFailed(f"{db}.{name} read back with columns {columns}")
        return str(got.sd.location)
    finally:
        transport.close()


def expect(address: str, db: str, name: str, wait: float) -> str:
    """Wait until ``db.name`` is listed and readable through ``address``; return its location."""
    client, transport = _client(address, wait)
    deadline = time.monotonic() + wait
    try:
        while True:
            tables = client.get_all_tables(db) if db in client.get_all_databases() else []
            if name in tables:
                got = client.get_table(db, name)
                keys = [k.name for k in got.partitionKeys]
                if keys != ["day"]:
                    raise ProbeFailed(f"{db}.{name} has partition keys {keys}, not ['day']")
                return str(got.sd.location)
            if time.monotonic() > deadline:
                listed = client.get_all_databases()
                raise ProbeFailed(
                    f"{db}.{name} not seen through {address} after {wait:.0f}s "
                    f"(databases {listed}, tables of {db}: {tables})"
                )
            time.sleep(0.5)
    finally:
        transport.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.container.probe")
    parser.add_argument("action", choices=["create", "expect"])
    parser.add_argument("address", help="HOST:PORT of the Thrift endpoint")
    parser.add_argument("db")
    parser.add_argument("table")
    parser.add_argument("--wait", type=float, default=30.0, help="seconds to wait (default 30)")
    args = parser.parse_args(argv)
    action = create if args.action == "create" else expect
    try:
        location = action(args.address, args.db, args.table, args.wait)
    except Exception as exc:
        print(f"probe {args.action} {args.db}.{args.table} at {args.address}: {exc!r}")
        return 1
    print(f"probe {args.action}: {args.db}.{args.table} at {args.address}, location {location}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
