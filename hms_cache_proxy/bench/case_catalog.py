"""Every benchmark case, metadata and transaction calls together, looked up by name.

Separate from cases.py because the transaction cases build on that module's helpers.
"""

from __future__ import annotations

from hms_cache_proxy.bench.cases import Case, read_cases, write_cases
from hms_cache_proxy.bench.txn_cases import txn_cases


def all_cases() -> list[Case]:
    """The cases a run may choose from, in report order."""
    return read_cases() + write_cases() + txn_cases()


def case_by_name(name: str) -> Case:
    for case in all_cases():
        if case.name == name:
            return case
    raise KeyError(name)
