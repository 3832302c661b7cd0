"""Hadoop configuration XML (hive-site.xml, metastore-site.xml): properties and variables.

The file format is ``<configuration><property><name/><value/><final/></property>...``, with
comments, an ``<?xml-stylesheet?>`` instruction and descriptions that are ignored. A document
type declaration is refused before anything is parsed: it is the only way into entity
expansion (the "billion laughs") and external entities, and Hadoop's own files never have one.
"""

from __future__ import annotations

import getpass
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat


class ConfigurationFileError(ValueError):
    """The file cannot be read as a Hadoop configuration; the message says why, in one line."""


class _Refused(Exception):
    pass


def read_properties(path: Path) -> dict[str, str]:
    """name -> value of every property, the way Hadoop reads them: the last definition wins
    unless an earlier one is marked ``<final>true</final>``."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigurationFileError(f"{path} does not exist") from None
    except OSError as exc:
        raise ConfigurationFileError(f"cannot read {path}: {exc.strerror}") from None
    _refuse_doctype(path, data)
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise ConfigurationFileError(f"{path} is not well-formed XML: {exc}") from None
    if root.tag != "configuration":
        raise ConfigurationFileError(
            f"{path} is not a Hadoop configuration file: its root element is <{root.tag}>, "
            "not <configuration>"
        )
    found: dict[str, str] = {}
    final: set[str] = set()
    for prop in root.iter("property"):
        name = _field(prop, "name")
        if not name or name in final:
            continue
        found[name] = _field(prop, "value") or ""
        if (_field(prop, "final") or "").strip().lower() == "true":
            final.add(name)
    return found


def _field(prop: ET.Element, key: str) -> str | None:
    child = prop.find(key)
    if child is not None:
        return (child.text or "").strip() if key != "value" else (child.text or "")
    return prop.get(key)


def _refuse_doctype(path: Path, data: bytes) -> None:
    parser = expat.ParserCreate()

    def refuse(*_args: object) -> None:
        raise _Refused

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    try:
        parser.Parse(data, True)
    except _Refused:
        raise ConfigurationFileError(
            f"{path} has a <!DOCTYPE> (document type or entity declarations), which is not "
            "read for safety; Hadoop configuration files need none: remove it"
        ) from None
    except expat.ExpatError as exc:
        raise ConfigurationFileError(f"{path} is not well-formed XML: {exc}") from None


# -- variables ---------------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$\{([^}$ ]+)\}")
_MAX_ROUNDS = 20  # Hadoop's Configuration.MAX_SUBST

_JAVA_PROPERTIES = {
    "user.name": getpass.getuser,
    "java.io.tmpdir": tempfile.gettempdir,
    "user.home": lambda: str(Path.home()),
    "user.dir": os.getcwd,
}


class UnresolvedVariable(ValueError):
    """A ``${...}`` that names nothing this process knows."""

    def __init__(self, variable: str) -> None:
        super().__init__(variable)
        self.variable = variable


def expand(value: str, properties: dict[str, str]) -> str:
    """``value`` with Hadoop/Hive variables replaced: ``${system:user.name}``,
    ``${system:java.io.tmpdir}``, ``${env:NAME}`` (also ``${env:NAME:-default}``), and
    ``${other.property}`` from the same file; raises UnresolvedVariable for one it cannot."""
    for _ in range(_MAX_ROUNDS):
        match = _VARIABLE.search(value)
        if match is None:
            return value
        replacement = _lookup(match.group(1), properties)
        if replacement is None:
            raise UnresolvedVariable(match.group(0))
        value = value[: match.start()] + replacement + value[match.end() :]
    if _VARIABLE.search(value):
        raise UnresolvedVariable(_VARIABLE.search(value).group(0))  # type: ignore[union-attr]
    return value


def _lookup(name: str, properties: dict[str, str]) -> str | None:
    prefix, sep, rest = name.partition(":")
    if sep and prefix == "env":
        if ":-" in rest:  # the default also when set but empty
            var, default = rest.split(":-", 1)
            return os.environ.get(var) or default
        if "-" in rest:  # the default only when unset
            var, default = rest.split("-", 1)
            return os.environ.get(var, default)
        return os.environ.get(rest)
    if sep and prefix == "system":
        getter = _JAVA_PROPERTIES.get(rest)
        return getter() if getter is not None else None
    if sep and prefix == "hiveconf":
        return properties.get(rest)
    getter = _JAVA_PROPERTIES.get(name)
    if getter is not None:
        return getter()
    return properties.get(name)
