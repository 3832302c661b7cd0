"""The SQL store is one object per family, composed by SqlStore: every call of the contract names
the family method that answers it (``Forwarded(Tables.get_table)``), with the contract's
parameters (mypy checks the types where SqlStore is used as the contract; the parameter names and
defaults, which a positional-only view would let differ, are checked here)."""

from __future__ import annotations

import inspect

import pytest

from hms_cache_proxy.store import api
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.forwarding import Forwarded, bind_owners
from hms_cache_proxy.store.sql.sql_base import SqlPart, SqlShared
from hms_cache_proxy.store.sql.sql_store import SqlStore
from tests.support.stores import sql_store


def _store() -> SqlStore:
    return sql_store(Database("sqlite://"), "file:/unused")


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
    assert len(parts) == len({type(p) for p in parts}) == 18
    for part in parts:
        assert part.db is store.db and part.txn is store.txn and part.events is store.events
    assert store.partition_writes.reads is store.partition_reads
    assert store.partition_alters.reads is store.partition_reads
    assert store.partition_alters.table_alters is store.table_alters
    assert store.table_alters.tables is store.tables
    assert store.partition_writes.tables is store.partition_alters.tables is store.tables
    assert store.stats_writes.reads is store.stats_reads


def test_each_forward_names_the_family_that_answers_it() -> None:
    store = _store()
    for name, value in vars(SqlStore).items():
        if isinstance(value, Forwarded):
            bound = getattr(store, name)
            assert bound.__func__ is value.target
            assert isinstance(bound.__self__, SqlPart)


def test_a_forward_binds_by_identity_not_by_name() -> None:
    class First(SqlPart):
        def get_table(self) -> None: ...

    class Second(SqlPart):
        def get_table(self) -> None: ...

    class Composed:
        get_table = Forwarded(First.get_table)

    store = _store()
    shared = SqlShared(
        store.db, store.txn, events=store.events, messages=store.messages, warehouse_uri="file:/w"
    )
    first, second = First(shared), Second(shared)
    assert bind_owners(Composed, [second, first])["get_table"].__self__ is first
    with pytest.raises(TypeError, match=r"Composed.get_table -> .*First.get_table: no part"):
        bind_owners(Composed, [second])
    with pytest.raises(TypeError, match=r"\['First', 'First'\], expected one"):
        bind_owners(Composed, [first, First(shared)])
