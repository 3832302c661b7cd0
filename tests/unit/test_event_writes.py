"""The writes that append notification events are marked, and the caching store follows exactly
those with a catch-up (store/event_writes.py).

Which SQL-store methods append events is found from their code. The SQL store is one object per
family (``SqlStore.parts``); a method appends when it calls ``self._emit`` or the event log's
``self.events.append``/``reserve``/``write``, or calls a method that does: one of its own family
(``self.name``), one of a family it holds (``self.tables.name``), or a module function of the
store (whose code is searched by name), followed transitively. A new write left unmarked fails
here.
"""

from __future__ import annotations

import dis
import inspect
import types
from collections.abc import Callable
from typing import Any

from hms_cache_proxy.store import api
from hms_cache_proxy.store.cache.cache import Cache
from hms_cache_proxy.store.cached.cached_store import CachedStore
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.event_writes import is_event_write, writes_events
from hms_cache_proxy.store.forwarding import Forwarded
from hms_cache_proxy.store.sql.sql_base import SqlPart
from hms_cache_proxy.store.sql.sql_store import SqlStore
from tests.support.stores import sql_store

_EVENT_LOG_CALLS = {"append", "reserve", "write"}
_SELF_LOADS = {"LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE"}
_ATTR_LOADS = {"LOAD_ATTR", "LOAD_METHOD"}


def _codes(code: types.CodeType) -> list[types.CodeType]:
    """A function's code and the code of the functions nested in it."""
    out = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out += _codes(const)
    return out


def _names(code: types.CodeType) -> set[str]:
    """Every global and attribute name a function's code (nested functions included) uses."""
    return {name for c in _codes(code) for name in c.co_names}


def _self_chains(code: types.CodeType) -> set[tuple[str, ...]]:
    """The attributes read from ``self``: ``self.a`` as ("a",), ``self.a.b`` as ("a", "b")."""
    out: set[tuple[str, ...]] = set()
    for c in _codes(code):
        ins = list(dis.get_instructions(c))
        for i, load in enumerate(ins):
            if load.opname not in _SELF_LOADS or load.argval != "self":
                continue
            chain: list[str] = []
            for attr in ins[i + 1 : i + 3]:
                if attr.opname not in _ATTR_LOADS:
                    break
                chain.append(attr.argval)
            if chain:
                out.add(tuple(chain))
    return out


def _sql_store() -> SqlStore:
    """A SQL store over an in-memory database that is never opened: its families, for their
    code and for how they hold each other."""
    return sql_store(Database("sqlite://"), "file:/unused")


def _public_methods() -> dict[str, tuple[Callable[..., Any], SqlPart]]:
    """The public methods of the SQL store's families: name -> (function, the family)."""
    methods: dict[str, tuple[Callable[..., Any], SqlPart]] = {}
    for part in _sql_store().parts():
        for name, value in inspect.getmembers(type(part), inspect.isfunction):
            if name.startswith("_"):
                continue
            assert name not in methods, f"{name} is a method of two families"
            methods[name] = (value, part)
    return methods


def _store_methods() -> dict[str, Callable[..., Any]]:
    return {name: fn for name, (fn, _) in _public_methods().items()}


def _sql_method(name: str) -> Callable[..., Any]:
    """The function a call of the SQL store's ``name`` runs (in the family that answers it)."""
    return _public_methods()[name][0]


def _function_appends(fn: Callable[..., Any], seen: set[Any]) -> bool:
    """A module function of the store: searched by the names its code uses."""
    if fn in seen:
        return False
    seen.add(fn)
    names = _names(fn.__code__)  # type: ignore[attr-defined]
    if "_emit" in names or ("events" in names and names & _EVENT_LOG_CALLS):
        return True
    return _globals_append(fn, names, seen)


def _globals_append(fn: Callable[..., Any], names: set[str], seen: set[Any]) -> bool:
    for name in names:
        found = fn.__globals__.get(name)  # type: ignore[attr-defined]
        if (
            inspect.isfunction(found)
            and found.__module__.startswith("hms_cache_proxy.store")
            and _function_appends(found, seen)
        ):
            return True
    return False


def _appends_events(fn: Callable[..., Any], part: SqlPart, seen: set[Any]) -> bool:
    """Whether ``fn``, a method of the family ``part``, appends events (see the module doc)."""
    if (fn, id(part)) in seen:
        return False
    seen.add((fn, id(part)))
    chains = _self_chains(fn.__code__)  # type: ignore[attr-defined]
    if ("_emit",) in chains or any(
        len(c) == 2 and c[0] == "events" and c[1] in _EVENT_LOG_CALLS for c in chains
    ):
        return True
    for chain in chains:
        owner, name = part, chain[0]
        held = getattr(part, chain[0], None)
        if isinstance(held, SqlPart) and len(chain) == 2:
            owner, name = held, chain[1]
        callee = getattr(type(owner), name, None)
        if inspect.isfunction(callee) and _appends_events(callee, owner, seen):
            return True
    return _globals_append(fn, _names(fn.__code__), seen)  # type: ignore[attr-defined]


