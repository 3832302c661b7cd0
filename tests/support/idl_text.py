"""A small reader of Thrift IDL text, independent of thriftpy2, for checking the project's IDL.

thriftpy2 keeps only "required or not" per field, so telling ``optional`` from no keyword
needs the text itself. This reads enums, consts, structs/unions/exceptions and services into
the layout of tests/data/hive-metastore-thrift-4.0.json.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<comment>//[^\n]*|\#[^\n]*|/\*.*?\*/)
      | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
      | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
      | (?P<punct>[{}()<>,;:=\[\]])
    )""",
    re.VERBOSE | re.DOTALL,
)


def tokenize(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip() == "":
                break
            raise ValueError(f"cannot read IDL at {text[pos : pos + 40]!r}")
        pos = m.end()
        if m.lastgroup != "comment":
            out.append(m.group(m.lastgroup))
    return out


class _Reader:
    def __init__(self, tokens: list[str]) -> None:
        self.t = tokens
        self.i = 0

    def peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def next(self) -> str:
        tok = self.t[self.i]
        self.i += 1
        return tok

    def expect(self, tok: str) -> None:
        got = self.next()
        if got != tok:
            raise ValueError(f"expected {tok!r}, got {got!r} near token {self.i}")

    def skip_sep(self) -> None:
        while self.peek() in (",", ";"):
            self.i += 1

    def type_(self) -> str:
        name = self.next()
        if name in ("list", "set"):
            self.expect("<")
            inner = self.type_()
            self.expect(">")
            return f"{name}<{inner}>"
        if name == "map":
            self.expect("<")
            k = self.type_()
            self.expect(",")
            v = self.type_()
            self.expect(">")
            return f"map<{k},{v}>"
        return name

    def value(self) -> Any:
        tok = self.next()
        if tok.startswith(('"', "'")):
            return json.loads('"' + tok[1:-1].replace('\\"', '"').replace('"', '\\"') + '"')
        if tok in ("true", "false"):
            return tok == "true"
        if re.fullmatch(r"-?\d+", tok):
            return int(tok)
        if re.fullmatch(r"-?\d+\.\d+(?:[eE][-+]?\d+)?", tok):
            return float(tok)
        if tok == "[":
            items = []
            while self.peek() != "]":
                items.append(self.value())
                self.skip_sep()
            self.next()
            return items
        if tok == "{":
            items = {}
            while self.peek() != "}":
                k = self.value()
                self.expect(":")
                items[k] = self.value()
                self.skip_sep()
            self.next()
            return items
        return {"ref": tok}

    def fields(self, close: str) -> list[dict[str, Any]]:
        out = []
        while self.peek() != close:
            fid = int(self.next())
            self.expect(":")
            req = "default"
            if self.peek() in ("required", "optional"):
                req = self.next()
            typ = self.type_()
            name = self.next()
            default = None
            if self.peek() == "=":
                self.next()
                default = self.value()
            out.append({"id": fid, "name": name, "type": typ, "required": req, "default": default})
            self.skip_sep()
        self.next()
        return out


def read_idl(path: Path) -> dict[str, Any]:
    r = _Reader(tokenize(path.read_text()))
    doc: dict[str, Any] = {
        "includes": [],
        "namespaces": {},
        "enums": {},
        "consts": {},
        "structs": {},
        "services": {},
    }
    while r.peek() is not None:
        kw = r.next()
        if kw == "include":
            doc["includes"].append(json.loads(r.next()))
        elif kw == "namespace":
            lang = r.next()
            doc["namespaces"][lang] = r.next()
        elif kw == "enum":
            name = r.next()
            r.expect("{")
            members: dict[str, int] = {}
            nxt = 0
            while r.peek() != "}":
                member = r.next()
                if r.peek() == "=":
                    r.next()
                    nxt = int(r.next())
                members[member] = nxt
                nxt += 1
                r.skip_sep()
            r.next()
            doc["enums"][name] = members
        elif kw == "const":
            typ = r.type_()
            name = r.next()
            r.expect("=")
            doc["consts"][name] = {"type": typ, "value": r.value()}
            r.skip_sep()
        elif kw in ("struct", "union", "exception"):
            name = r.next()
            r.expect("{")
            doc["structs"][name] = {"kind": kw, "fields": r.fields("}")}
        elif kw == "service":
            name = r.next()
            extends = None
            if r.peek() == "extends":
                r.next()
                extends = r.next()
            r.expect("{")
            methods = []
            while r.peek() != "}":
                oneway = False
                if r.peek() == "oneway":
                    r.next()
                    oneway = True
                returns = r.type_()
                mname = r.next()
                r.expect("(")
                args = [{k: f[k] for k in ("id", "name", "type", "default")} for f in r.fields(")")]
                throws: list[dict[str, Any]] = []
                if r.peek() == "throws":
                    r.next()
                    r.expect("(")
                    throws = [{k: f[k] for k in ("id", "name", "type")} for f in r.fields(")")]
                methods.append(
                    {
                        "name": mname,
                        "oneway": oneway,
                        "returns": returns,
                        "args": args,
                        "throws": throws,
                    }
                )
                r.skip_sep()
            r.next()
            doc["services"][name] = {"extends": extends, "methods": methods}
        else:
            raise ValueError(f"unexpected {kw!r} at token {r.i}")
    return doc
