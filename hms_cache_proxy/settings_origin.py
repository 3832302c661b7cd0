"""Where each setting came from, so that an error names it the way the user wrote it.

A user who typed ``--tls-cert`` should read ``--tls-key``, not ``tls_key_file``, in the message
that says the key is missing; one who set ``HMS_CACHE_PROXY_PORT`` should see that variable.
``explain`` turns pydantic's multi-line ValidationError into one line per problem.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr, ValidationError

# What Kubernetes puts in <SERVICE>_PORT for every Service of the namespace (service links):
# a Service named hms-cache-proxy sets HMS_CACHE_PROXY_PORT=tcp://10.0.0.11:9083.
_SERVICE_LINK = re.compile(r"^tcp://[^\s/]+:\d+$")

# Settings whose values must never be echoed back in an error.
_SECRET_HINT = ("password", "token", "sasl_users")


@dataclass
class Origins:
    """The sources of one load: flags given, variables set, file keys, hive-site properties."""

    env_prefix: str
    config_file: Path | None = None
    file_keys: frozenset[str] = frozenset()
    flag_names: Mapping[str, str] = field(default_factory=dict)  # setting -> its flag
    flags_given: frozenset[str] = frozenset()
    hive_site: Path | None = None
    hive_site_properties: Mapping[str, str] = field(default_factory=dict)  # setting -> property

    def env_name(self, setting: str) -> str | None:
        """The variable that set ``setting``, as spelled in the environment (case-insensitive)."""
        wanted = (self.env_prefix + setting).upper()
        return next((k for k in os.environ if k.upper() == wanted), None)

    def kind(self, setting: str) -> str:
        """flag, env, file, hive-site or default: the source that decided ``setting``."""
        if setting in self.flags_given:
            return "flag"
        if self.env_name(setting) is not None:
            return "env"
        if setting in self.file_keys:
            return "file"
        if setting in self.hive_site_properties:
            return "hive-site"
        return "default"

    def given_above_hive_site(self, setting: str) -> bool:
        """Set by a flag, a variable or the YAML file: hive-site.xml does not decide it."""
        return self.kind(setting) in ("flag", "env", "file")

    def name(self, setting: str, like: str = "default") -> str:
        """``setting`` as the user gave it; an unset one named in the kind ``like`` of the
        setting it goes with (``--tls-key`` next to a ``--tls-cert`` flag)."""
        kind = self.kind(setting)
        if kind == "default":
            kind = like
        if kind == "flag" and setting in self.flag_names:
            return self.flag_names[setting]
        if kind == "env":
            return self.env_name(setting) or (self.env_prefix + setting).upper()
        if kind == "file" and self.config_file is not None:
            return f"{setting} in {self.config_file}"
        if kind == "hive-site" and setting in self.hive_site_properties:
            return f"{self.hive_site_properties[setting]} in {self.hive_site}"
        return setting


def explain(exc: ValidationError, origins: Origins, settings: Mapping[str, Any]) -> str:
    """One line per problem of ``exc``, naming each setting as the user gave it.

    ``settings`` maps the known setting names to their field info (to spot secrets and to
    find setting names inside a model-level message).
    """
    lines = []
    for error in exc.errors(include_url=False):
        message = _plain(error["msg"])
        loc = error.get("loc") or ()
        if not loc:
            lines.append(_rename(message, origins, settings))
            continue
        setting = str(loc[0])
        where = origins.name(setting)
        if error["type"] == "extra_forbidden":
            if origins.kind(setting) == "default" and origins.config_file is not None:
                where = f"{setting} in {origins.config_file}"
            lines.append(
                f"{where}: unknown setting (every setting is listed, with its default, in "
                "conf/hms-cache-proxy.yaml)"
            )
            continue
        shown = "" if _secret(setting) else f" (got {_show(error.get('input'))})"
        if setting == "database_url":
            shown = ""  # the message already shows the URL, password masked
        if origins.kind(setting) == "env" and _SERVICE_LINK.match(str(error.get("input"))):
            shown += (
                "; Kubernetes sets this variable for a Service of the same name: give the pod "
                "enableServiceLinks: false"
            )
        lines.append(f"{where}: {message}{shown}")
    return "\n".join(lines)


def stray_variables(
    prefix: str, settings: Mapping[str, Any], also: frozenset[str] = frozenset()
) -> list[tuple[str, str | None]]:
    """Each ``prefix`` variable that names no setting, with the setting's variable it comes
    close to, if any (``HMS_CACHE_PROXY_TLS_CERT`` for ``HMS_CACHE_PROXY_TLS_CERT_FILE``, a
    typo such as ``HMS_CACHE_PROXY_DATABSE_URL``): pydantic-settings ignores them silently."""
    prefix = prefix.upper()
    known = {(prefix + name).upper() for name in settings} | {v.upper() for v in also}
    tails = sorted(k[len(prefix) :] for k in known if k.startswith(prefix))
    found: list[tuple[str, str | None]] = []
    for name in sorted(os.environ):
        upper = name.upper()
        if not upper.startswith(prefix) or upper in known:
            continue
        tail = upper[len(prefix) :]  # compared without the prefix every name shares
        close = [t for t in tails if t.startswith(tail + "_")][:1] or difflib.get_close_matches(
            tail, tails, n=1, cutoff=0.8
        )
        found.append((name, prefix + close[0] if close else None))
    return found


def _plain(message: str) -> str:
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message


def _rename(message: str, origins: Origins, settings: Mapping[str, Any]) -> str:
    """Setting names in a model-level message, named as given (unset ones like the first
    given one in the message)."""
    pattern = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b")  # snake_case: prose stays prose
    names = [n for n in pattern.findall(message) if n in settings]
    lead = next((origins.kind(n) for n in names if origins.kind(n) != "default"), "default")
    given = {origins.kind(n) for n in names} - {"default"}
    if given == {"file"}:  # keys as written, the file named once
        return f"{message} (in {origins.config_file})"
    return pattern.sub(
        lambda m: origins.name(m.group(0), lead) if m.group(0) in settings else m.group(0),
        message,
    )


def _secret(setting: str) -> bool:
    return any(hint in setting for hint in _SECRET_HINT)


def _show(value: Any) -> str:
    if isinstance(value, SecretStr):
        return "********"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
