"""Settings: defaults, then conf/hms-cache-proxy.yaml (or --config), then HMS_CACHE_PROXY_*
variables, then command-line flags. conf/hms-cache-proxy.yaml documents every field below.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
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
    max_message_bytes: int = Field(100 * 1024 * 1024, ge=1024)
    max_string_bytes: int = Field(16 * 1024 * 1024, ge=1024)
    max_container_elements: int = Field(1_000_000, ge=1)
    client_timeout_seconds: float = Field(600.0, ge=0)
    message_timeout_seconds: float = Field(60.0, ge=0)

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

    # -- HTTP endpoint: /metrics, /healthz, /readyz, /config, /admin (observability/http.py)
    metrics_host: str = "0.0.0.0"
    metrics_port: int | None = Field(9090, le=65535)  # 0: any free port; None or < 0: off
    health_timeout_seconds: float = Field(2.0, gt=0)
    health_cache_seconds: float = Field(1.0, ge=0)

    # -- the cache (docs/cache.md)
    cache_enabled: bool = True
    cache_max_bytes: int = Field(1024 * 1024 * 1024, ge=1024 * 1024)
    consistency: Literal["eventual", "strong"] = "eventual"
    consistency_wait_seconds: float = Field(1.0, ge=0)
    cache_strict: bool = False
    cache_include: list[str] = Field([".*"])
    cache_exclude: list[str] = Field([])
    cache_poll_interval_seconds: float = Field(1.0, gt=0)
    cache_listen: bool = True
    prewarm: bool = True
    prewarm_threads: int = Field(2, ge=1, le=64)
    prewarm_before_ready: bool = False

    # -- logging
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = "text"

    # -- shutdown (SIGTERM, SIGINT)
    shutdown_grace_seconds: float = Field(10.0, ge=0)

    # -- secrets (never logged; shown as ********)
    admin_token: SecretStr | None = None

    # -- security of the Thrift port (docs/security.md)
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_key_password: SecretStr | None = None
    tls_ca_file: str | None = None
    tls_client_auth: Literal["none", "optional", "required"] = "none"
    sasl_enabled: bool = False
    sasl_users: dict[str, SecretStr] = Field({})
    read_only: bool = False
    allowed_databases: list[str] = Field([".*"])
    allowed_databases_by_user: dict[str, list[str]] = Field({})
    filesystem_roots: list[str] = Field([])
    external_locations_outside_roots: Literal["metadata_only", "refuse"] = "metadata_only"

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, v: str) -> str:
        if not (v.startswith("sqlite:") or v.startswith("postgresql")):
            raise ValueError("database_url must start with sqlite:/// or postgresql://")
        return v

    @field_validator("metrics_port", mode="before")
    @classmethod
    def _port_off(cls, v: Any) -> Any:
        # Environment variables are strings: let HMS_CACHE_PROXY_METRICS_PORT=off/null work.
        if isinstance(v, str) and v.strip().lower() in ("", "off", "null", "none"):
            return None
        return v

    @field_validator("allowed_databases")
    @classmethod
    def _regexes(cls, v: list[str]) -> list[str]:
        for pattern in v:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
        return v

    @field_validator("filesystem_roots")
    @classmethod
    def _real_roots(cls, v: list[str]) -> list[str]:
        for root in v:
            if not root.strip() or to_uri(root.strip()).rstrip("/") in ("file:", "file://"):
                raise ValueError(
                    f"filesystem_roots entry {root!r} would confine nothing: name directories "
                    "the service may change"
                )
        return v

    @model_validator(mode="after")
    def _security_consistent(self) -> Settings:
        for patterns in self.allowed_databases_by_user.values():
            self._regexes(patterns)
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("tls_cert_file and tls_key_file must be set together")
        if self.tls_client_auth != "none" and not self.tls_ca_file:
            raise ValueError(f"tls_client_auth: {self.tls_client_auth} needs tls_ca_file")
        if self.sasl_enabled and not self.sasl_users:
            raise ValueError("sasl_enabled needs at least one user in sasl_users")
        if self.sasl_enabled and self.transport != "buffered":
            raise ValueError(
                "sasl_enabled needs transport: buffered (SASL already frames every message)"
            )
        return self

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

    @property
    def metrics_enabled(self) -> bool:
        return self.metrics_port is not None and self.metrics_port >= 0

    def warehouse_uri(self) -> str:
        """The warehouse root as a URI (relative paths are taken from the working directory)."""
        return to_uri(self.warehouse_dir)

    def filesystem_root_uris(self) -> list[str]:
        """Where DDL may change files: the warehouse and ``filesystem_roots`` (relative paths
        taken from the working directory, as for the warehouse)."""
        return [self.warehouse_uri(), *(to_uri(r.strip()) for r in self.filesystem_roots)]

    def redacted(self) -> dict[str, Any]:
        """The settings as a dict safe to log: secrets and database passwords masked."""
        out = self.model_dump()
        for key, value in out.items():
            if isinstance(getattr(self, key), SecretStr) and value is not None:
                out[key] = "********"
        out["database_url"] = _hide_password(self.database_url)
        out["sasl_users"] = {user: "********" for user in self.sasl_users}
        return out

    def secrets(self) -> list[str]:
        """Every secret value, for the log scrubber (observability/redact.py)."""
        from sqlalchemy.engine import make_url

        found = [s.get_secret_value() for s in (self.admin_token, self.tls_key_password) if s]
        found += [p.get_secret_value() for p in self.sasl_users.values()]
        try:
            url = make_url(self.database_url)
            found += [url.password or ""] + [
                str(v) for k, v in url.query.items() if "password" in k.lower()
            ]
        except Exception:  # noqa: BLE001 - an unparsable URL is refused elsewhere
            pass
        return [s for s in found if s]


def to_uri(path_or_uri: str) -> str:
    if "://" in path_or_uri or path_or_uri.startswith("file:"):
        return path_or_uri.rstrip("/") if path_or_uri.count("/") > 3 else path_or_uri
    return "file:" + str(Path(path_or_uri).expanduser().resolve())


def _hide_password(url: str) -> str:
    """The URL with its password masked, also one given as a query field (?password=...)."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
        secret_keys = [k for k in parsed.query if "password" in k.lower()]
        if secret_keys:
            parsed = parsed.update_query_dict({k: "***" for k in secret_keys})
        return parsed.render_as_string(hide_password=True)
    except Exception:
        return "<unparsable database url>"


def default_config_file() -> Path | None:
    """$HMS_CACHE_PROXY_CONFIG, else conf/hms-cache-proxy.yaml in the working directory if there."""
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
