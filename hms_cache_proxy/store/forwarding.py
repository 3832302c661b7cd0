"""Typed forwarding: a method answered by another object, with the contract's types.

``name = Forwarded(api.Metadata.name)`` in a class body gives the class a method the type
checker sees with the signature of the contract's method; at run time each access asks the
instance's ``_forward(name)`` for the callable (the method of the object that answers it, or a
wrapper of it). The SQL store forwards to its families, the caching and the direct store to the
SQL store (store/cached/forward.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, cast, overload

P = ParamSpec("P")
R = TypeVar("R")


class _Forwarding(Protocol):
    def _forward(self, name: str) -> Callable[..., Any]: ...


class Forwarded(Generic[P, R]):
    """A method typed as ``contract`` and looked up through the instance's ``_forward``."""

    def __init__(self, contract: Callable[Concatenate[Any, P], R]) -> None:
        self.name = contract.__name__

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
