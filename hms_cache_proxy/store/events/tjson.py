"""Thrift objects to and from Apache Thrift's TJSONProtocol text, as Java writes it.

Hive embeds Table, Partition, Database, Function, ColumnStatistics and Catalog objects in its
notification messages as ``new TSerializer(new TJSONProtocol.Factory()).toString(obj)``, and
Hive, Impala and StarRocks read them back with Java's ``TDeserializer``. This module writes that
exact text from thriftpy2 objects and reads it back.

The format, as Java's ``org.apache.thrift.protocol.TJSONProtocol`` writes it:

- a struct is a JSON object keyed by field id (``"1"``), in field-id order, each value a
  one-entry object ``{"<tag>": value}``; unset (``None``) fields are left out;
- tags: ``tf`` (bool, written 1/0), ``i8``, ``i16``, ``i32`` (also enums), ``i64``, ``dbl``,
  ``str`` (strings and binary), ``rec`` (struct), ``lst``, ``set``, ``map``;
- lists and sets are ``[elemtag, count, e1, e2, ...]``; maps are
  ``[keytag, valtag, count, {k: v, ...}]`` where numeric and bool keys are quoted and
  container keys are written raw (``{["str",1,"a"]:"x"}``, which is not strict JSON);
- strings escape ``"``, ``\\``, ``\\b \\f \\n \\r \\t`` and other control characters as
  ``\\u00xx`` (lower-case hex); everything else, non-ASCII included, is raw UTF-8;
- binary is standard base64 *without* ``=`` padding;
- doubles are ``Double.toString``: ``1.0``, ``123.456``, ``9.0E-4``, ``1.0E10``, and
  ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` as quoted strings.

Doubles: the shortest digits that read back to the same double (at least two in E-form), and,
like JDK 8-17 (what Hive runs on), integral values from 2^53 to 2^63 printed from their integer
digits (``2.82879384806159008E17``). The old JDK algorithm is not always shortest; for a rare
few other values (``1.0E23``, which it prints as ``9.999999999999999E22``; subnormals) the
digits differ, and both texts read back to the same double.

Encoders are compiled once per class from its ``thrift_spec`` into straight-line Python, because
one ``add_partitions`` call serializes a thousand partitions.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import threading
from decimal import Decimal
from json.decoder import scanstring  # type: ignore[attr-defined]  # real, not in typeshed
from json.encoder import encode_basestring
from typing import Any, TypeVar

T = TypeVar("T")

# thriftpy2 type codes (thriftpy2.thrift.TType); BINARY is thriftpy2's own code for `binary`.
_BOOL, _BYTE, _DOUBLE, _I16, _I32, _I64 = 2, 3, 4, 6, 8, 10
_STRING, _STRUCT, _MAP, _SET, _LIST, _BINARY = 11, 12, 13, 14, 15, 18

_TAGS = {
    _BOOL: "tf",
    _BYTE: "i8",
    _I16: "i16",
    _I32: "i32",
    _I64: "i64",
    _DOUBLE: "dbl",
    _STRING: "str",
    _BINARY: "str",
    _STRUCT: "rec",
    _LIST: "lst",
    _SET: "set",
    _MAP: "map",
}

__all__ = ["dumps", "loads", "java_double"]


# -- scalars ---------------------------------------------------------------------------------


def java_double(value: float) -> str:
    """``Double.toString(value)`` as TJSONProtocol writes it (specials quoted)."""
    if value != value:
        return '"NaN"'
    if value in (math.inf, -math.inf):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = ""
    if value < 0:
        sign = "-"
        value = -value
    if 9007199254740992.0 <= value < 9.223372036854775808e18 and value.is_integer():
        digits, point = _long_digits(value)
    else:
        digits, point = _shortest_digits(value)
    exp = point - 1  # value = d.ddd x 10^exp
    if -3 <= exp < 7:
        if point <= 0:
            return sign + "0." + "0" * -point + digits
        if point >= len(digits):
            return sign + digits + "0" * (point - len(digits)) + ".0"
        return sign + digits[:point] + "." + digits[point:]
    return sign + digits[0] + "." + (digits[1:] or "0") + "E" + str(exp)


def _shortest_digits(value: float) -> tuple[str, int]:
    """Significant digits and decimal point position: value = 0.DIGITS x 10^point."""
    r = repr(value)
    mant, _, e = r.partition("e")
    ip, _, fp = mant.partition(".")
    s = ip + fp
    point = len(ip) + (int(e) if e else 0)
    stripped = s.lstrip("0")
    point -= len(s) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    if len(digits) == 1:
        # Java renders at least two digits and, when one digit would do, picks the two-digit
        # decimal closest to the exact binary value (4.9E-324, not 5.0E-324).
        exact = Decimal(value)
        two = format(exact, ".1e")  # "d.de±x", rounded half-even from the exact value
        if float(two) == value:
            m, _, x = two.partition("e")
            cand = m.replace(".", "").rstrip("0") or "0"
            return cand, int(x) + 1
    return digits, point


def _long_digits(value: float) -> tuple[str, int]:
    """Digits of an integral double in [2^53, 2^63) the way JDK 8-18 print them.

    ``FloatingDecimal`` prints these from the integer value itself, rounding off only
    ``floor((binExp - 54) * log10(2))`` low digits, so 2.82879384806159E17 comes out as
    2.82879384806159008E17. Hive's JVMs (8, 11, 17) write these digits.
    """
    iv = int(value)
    bin_exp = iv.bit_length() - 1
    p2 = bin_exp - 54
    drop = int(p2 * 0.30102999566398120) if 1 < p2 else 0
    if drop:
        pow10 = 10**drop
        iv, residue = divmod(iv, pow10)
        if residue >= pow10 // 2:
            iv += 1
    text = str(iv)
    return text.rstrip("0"), len(text) + drop


def _b64(data: bytes | bytearray | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return '"' + base64.b64encode(data).decode("ascii").rstrip("=") + '"'


def _b64_decode(text: str) -> bytes:
    text = text.rstrip("=")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error as exc:
        raise ValueError(f"bad base64 in TJSON binary field: {text[:40]!r}") from exc


def _dbl_key(value: float) -> str:
    text = java_double(value)
    return text if text[0] == '"' else '"' + text + '"'


def _bool_key(value: Any) -> str:
    return '"1"' if value else '"0"'


# -- encoder compilation ----------------------------------------------------------------------

_FAST_PATH_FIELDS = 6
_lock = threading.RLock()
_names: dict[type, str] = {}
_ns: dict[str, Any] = {
    "esc": encode_basestring,
    "dbl": java_double,
    "dblk": _dbl_key,
    "boolk": _bool_key,
    "b64": _b64,
}


def _split(spec: Any) -> tuple[int, Any]:
    """An element spec (an int, or a (ttype, arg) tuple) as (ttype, arg)."""
    if isinstance(spec, tuple):
        return spec[0], spec[1]
    return spec, None


def _field_arg(fspec: tuple) -> Any:
    return fspec[2] if len(fspec) == 4 else None


class _Gen:
    """Builds the source of one struct encoder; nested containers get fresh variable names."""

    def __init__(self) -> None:
        self.n = 0

    def var(self) -> str:
        self.n += 1
        return f"x{self.n}"

    def field(self, fid: int, ttype: int, arg: Any, v: str, lead: str = ",") -> str:
        """An expression for '<lead>"<fid>":{"<tag>":<value of v>}' (f-strings where possible)."""
        head = f'{lead}"{fid}":{{{{"{_TAGS[ttype]}":'
        if ttype in (_I32, _I64, _I16, _BYTE):
            return "f'" + head + "{" + v + ":d}}}'"
        if ttype == _BOOL:
            return "f'" + head + "{1 if " + v + " else 0}}}'"
        simple = {_STRING: "esc", _DOUBLE: "dbl", _BINARY: "b64"}.get(ttype)
        if ttype == _STRUCT:
            simple = _encoder_name(arg)
        if simple is not None:
            return "f'" + head + "{" + simple + "(" + v + ")}}}'"
        return "'" + head.replace("{{", "{") + "' + " + self.value(ttype, arg, v) + " + '}'"

    def value(self, ttype: int, arg: Any, v: str) -> str:
        """A Python expression giving the TJSON text of value ``v`` of this type."""
        if ttype == _STRING:
            return f"esc({v})"
        if ttype in (_I32, _I64, _I16, _BYTE):
            return f"'%d' % {v}"
        if ttype == _BOOL:
            return f"('1' if {v} else '0')"
        if ttype == _DOUBLE:
            return f"dbl({v})"
        if ttype == _BINARY:
            return f"b64({v})"
        if ttype == _STRUCT:
            return f"{_encoder_name(arg)}({v})"
        if ttype in (_LIST, _SET):
            et, ea = _split(arg)
            x = self.var()
            head = f"'[\"{_TAGS[et]}\",' + str(len({v}))"
            if et == _STRING:
                items = f"map(esc, {v})"
            elif et == _STRUCT:
                items = f"map({_encoder_name(ea)}, {v})"
            else:
                items = f"[{self.value(et, ea, x)} for {x} in {v}]"
            return f"({head} + (',' + ','.join({items}) if {v} else '') + ']')"
        if ttype == _MAP:
            (kt, ka), (vt, va) = _split(arg[0]), _split(arg[1])
            k, x = self.var(), self.var()
            key = self.key(kt, ka, k)
            val = self.value(vt, va, x)
            head = f'\'["{_TAGS[kt]}","{_TAGS[vt]}",%d,{{\' % len({v})'
            body = f"','.join([{key} + ':' + {val} for {k}, {x} in {v}.items()])"
            return f"({head} + {body} + '}}]')"
        raise TypeError(f"unsupported thrift type {ttype}")

    def key(self, ttype: int, arg: Any, v: str) -> str:
        """Map keys: numbers and bools are quoted, strings as usual, containers raw."""
        if ttype in (_I32, _I64, _I16, _BYTE):
            return f"'\"%d\"' % {v}"
        if ttype == _BOOL:
            return f"boolk({v})"
        if ttype == _DOUBLE:
            return f"dblk({v})"
        return self.value(ttype, arg, v)


def _encoder_name(cls: type[Any]) -> str:
    """The namespace name of ``cls``'s encoder, compiling it (and what it uses) on first use."""
    name = _names.get(cls)
    if name is not None:
        return name
    name = f"enc{len(_names)}_{cls.__name__}"
    _names[cls] = name  # before compiling, so recursive structs refer to it
    gen = _Gen()
    fields = []
    for fid in sorted(cls.thrift_spec):
        fspec = cls.thrift_spec[fid]
        ttype, arg = fspec[0], _field_arg(fspec)
        if ttype == _I32 and arg is not None:
            arg = None  # enum: written as its i32 value
        fields.append((fid, fspec[1], ttype, arg, f"v{fid}"))
    lines = [f"def {name}(o):"]
    lines += [f"    {v} = o.{fname}" for _, fname, _, _, v in fields]
    if 0 < len(fields) <= _FAST_PATH_FIELDS:
        # Small structs (FieldSchema, Order, ...) usually have every field set: one expression.
        cond = " and ".join(f"{v} is not None" for *_, v in fields)
        parts = [
            gen.field(fid, ttype, arg, v, lead="" if i == 0 else ",")
            for i, (fid, _, ttype, arg, v) in enumerate(fields)
        ]
        if all(p.startswith("f'") for p in parts):  # adjacent literals: one BUILD_STRING
            expr = "f'{{' " + " ".join(parts) + " '}'"
        else:
            expr = "'{' + " + " + ".join(parts) + " + '}'"
        lines += [f"    if {cond}:", f"        return {expr}"]
    # Each present field appends ',"id":{"tag":value}'; the leading comma is cut at the end.
    lines.append("    s = ''")
    for fid, _, ttype, arg, v in fields:
        lines.append(f"    if {v} is not None:")
        lines.append(f"        s += {gen.field(fid, ttype, arg, v)}")
    lines.append("    return '{' + s[1:] + '}'")
    exec("\n".join(lines), _ns)  # noqa: S102 - source built from thrift_spec only
    return name


