"""Typed forwarding: a method answered by another object, with the contract's types.

``name = Forwarded(Owner.name)`` in a class body gives the class a method the type checker sees
with the signature of ``Owner.name``; at run time each access asks the instance's
``_forward(name)`` for the callable (the method of the object that answers it, or a wrapper of
it). The SQL store names the family that answers (``Forwarded(Tables.get_table)``, bound by
``bind_owners``), so mypy checks each family's signature against the contract wherever the SQL
store is used as one; the caching and the direct store, whose one target is the SQL store, name
the contract's method (store/cached/forward.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, cast, overload

P = ParamSpec("P")
R = TypeVar("R")


class _Forwarding(Protocol):
    def _forward(self, name: str) -> Callable[..., Any]: ...


class Forwarded(Generic[P, R]):
    """A method typed as ``contract`` and looked up through the instance's ``_forward``."""

    def __init__(self, target: Callable[Concatenate[Any, P], R]) -> None:
        self.name = target.__name__
        self.target: Callable[..., Any] = target

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self.name:
            raise TypeError(f"{owner.__name__}.{name} forwards {self.name}: the names must agree")

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Forwarded[P, R]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> Callable[P, R]: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return cast(_Forwarding, obj)._forward(self.name)


def bind_owners(cls: type, parts: Sequence[object]) -> dict[str, Callable[..., Any]]:
    """Each ``Forwarded`` of ``cls`` -> the bound method of the one part whose class has the very
    function the descriptor names (identity, not a name: a family that merely has a method of
    the same name is not a target). None or two such parts is a wiring mistake: refused."""
    methods: dict[str, Callable[..., Any]] = {}
    for name, value in vars(cls).items():
        if not isinstance(value, Forwarded):
            continue
        owners = [part for part in parts if getattr(type(part), name, None) is value.target]
        if len(owners) != 1:
            found = [type(part).__name__ for part in owners]
            target = value.target.__qualname__
            raise TypeError(
                f"{cls.__name__}.{name} -> {target}: {found or 'no part'}, expected one"
            )
        methods[name] = getattr(owners[0], name)
    return methods
