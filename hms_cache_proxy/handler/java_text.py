"""How Hive's Java server prints values inside its error messages.

Several HMS messages embed Java renderings: ``List.toString()`` (``[a, b]``) and the
``toString()`` that Apache Thrift generates for structs, e.g. ``"Partition already exists: "
+ part`` gives ``Partition(values:[2024-01-01], dbName:db1, tableName:pt, createTime:0, ...)``.
Generated Java prints every field of default requiredness (``null`` when unset), prints an
optional field only when it is set, renders enums by name, maps as ``{k=v, k2=v2}`` and
binary fields as hex bytes. Which fields are optional, and which i32 fields are enums, is
read once from the project's IDL (thriftpy2 keeps neither).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hms_cache_proxy.idl import hms, idl_dir

_BLOCK = re.compile(r"^(struct|exception|union)\s+(\w+)\s*\{(.*?)^\}", re.S | re.M)
_ENUM = re.compile(r"^enum\s+(\w+)\s*\{", re.M)
_FIELD = re.compile(
    r"^\s*(\d+)\s*:\s*(required\s+|optional\s+)?([\w.]+(?:<[^>]*(?:<[^>]*>)?[^>]*>)?)\s+(\w+)",
    re.M,
)


# TType -> the value of an unset Java primitive field (bool, byte, double, i16, i32, i64).
_PRIMITIVE_ZERO: dict[int, Any] = {2: False, 3: 0, 4: 0.0, 6: 0, 8: 0, 10: 0}


@functools.lru_cache(maxsize=1)
def _idl_facts() -> tuple[dict[str, set[str]], dict[str, dict[str, str]]]:
    """({struct: optional field names}, {struct: {enum-typed field: enum name}})."""
    text = (idl_dir() / "hive_metastore.thrift").read_text()
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    enums = set(_ENUM.findall(text))
    optional: dict[str, set[str]] = {}
    enum_fields: dict[str, dict[str, str]] = {}
    for _kind, name, body in _BLOCK.findall(text):
        opts: set[str] = set()
        en: dict[str, str] = {}
        for _fid, req, ftype, fname in _FIELD.findall(body):
            if req.strip() == "optional":
                opts.add(fname)
            if ftype in enums:
                en[fname] = ftype
        optional[name] = opts
        enum_fields[name] = en
    return optional, enum_fields


def java_list(items: Sequence[Any] | None) -> str:
    """``java.util.List.toString()``: ``[a, b]`` (``null`` for no list)."""
    if items is None:
        return "null"
    return "[" + ", ".join(java_value(x) for x in items) + "]"


def java_value(value: Any, enum: str | None = None) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if enum is not None and isinstance(value, int):
        names = getattr(getattr(hms, enum, None), "_VALUES_TO_NAMES", {})
        return str(names.get(value, value))
    if isinstance(value, (bytes, bytearray)):
        return " ".join(f"{b:02X}" for b in value[:128]) + (" ..." if len(value) > 128 else "")
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{java_value(k)}={java_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple, set, frozenset)):
        return java_list(list(value))
    if hasattr(value, "thrift_spec"):
        return java_struct(value)
    return str(value)


def java_struct(obj: Any) -> str:
    """Apache Thrift's generated ``toString()`` of a struct."""
    cls = type(obj)
    name = cls.__name__
    optional, enum_fields = _idl_facts()
    opts = optional.get(name, set())
    enums = enum_fields.get(name, {})
    defaults = dict(getattr(cls, "default_spec", ()))
    parts = []
    for _fid, spec in sorted(cls.thrift_spec.items()):
        field = spec[1]
        value = getattr(obj, field, None)
        if field in opts and (value is None or value == defaults.get(field)):
            continue  # an optional field Java would report as unset
        if value is None and spec[0] in _PRIMITIVE_ZERO and field not in enums:
            value = _PRIMITIVE_ZERO[spec[0]]  # a Java primitive is never null
        parts.append(f"{field}:{java_value(value, enums.get(field))}")
    return f"{name}({', '.join(parts)})"


def with_java_defaults(obj: Any) -> Any:
    """Fill unset primitive fields of default requiredness with Java's zero values, in place
    and recursively: what a Java server's reply carries for an object it echoes (a Java
    ``int``/``boolean`` field is never null, so it is always written)."""
    if obj is None or not hasattr(obj, "thrift_spec"):
        return obj
    optional, enum_fields = _idl_facts()
    opts = optional.get(type(obj).__name__, set())
    enums = enum_fields.get(type(obj).__name__, {})
    for _fid, spec in obj.thrift_spec.items():
        field = spec[1]
        value = getattr(obj, field, None)
        if value is None:
            if field not in opts and field not in enums and spec[0] in _PRIMITIVE_ZERO:
                setattr(obj, field, _PRIMITIVE_ZERO[spec[0]])
        elif hasattr(value, "thrift_spec"):
            with_java_defaults(value)
        elif isinstance(value, list):
            for item in value:
                with_java_defaults(item)
    return obj