def _encoder(cls: type[Any]) -> Any:
    fn = _ns.get(_names.get(cls, ""))
    if fn is None:
        with _lock:
            fn = _ns[_encoder_name(cls)]
    return fn


def dumps(obj: Any) -> str:
    """The TJSONProtocol text Java's ``TSerializer`` writes for ``obj`` (a thriftpy2 struct)."""
    return _encoder(type(obj))(obj)


# -- decoding ---------------------------------------------------------------------------------


class _Pairs(list):
    """A JSON object whose keys are not all strings (TJSON map with container keys)."""


def _parse_lenient(text: str) -> Any:
    """Parse TJSON that is not strict JSON: objects may have array or object keys."""
    ws = re.compile(r"[ \t\n\r]*")
    number = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
    pos = 0
    n = len(text)

    def skip(i: int) -> int:
        blank = ws.match(text, i)  # matches everywhere (``*``): None never happens
        return blank.end() if blank is not None else i

    def value(i: int) -> tuple[Any, int]:
        i = skip(i)
        if i >= n:
            raise ValueError("unexpected end of TJSON text")
        c = text[i]
        if c == '"':
            return scanstring(text, i + 1)
        if c == "{":
            pairs = []
            i = skip(i + 1)
            if text.startswith("}", i):
                return {}, i + 1
            while True:
                k, i = value(i)
                i = skip(i)
                if not text.startswith(":", i):
                    raise ValueError(f"expected ':' at {i}")
                v, i = value(i + 1)
                pairs.append((k, v))
                i = skip(i)
                if text.startswith(",", i):
                    i += 1
                    continue
                if text.startswith("}", i):
                    i += 1
                    break
                raise ValueError(f"expected ',' or '}}' at {i}")
            if all(isinstance(k, str) for k, _ in pairs):
                return dict(pairs), i
            return _Pairs(pairs), i
        if c == "[":
            items: list[Any] = []
            i = skip(i + 1)
            if text.startswith("]", i):
                return items, i + 1
            while True:
                v, i = value(i)
                items.append(v)
                i = skip(i)
                if text.startswith(",", i):
                    i += 1
                    continue
                if text.startswith("]", i):
                    return items, i + 1
                raise ValueError(f"expected ',' or ']' at {i}")
        for word, val in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, i):
                return val, i + len(word)
        m = number.match(text, i)
        if not m:
            raise ValueError(f"unexpected character {c!r} at {i} in TJSON text")
        s = m.group()
        return (float(s) if any(ch in s for ch in ".eE") else int(s)), m.end()

    result, pos = value(pos)
    if skip(pos) != n:
        raise ValueError(f"extra data after TJSON value at {pos}")
    return result