def event_writers() -> set[str]:
    """The SQL store's public methods whose code appends notification events."""
    return {
        name for name, (fn, part) in _public_methods().items() if _appends_events(fn, part, set())
    }


def contract_methods() -> set[str]:
    return {
        name
        for proto in (api.Metadata, api.TableReads, api.Events)
        for name, value in vars(proto).items()
        if not name.startswith("_") and callable(value)
    }


def test_the_walk_finds_the_writes_it_must() -> None:
    """The search sees through helpers: these are known to append events."""
    found = event_writers()
    assert {
        "create_table",
        "alter_partitions",
        "update_table_column_statistics",
        "create_function",
        "drop_function",
        "fire_insert_events",
        "add_write_notifications",
    } <= found
    assert not {"get_table", "get_function", "alter_function", "create_role"} & found


def test_every_method_that_appends_events_is_marked() -> None:
    unmarked = sorted(n for n in event_writers() if not is_event_write(_sql_method(n)))
    assert unmarked == [], f"append notification events but lack @writes_events: {unmarked}"


def test_every_marked_method_appends_events() -> None:
    """A mark on a method that writes no event would cost every call a needless catch-up."""
    marked = {n for n, fn in _store_methods().items() if is_event_write(fn)}
    assert sorted(marked - event_writers()) == []


def test_marked_methods_outside_the_contract_run_inside_a_callers_transaction() -> None:
    """A write the handler can reach is in the contract (mypy checks the handler against it);
    the marked methods outside it take the caller's connection: their events are committed
    by a contract write, which is marked."""
    marked = {n for n, fn in _store_methods().items() if is_event_write(fn)}
    for name in sorted(marked - contract_methods()):
        params = list(inspect.signature(_sql_method(name)).parameters)
        assert params[1] == "conn", f"{name} writes events and is not in store/api.py"


def _caching_store(sql: Any, catch_ups: list[int]) -> CachedStore:
    return CachedStore(
        sql,
        Cache(1 << 20),
        loader=types.SimpleNamespace(request_databases=lambda: None),
        catch_up=lambda: catch_ups.append(1),
    )


def _recording_sql(calls: list[str]) -> Any:
    """An object with the SQL store's contract methods that records calls; each carries the
    SQL store's mark exactly when the real method does."""
    sql = types.SimpleNamespace(txn=types.SimpleNamespace())
    for name in contract_methods():

        def method(*_: Any, __name: str = name, **__: Any) -> None:
            calls.append(__name)

        if is_event_write(_sql_method(name)):
            writes_events(method)
        setattr(sql, name, method)
    return sql


def _forwarded_by_caching_store() -> set[str]:
    return {
        name
        for name in contract_methods()
        if isinstance(inspect.getattr_static(CachedStore, name), Forwarded)
    }


def test_the_caching_store_forwards_every_marked_write() -> None:
    """Its own methods are reads: a write it defined itself would skip the wrapping."""
    marked = {n for n in contract_methods() if is_event_write(_sql_method(n))}
    assert marked, "no marked write in the contract"
    assert sorted(marked - _forwarded_by_caching_store()) == []


def test_the_caching_store_catches_up_after_exactly_the_marked_writes() -> None:
    calls: list[str] = []
    catch_ups: list[int] = []
    store = _caching_store(_recording_sql(calls), catch_ups)
    for name in sorted(_forwarded_by_caching_store()):
        before = len(catch_ups)
        getattr(store, name)()
        assert calls[-1] == name
        caught_up = len(catch_ups) - before
        expected = 1 if is_event_write(_sql_method(name)) else 0
        assert caught_up == expected, f"{name}: {caught_up} catch-ups, expected {expected}"


def test_a_failed_write_still_catches_up() -> None:
    """A write that raised catches up too: the cache is not left behind a call that may have
    committed (a connection lost after COMMIT raises as well)."""
    catch_ups: list[int] = []

    @writes_events
    def create_function(*_: Any) -> None:
        raise RuntimeError("refused")

    sql = types.SimpleNamespace(txn=types.SimpleNamespace(), create_function=create_function)
    store = _caching_store(sql, catch_ups)
    try:
        store.create_function(None)
    except RuntimeError:
        pass
    assert catch_ups == [1]
