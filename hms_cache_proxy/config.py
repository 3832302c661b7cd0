"""Settings: defaults, then conf/hms-cache-proxy.yaml (or --config), then HMS_CACHE_PROXY_* variables,
then command-line flags. conf/hms-cache-proxy.yaml documents every field below.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

ENV_PREFIX = "HMS_CACHE_PROXY_"
CONFIG_FILE_ENV = ENV_PREFIX + "CONFIG"


class Settings(BaseSettings):
    """Every setting of the service. Field names are the YAML keys; env names add the prefix."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid", frozen=True)

    # -- Thrift endpoint
    host: str = "0.0.0.0"
    port: int = Field(9083, ge=0, le=65535)
    transport: Literal["buffered", "framed"] = "buffered"
    protocol: Literal["binary", "compact"] = "binary"
    max_connections: int = Field(1000, ge=1)
    max_message_bytes: int = Field(256 * 1024 * 1024, ge=1024)

    # -- metastore database
    database_url: str = "sqlite:///hms-cache-proxy.db"
    database_pool_size: int = Field(8, ge=1)
    database_timeout_seconds: float = Field(30.0, gt=0)
    database_auto_create: bool = True
    id_block_size: int = Field(100, ge=1)

    # -- warehouse and Hive behaviour
    warehouse_dir: str = "warehouse"
    event_message_format: Literal["gzip(json-2.0)", "json-0.2"] = "gzip(json-2.0)"
    notification_max_events: int = Field(10_000, ge=1)
    server_uri: str = ""

    # -- transactions and locks (Hive's metastore.txn.* settings)
    txn_timeout_seconds: float = Field(300.0, gt=0)
    txn_housekeeping_interval_seconds: float = Field(60.0, ge=0)
    txn_open_timeout_ms: int = Field(1000, ge=1)
    txn_max_open_batch: int = Field(1000, ge=1)

    # -- logging
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    # -- secrets (never logged; shown as ********)
    admin_token: SecretStr | None = None

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, v: str) -> str:
        if not (v.startswith("sqlite:") or v.startswith("postgresql")):
            raise ValueError("database_url must start with sqlite:/// or postgresql://")
        return v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The YAML file comes from model_config["yaml_file"], set by load_settings.
        return (init_settings, env_settings, YamlConfigSettingsSource(settings_cls))

    # -- derived values

    def warehouse_uri(self) -> str:
        """The warehouse root as a URI (relative paths are taken from the working directory)."""
        return to_uri(self.warehouse_dir)

    def redacted(self) -> dict[str, Any]:
        """The settings as a dict safe to log: secrets and database passwords masked."""
        out = self.model_dump()
        for key, value in out.items():
            if isinstance(getattr(self, key), SecretStr) and value is not None:
                out[key] = "********"
        out["database_url"] = _hide_password(self.database_url)
        return out


def to_uri(path_or_uri: str) -> str:
    if "://" in path_or_uri or path_or_uri.startswith("file:"):
        return path_or_uri.rstrip("/") if path_or_uri.count("/") > 3 else path_or_uri
    return "file:" + str(Path(path_or_uri).expanduser().resolve())


def _hide_password(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparsable database url>"


def default_config_file() -> Path | None:
    """$HMS_CACHE_PROXY_CONFIG, else conf/hms-cache-proxy.yaml in the working directory if present."""
    env = os.environ.get(CONFIG_FILE_ENV)
    if env:
        return Path(env)
    default = Path("conf/hms-cache-proxy.yaml")
    return default if default.is_file() else None


def load_settings(config_file: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Settings from the given (or default) YAML file, the environment and explicit overrides.

    ``overrides`` with the value None are ignored, so unset command-line flags do not mask
    the file or the environment.
    """
    path = Path(config_file) if config_file is not None else default_config_file()
    cls: type[Settings] = Settings
    if path is not None:
        if not path.is_file():
            raise FileNotFoundError(f"config file {path} does not exist")

        class FileSettings(Settings):
            model_config = SettingsConfigDict(yaml_file=str(path))

        cls = FileSettings
    return cls(**{k: v for k, v in overrides.items() if v is not None})