def _to_bool(x: Any) -> bool:
    return int(x) != 0


def _hashable(x: Any) -> Any:
    if isinstance(x, list):
        return tuple(_hashable(e) for e in x)
    if isinstance(x, set):
        return frozenset(x)
    return x


_decoders: dict[type, Any] = {}  # being built or built (under _lock)
_ready: dict[type, Any] = {}  # fully built: read without the lock


def _converter(ttype: int, arg: Any) -> Any:
    """A function from the parsed JSON value of this type to the Python value."""
    if ttype in (_I32, _I64, _I16, _BYTE):
        return int
    if ttype == _STRING:
        return _as_str
    if ttype == _BOOL:
        return _to_bool
    if ttype == _DOUBLE:
        return float
    if ttype == _BINARY:
        return _b64_decode
    if ttype == _STRUCT:
        return _struct_decoder(arg)
    if ttype in (_LIST, _SET):
        et, ea = _split(arg)
        conv = _converter(et, ea)
        tag = _TAGS[et]
        as_set = ttype == _SET

        def container(x: Any) -> Any:
            if not isinstance(x, list) or len(x) < 2 or x[0] != tag:
                raise ValueError(f"bad TJSON {'set' if as_set else 'list'}: {str(x)[:80]}")
            return [conv(e) for e in x[2:]]  # sets too: thriftpy2 holds them as lists

        return container
    if ttype == _MAP:
        (kt, ka), (vt, va) = _split(arg[0]), _split(arg[1])
        kconv = _key_converter(kt, ka)
        vconv = _converter(vt, va)
        ktag, vtag = _TAGS[kt], _TAGS[vt]

        def mapping(x: Any) -> dict:
            if (
                not isinstance(x, list)
                or len(x) < 4
                or x[0] != ktag
                or x[1] != vtag
                or not isinstance(x[3], (dict, _Pairs))
            ):
                raise ValueError(f"bad TJSON map: {str(x)[:80]}")
            items = x[3].items() if isinstance(x[3], dict) else x[3]
            return {kconv(k): vconv(v) for k, v in items}

        return mapping
    raise TypeError(f"unsupported thrift type {ttype}")


