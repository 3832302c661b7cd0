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


def test_the_external_warehouse_is_a_root_when_set_and_refused_when_it_confines_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("HMS_CACHE_PROXY_EXTERNAL_WAREHOUSE_DIR", "HMS_CACHE_PROXY_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    assert Settings(warehouse_dir="wh").filesystem_root_uris() == [f"file:{tmp_path}/wh"]
    s = Settings(warehouse_dir="wh", external_warehouse_dir="ext", filesystem_roots=["/lake"])
    assert s.external_warehouse_uri() == f"file:{tmp_path}/ext"
    assert s.filesystem_root_uris() == [f"file:{tmp_path}/wh", f"file:{tmp_path}/ext", "file:/lake"]
    monkeypatch.setenv("HMS_CACHE_PROXY_EXTERNAL_WAREHOUSE_DIR", "  ")  # blank is unset, as Hive
    assert load_settings().external_warehouse_dir is None
    monkeypatch.setenv("HMS_CACHE_PROXY_EXTERNAL_WAREHOUSE_DIR", "/data/external")
    assert load_settings().external_warehouse_uri() == "file:/data/external"
    flags = {"external_warehouse_dir": "--external-warehouse-dir"}
    plain = tmp_path / "plain"
    plain.write_text("not a directory")
    for bad, says in (("/", "would confine nothing"), (str(plain), "not a directory")):
        with pytest.raises(SettingsError) as info:
            load_settings(flag_names=flags, external_warehouse_dir=bad)
        message = str(info.value)
        assert message.startswith("--external-warehouse-dir: ") and says in message, message
        assert "\n" not in message
    monkeypatch.setenv("HMS_CACHE_PROXY_EXTERNAL_WAREHOUSE_DIR", "file:///")
    with pytest.raises(SettingsError, match="^HMS_CACHE_PROXY_EXTERNAL_WAREHOUSE_DIR: .*confine"):
        load_settings()


def test_a_warehouse_at_the_filesystem_root_or_blank_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The warehouse is where drops delete data: "/" would put every file in reach of DDL."""
    for name in ("HMS_CACHE_PROXY_WAREHOUSE_DIR", "HMS_CACHE_PROXY_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    flags = {"warehouse_dir": "--warehouse-dir"}
    refused = (("/", "would confine nothing"), ("file:///", "would confine"), (" ", "empty"))
    for bad, says in refused:
        with pytest.raises(SettingsError) as info:
            load_settings(flag_names=flags, warehouse_dir=bad)
        message = str(info.value)
        assert message.startswith("--warehouse-dir: ") and says in message, message
        assert "\n" not in message
    monkeypatch.setenv("HMS_CACHE_PROXY_WAREHOUSE_DIR", "/")
    with pytest.raises(SettingsError, match="^HMS_CACHE_PROXY_WAREHOUSE_DIR: .*confine"):
        load_settings()
    assert load_settings(warehouse_dir="/srv/warehouse").warehouse_uri() == "file:/srv/warehouse"


def test_the_listen_url_must_be_postgresql_and_is_masked() -> None:
    with pytest.raises(ValidationError, match="database_listen_url must be a PostgreSQL URL"):
        Settings(database_listen_url="sqlite:///x.db")
    s = Settings(database_listen_url="postgresql://hive:s3cret@db:5432/metastore")
    assert "s3cret" not in str(s.redacted()) and "s3cret" in s.secrets()
