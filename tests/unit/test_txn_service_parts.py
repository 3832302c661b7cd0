"""The transaction service is one object per part (txns, write ids, locks, compactions, ...),
composed by TxnService: every call goes to the part that defines it, with the parameters of
store/api.py's Transactions where the contract names it."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from hms_cache_proxy.store import api
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.db.ids import IdAllocator
from hms_cache_proxy.store.events.log import EventLog
from hms_cache_proxy.store.events.messages import MessageBuilder
from hms_cache_proxy.store.forwarding import Forwarded
from hms_cache_proxy.store.txn import txn_service
from hms_cache_proxy.store.txn.txn_base import TxnPart, TxnShared
from hms_cache_proxy.store.txn.txn_service import TxnService
from hms_cache_proxy.store.txn.write_id_calls import WriteIdCalls


@pytest.fixture
def service(tmp_path: Path) -> TxnService:
    db = Database(f"sqlite:///{tmp_path / 'unused.db'}")
    return TxnService(db, EventLog(IdAllocator(db)), MessageBuilder())


def _contract(protocol: type = api.Transactions) -> dict[str, object]:
    return {
        name: value
        for name, value in vars(protocol).items()
        if not name.startswith("_") and callable(value)
    }


def _shape(fn: object) -> list[tuple[str, object, bool]]:
    params = list(inspect.signature(fn).parameters.values())[1:]  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default is not inspect.Parameter.empty) for p in params]


def test_every_contract_call_is_forwarded_to_a_part(service: TxnService) -> None:
    forwarded = {n for n, v in vars(TxnService).items() if isinstance(v, Forwarded)}
    assert sorted(set(_contract()) - forwarded) == []
    for name in _contract():
        bound = getattr(service, name)
        assert isinstance(bound.__self__, TxnPart)
        assert _shape(bound.__func__) == _shape(_contract()[name]), name


def test_the_surface_is_the_contract_and_the_write_id_calls(service: TxnService) -> None:
    calls = {
        name
        for name, value in vars(TxnService).items()
        if isinstance(value, Forwarded | staticmethod)
    }
    write_id_calls = _contract(WriteIdCalls)
    assert sorted(calls - set(_contract()) - set(write_id_calls)) == []
    assert sorted((set(_contract()) | set(write_id_calls)) - calls) == []
    for name in write_id_calls:  # bound: a part's method or a staticmethod, no self
        bound = inspect.signature(getattr(service, name)).parameters.values()
        assert [p.name for p in bound] == [p[0] for p in _shape(write_id_calls[name])], name


def test_the_parts_share_one_set_of_collaborators(service: TxnService) -> None:
    parts = service.parts()
    assert len(parts) == len({type(p) for p in parts}) == 9
    for part in parts:
        assert part.db is service.db and part.events is service.events
        assert part.config is service.config
    assert service.write_ids.txns is service.txns and service.locks.txns is service.txns
    assert service.txns.aborts is service.aborts and service.commits.aborts is service.aborts
    assert service.repl.commits is service.commits and service.repl.aborts is service.aborts


def test_a_name_two_parts_define_is_refused(tmp_path: Path) -> None:
    class First(TxnPart):
        def lock(self) -> None: ...

    class Second(TxnPart):
        def lock(self) -> None: ...

    db = Database(f"sqlite:///{tmp_path / 'unused.db'}")
    shared = TxnShared(db, EventLog(IdAllocator(db)), MessageBuilder())
    first = First(shared)
    with pytest.raises(TypeError, match=r"TxnService.lock: defined by \['First', 'Second'\]"):
        txn_service._bind([first, Second(shared)], ["lock"])
    with pytest.raises(TypeError, match="TxnService.lock: defined by no part"):
        txn_service._bind([], ["lock"])
