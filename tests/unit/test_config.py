"""Settings: the documented file, precedence of file, environment and flags, and redaction."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from hms_cache_proxy.config import Settings, SettingsError, load_settings

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf" / "hms-cache-proxy.yaml"


def test_the_documented_file_lists_every_setting_with_its_default() -> None:
    documented = yaml.safe_load(CONF.read_text())
    fields = Settings.model_fields
    assert sorted(documented) == sorted(fields), "conf/hms-cache-proxy.yaml and Settings differ"
    for name, info in fields.items():
        default = info.default
        value = documented[name]
        if hasattr(default, "get_secret_value"):
            default = default.get_secret_value()
        assert value == default, f"{name}: file says {value!r}, code default is {default!r}"


def test_every_documented_setting_has_a_comment() -> None:
    lines = CONF.read_text().splitlines()
    for i, line in enumerate(lines):
        if line and not line.startswith((" ", "#")) and ":" in line:
            assert lines[i - 1].startswith("#"), f"{line.split(':')[0]} has no comment above it"


def test_file_then_environment_then_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "c.yaml"
    conf.write_text("port: 9999\nlog_level: DEBUG\n")
    assert load_settings(conf).port == 9999
    monkeypatch.setenv("HMS_CACHE_PROXY_PORT", "7777")
    s = load_settings(conf)
    assert (s.port, s.log_level) == (7777, "DEBUG")
    assert load_settings(conf, port=1234).port == 1234
    assert load_settings(conf, port=None).port == 7777  # an unset flag does not mask


def test_unknown_or_invalid_settings_are_refused(tmp_path: Path) -> None:
    conf = tmp_path / "c.yaml"
    conf.write_text("prot: 1\n")
    with pytest.raises(SettingsError, match=f"prot in {conf}: unknown setting"):
        load_settings(conf)
    with pytest.raises(ValidationError, match="database_url"):
        Settings(database_url="mysql://x/y")
    with pytest.raises(FileNotFoundError):
        load_settings(tmp_path / "missing.yaml")


def test_secrets_are_redacted() -> None:
    s = Settings(database_url="postgresql://hive:s3cret@db/metastore", admin_token="tok-123")
    shown = repr(s.redacted())
    assert "s3cret" not in shown and "tok-123" not in shown
    assert "postgresql://hive:***@db/metastore" in shown
