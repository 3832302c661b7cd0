"""The YAML settings file, read and checked before pydantic-settings reads it.

pydantic-settings opens the file itself and reports what goes wrong there in its own words: a
file whose top level is a list ends in ``dictionary update sequence element #0 has length 1``,
one that is not UTF-8 in a bare ``'utf-8' codec can't decode``, and a directory passes for a
missing file. Reading it here first turns each into one line naming the file and what it
must hold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class SettingsFileError(ValueError):
    """The settings file cannot be used; the message is one line naming it and why."""


def read_settings_file(path: Path) -> dict[str, Any]:
    """The settings ``path`` holds (empty for an empty file).

    Raises FileNotFoundError when there is no such file, SettingsFileError for anything else
    that keeps it from being a YAML mapping of settings.
    """
    if path.is_dir():
        raise SettingsFileError(
            f"config file {path} is a directory: give the YAML settings file itself "
            "(conf/hms-cache-proxy.yaml lists every setting)"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"config file {path} does not exist") from None
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start]
        raise SettingsFileError(
            f"config file {path} is not UTF-8 text (byte {exc.start} is 0x{byte:02x}): save it "
            "as UTF-8 YAML"
        ) from None
    except OSError as exc:
        raise SettingsFileError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SettingsFileError(f"{path} is not valid YAML: {_yaml_problem(exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsFileError(
            f"{path} holds {_kind(data)}, not settings: write one `setting: value` per line, "
            "e.g. `port: 9083` (conf/hms-cache-proxy.yaml lists every setting)"
        )
    return data


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """Where and what, on one line (PyYAML's own text spans lines and quotes the source)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or not problem:
        return " ".join(str(exc).split())
    context = getattr(exc, "context", None)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" + (
        f" ({context})" if context else ""
    )


def _kind(data: Any) -> str:
    if isinstance(data, list):
        return "a list"
    shown = repr(data)
    return f"a single value ({shown if len(shown) <= 40 else shown[:37] + '...'})"
