"""Replies whose payload the cache hands over already encoded (hms_cache_proxy/thrift_bytes.py)."""

from __future__ import annotations

from typing import Any

from hms_cache_proxy.thrift_bytes import Encoded, struct_of


def wrap(cls: type, field: str, value: Any) -> Any:
    """``cls(field=value)``; when ``value`` is Encoded, that struct's Encoded bytes instead,
    so the processor can write the cached bytes without building objects."""
    if isinstance(value, Encoded):
        for fid, spec in cls.thrift_spec.items():  # type: ignore[attr-defined]
            if spec[1] == field:
                return struct_of((fid, spec[0], value))
        raise AttributeError(f"{cls.__name__} has no field {field}")
    return cls(**{field: value})