def _as_str(x: Any) -> str:
    if not isinstance(x, str):
        raise ValueError(f"expected a TJSON string, got {str(x)[:40]!r}")
    return x


def _key_converter(ttype: int, arg: Any) -> Any:
    if ttype in (_I32, _I64, _I16, _BYTE):
        return int
    if ttype == _BOOL:
        return _to_bool
    if ttype == _DOUBLE:
        return float
    conv = _converter(ttype, arg)
    if ttype in (_LIST, _SET, _STRUCT):
        return lambda k: _hashable(conv(k))
    return conv


def _struct_decoder(cls: type[Any]) -> Any:
    dec = _decoders.get(cls)
    if dec is not None:
        return dec
    fields: dict[str, tuple[str, str, Any]] = {}
    unset = {f[1]: None for f in cls.thrift_spec.values()}

    def decode(d: Any) -> Any:
        if not isinstance(d, dict):
            raise ValueError(f"expected a TJSON struct for {cls.__name__}, got {str(d)[:80]}")
        kw = unset.copy()
        for fid, tv in d.items():
            f = fields.get(fid)
            if f is None or not isinstance(tv, dict):
                continue  # a field this IDL does not know: skipped, as Java does
            tag, name, conv = f
            if tag in tv:
                kw[name] = conv(tv[tag])
            # a known id with another type tag is skipped too (Java skips on type mismatch)
        return cls(**kw)

    _decoders[cls] = decode  # before building converters: recursive structs
    for fid, fspec in cls.thrift_spec.items():
        ttype, fname = fspec[0], fspec[1]
        arg = _field_arg(fspec)
        if ttype == _I32:
            arg = None
        fields[str(fid)] = (_TAGS[ttype], fname, _converter(ttype, arg))
    return decode


def loads(text: str | bytes, cls: type[T]) -> T:
    """Read TJSONProtocol text (as Java writes it) into a new ``cls`` instance.

    Fields the class does not know are skipped. Fields absent from the text are None, not the
    IDL default: they were unset where the text was written, and stay unset if written again
    (so ``dumps(loads(text)) == text`` for text Java wrote).
    """
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")
    try:
        tree = json.loads(text)
    except ValueError:
        tree = _parse_lenient(text)  # container map keys make Java's text non-strict JSON
    dec = _ready.get(cls)
    if dec is None:
        with _lock:
            dec = _ready[cls] = _struct_decoder(cls)
    return dec(tree)
