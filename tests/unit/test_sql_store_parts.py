"""The SQL store is one object per family, composed by SqlStore: every call of the contract goes
to the one family that defines it, with the contract's parameters (mypy sees only the contract's
signature on SqlStore, so the families' own signatures are checked here)."""

from __future__ import annotations

import inspect

import pytest

from hms_cache_proxy.store import api
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.forwarding import Forwarded
from hms_cache_proxy.store.sql import store as sql_store
from hms_cache_proxy.store.sql.sql_base import SqlPart, SqlShared
from hms_cache_proxy.store.sql.store import SqlStore


def _store() -> SqlStore:
    return SqlStore(Database("sqlite://"), warehouse_uri="file:/unused")


def _contract() -> dict[str, object]:
    out: dict[str, object] = {}
    for proto in (api.Metadata, api.DatabaseTableReads, api.Events):
        for name, value in vars(proto).items():
            if not name.startswith("_") and callable(value):
                out.setdefault(name, value)
    return out


def _shape(fn: object) -> list[tuple[str, object, bool]]:
    """Parameters as (name, kind, has a default), without ``self``."""
    params = list(inspect.signature(fn).parameters.values())[1:]  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default is not inspect.Parameter.empty) for p in params]


def test_every_contract_call_is_forwarded_to_a_family() -> None:
    forwarded = {n for n, v in vars(SqlStore).items() if isinstance(v, Forwarded)}
    assert sorted(set(_contract()) - forwarded) == []


@pytest.mark.parametrize("name", sorted(_contract()))
def test_the_family_method_takes_the_contracts_parameters(name: str) -> None:
    bound = getattr(_store(), name)
    assert isinstance(bound.__self__, SqlPart)
    assert _shape(bound.__func__) == _shape(_contract()[name])


def test_the_families_share_one_set_of_collaborators() -> None:
    store = _store()
    parts = store.parts()
    assert len(parts) == len({type(p) for p in parts}) == 15
    for part in parts:
        assert part.db is store.db and part.txn is store.txn and part.events is store.events
    assert store.partitions.tables is store.tables
    assert store.stats_writes.reads is store.stats_reads


def test_a_name_two_families_define_is_refused() -> None:
    class First(SqlPart):
        def get_table(self) -> None: ...

    class Second(SqlPart):
        def get_table(self) -> None: ...

    shared = SqlShared(Database("sqlite://"), warehouse_uri="file:/unused")
    with pytest.raises(TypeError, match=r"SqlStore.get_table: defined by \['First', 'Second'\]"):
        sql_store._bind([First(shared), Second(shared)], ["get_table"])
    with pytest.raises(TypeError, match="SqlStore.get_table: defined by no family"):
        sql_store._bind([], ["get_table"])
