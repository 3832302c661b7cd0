"""Settings: defaults, then conf/hms-cache-proxy.yaml (or --config), then HMS_CACHE_PROXY_*
variables, then command-line flags. conf/hms-cache-proxy.yaml documents every field below.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

import yaml
from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)
from pydantic_settings import SettingsError as PydanticSettingsError

from hms_cache_proxy import dburl
from hms_cache_proxy.admission import ConnectionLimits
from hms_cache_proxy.hivesite import ConfigurationFileError, read_hive_site
from hms_cache_proxy.settings_file import SettingsFileError, read_settings_file
from hms_cache_proxy.settings_origin import Origins, explain, stray_variables

ENV_PREFIX = "HMS_CACHE_PROXY_"
CONFIG_FILE_ENV = ENV_PREFIX + "CONFIG"


def _is_filesystem_root(text: str) -> bool:
    """Whether a directory setting names "/" (file:/, file:///): as a root it confines nothing."""
    return to_uri(text.strip()).rstrip("/") in ("file:", "file://")


class Settings(BaseSettings):
    """Every setting of the service. Field names are the YAML keys; env names add the prefix."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid", frozen=True)

    # -- Thrift endpoint
    host: str = "0.0.0.0"
    port: int = Field(9083, ge=0, le=65535)
    workers: int = Field(1, ge=1, le=64)  # processes serving the port (hms_cache_proxy/workers.py)
    transport: Literal["buffered", "framed"] = "buffered"
    protocol: Literal["binary", "compact"] = "binary"
    max_connections: int = Field(1000, ge=1)
    max_connections_per_client: int = Field(128, ge=0)  # per client IP address; 0: no share
    reserved_connections: int = Field(32, ge=0)
    reserved_connections_per_client: int = Field(4, ge=1)
    handshake_timeout_seconds: float = Field(10.0, ge=0)
    first_call_timeout_seconds: float = Field(30.0, ge=0)
    max_message_bytes: int = Field(100 * 1024 * 1024, ge=1024)
    max_string_bytes: int = Field(16 * 1024 * 1024, ge=1024)
    max_container_elements: int = Field(1_000_000, ge=1)
    max_decoded_structures: int = Field(2_000_000, ge=1)
    client_timeout_seconds: float = Field(600.0, ge=0)
    message_timeout_seconds: float = Field(60.0, ge=0)

    # -- a stock metastore's hive-site.xml / metastore-site.xml to take the database, warehouse
    # and port from (hms_cache_proxy/hivesite); every other source overrides it
    hive_site: str | None = None

    # -- metastore database
    database_url: str = "sqlite:///hms-cache-proxy.db"
    database_pool_size: int = Field(8, ge=1)
    database_timeout_seconds: float = Field(30.0, gt=0)
    database_statement_timeout_seconds: float = Field(30.0, ge=0)
    database_auto_create: bool = True
    database_pool_idle_seconds: float = Field(30.0, ge=0)
    database_start_timeout_seconds: float = Field(60.0, ge=0)
    database_pooler: Literal["none", "transaction"] = "none"
    database_listen_url: str | None = None
    instance_name: str | None = None  # None: the host name
    id_block_size: int = Field(100, ge=1)

    # -- an upstream metastore instead of a database (pass-through mode, docs/operations.md)
    upstream_uri: str | None = None
    upstream_from_hive_site: bool = False
    upstream_transport: Literal["buffered", "framed"] = "buffered"
    upstream_max_connections: int = Field(64, ge=1)
    upstream_pool_wait_seconds: float = Field(10.0, ge=0)
    upstream_connect_timeout_seconds: float = Field(5.0, gt=0)
    upstream_timeout_seconds: float = Field(600.0, gt=0)
    upstream_tls: bool = False
    upstream_tls_ca_file: str | None = None
    upstream_tls_cert_file: str | None = None
    upstream_tls_key_file: str | None = None
    upstream_tls_key_password: SecretStr | None = None
    upstream_sasl_user: str | None = None
    upstream_sasl_password: SecretStr | None = None
    upstream_sasl_as_caller: bool = False
    upstream_cache: bool = True
    upstream_poll_interval_seconds: float = Field(0.2, gt=0)
    upstream_wait_seconds: float = Field(1.0, ge=0, le=5)
    upstream_catch_up_seconds: float = Field(5.0, ge=0)
    upstream_cache_ttl_seconds: float | None = Field(None, gt=0)

    # -- warehouse and Hive behaviour
    warehouse_dir: str = "warehouse"
    external_warehouse_dir: str | None = None
    event_message_format: Literal["gzip(json-2.0)", "json-0.2"] = "gzip(json-2.0)"
    notification_max_events: int = Field(10_000, ge=1)
    partition_filter_max_length: int = Field(1_000_000, ge=1)
    partition_filter_max_terms: int = Field(10_000, ge=1)
    server_uri: str = ""

    # -- transactions and locks (Hive's metastore.txn.* settings)
    txn_timeout_seconds: float = Field(300.0, gt=0)
    repl_txn_timeout_seconds: float = Field(950_400.0, gt=0)
    txn_housekeeping_interval_seconds: float = Field(60.0, ge=0)
    txn_housekeeping: Literal["lease", "always", "off"] = "lease"
    txn_open_timeout_ms: int = Field(1000, ge=1)
    txn_max_open_batch: int = Field(1000, ge=1)
    txn_use_min_history_level: bool = True  # metastore.txn.use.minhistorylevel
    txn_use_min_history_write_id: bool = False  # metastore.txn.use.minhistorywriteid
    # PostgreSQL: open_txns and commit_txn as one server-side function call each (installed in
    # schema hms_cache_proxy by init-db and serve); false: several statements per call
    txn_server_functions: bool = True

    # -- HTTP endpoint: /metrics, /healthz, /readyz, /config, /admin (observability/http.py)
    metrics_host: str = "0.0.0.0"
    metrics_port: int | None = Field(9090, le=65535)  # 0: any free port; None or < 0: off
    health_timeout_seconds: float = Field(2.0, gt=0)
    health_cache_seconds: float = Field(1.0, ge=0)
    http_max_connections: int = Field(256, ge=1)
    http_max_connections_per_client: int = Field(16, ge=0)
    http_reserved_connections: int = Field(32, ge=0)
    http_reserved_connections_per_client: int = Field(2, ge=1)
    http_request_timeout_seconds: float = Field(5.0, gt=0)

    # -- Iceberg REST catalog (hms_cache_proxy/rest/; docs/iceberg-rest.md)
    rest_host: str = "127.0.0.1"
    rest_port: int | None = Field(None, le=65535)  # 0: any free port; None or < 0: off
    rest_tokens: dict[str, SecretStr] = Field({})  # bearer token per user name
    rest_max_body_bytes: int = Field(4 * 1024 * 1024, ge=1024)
    rest_lock_timeout_seconds: float = Field(30.0, gt=0)
    rest_metadata_cache_bytes: int = Field(64 * 1024 * 1024, ge=0)
    rest_max_metadata_bytes: int = Field(64 * 1024 * 1024, ge=1024)
    rest_idempotency_lifetime_seconds: float = Field(1800.0, ge=0)
    s3_endpoint: str | None = None
    s3_region: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: SecretStr | None = None
    s3_path_style_access: bool = True

    # -- the cache (docs/cache.md)
    cache_enabled: bool = True
    cache_max_bytes: int = Field(1024 * 1024 * 1024, ge=4096)
    consistency: Literal["eventual", "strong"] = "eventual"
    consistency_wait_seconds: float = Field(1.0, ge=0)
    cache_strict: bool = False
    cache_include: list[str] = Field([".*"])
    cache_exclude: list[str] = Field([])
    cache_poll_interval_seconds: float = Field(1.0, gt=0)
    cache_listen: bool = True
    poller_safety_interval_seconds: float = Field(60.0, gt=0)
    prewarm: bool = True
    prewarm_threads: int = Field(2, ge=1, le=64)
    prewarm_before_ready: bool = False

    # -- logging
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = "text"

    # -- shutdown (SIGTERM, SIGINT)
    shutdown_grace_seconds: float = Field(10.0, ge=0)
    failpoints: str = ""

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
    admin_users: list[str] = Field([])
    filesystem_roots: list[str] = Field([])
    external_locations_outside_roots: Literal["metadata_only", "refuse"] = "metadata_only"

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, v: str) -> str:
        dburl.resolve(v)  # an unknown or uninstalled driver: one line naming the forms that work
        return v

    @field_validator("upstream_uri", mode="before")
    @classmethod
    def _upstream(cls, v: Any) -> Any:
        if v is None or (isinstance(v, str) and not v.strip()):
            return None  # blank is unset (an empty variable)
        if isinstance(v, str):
            upstream_address(v)  # thrift://HOST:PORT, or one line saying what is wrong
            return v.strip()
        return v

    @field_validator("database_listen_url")
    @classmethod
    def _listen_database(cls, v: str | None) -> str | None:
        if v is not None and dburl.resolve(v).get_backend_name() != "postgresql":
            raise ValueError("database_listen_url must be a PostgreSQL URL (LISTEN/NOTIFY)")
        return v

    @field_validator("failpoints")
    @classmethod
    def _failpoints(cls, v: str) -> str:
        from hms_cache_proxy import failpoints

        failpoints.parse(v)  # a malformed list is refused at start-up, not ignored
        return v

    @field_validator("metrics_port", "rest_port", mode="before")
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
            if not root.strip() or _is_filesystem_root(root):
                raise ValueError(
                    f"filesystem_roots entry {root!r} would confine nothing: name directories "
                    "the service may change"
                )
        return v

    @field_validator("warehouse_dir", mode="before")
    @classmethod
    def _warehouse(cls, v: Any) -> Any:
        # The warehouse is a filesystem root: "/" would let DDL change any file.
        if isinstance(v, str):
            if not v.strip():
                raise ValueError("empty: name the directory managed tables go to")
            if _is_filesystem_root(v):
                raise ValueError(
                    "the filesystem root would confine nothing: name the directory managed "
                    "tables go to"
                )
        return v

    @field_validator("external_warehouse_dir", mode="before")
    @classmethod
    def _external_warehouse(cls, v: Any) -> Any:
        # Blank is unset, as Hive reads metastore.warehouse.external.dir.
        if v is None or (isinstance(v, str) and not v.strip()):
            return None
        if isinstance(v, str):
            v = v.strip()
            if _is_filesystem_root(v):
                raise ValueError(
                    "the filesystem root would confine nothing: name the directory external "
                    "tables go to"
                )
            uri = to_uri(v)
            if uri.startswith("file:"):
                path = Path(unquote(urlparse(uri).path))
                if path.exists() and not path.is_dir():
                    raise ValueError("not a directory: name the directory external tables go to")
        return v

    @model_validator(mode="after")
    def _reserves_fit(self) -> Settings:
        if self.reserved_connections >= self.max_connections:
            raise ValueError(
                f"reserved_connections ({self.reserved_connections}) must be smaller than "
                f"max_connections ({self.max_connections})"
            )
        if self.http_reserved_connections >= self.http_max_connections:
            raise ValueError(
                f"http_reserved_connections ({self.http_reserved_connections}) must be smaller "
                f"than http_max_connections ({self.http_max_connections})"
            )
        return self

    @model_validator(mode="after")
    def _one_backend(self) -> Settings:
        default = Settings.model_fields["database_url"].default
        given = "database_url" in self.model_fields_set and self.database_url != default
        if self.upstream_uri is not None and given:
            raise ValueError(
                "upstream_uri and database_url are alternatives: an instance stands either on "
                "a metastore database or in front of an upstream metastore; set only one"
            )
        if self.upstream_from_hive_site and not self.hive_site:
            raise ValueError(
                "upstream_from_hive_site needs hive_site: the file whose hive.metastore.uris "
                "names the upstream"
            )
        if (self.upstream_sasl_user is None) != (self.upstream_sasl_password is None):
            missing = "upstream_sasl_password" if self.upstream_sasl_user else "upstream_sasl_user"
            raise ValueError(
                f"upstream_sasl_user and upstream_sasl_password must be set together: {missing} "
                "is missing"
            )
        if self.upstream_sasl_as_caller and not (
            self.sasl_enabled and self.upstream_sasl_user is not None
        ):
            raise ValueError(
                "upstream_sasl_as_caller needs sasl_enabled (the callers' PLAIN logins are "
                "what it passes on) and upstream_sasl_user with upstream_sasl_password (the "
                "proxy's own login, for its poller and health checks)"
            )
        if self.upstream_sasl_user is not None and self.upstream_transport != "buffered":
            raise ValueError(
                "upstream_sasl_user needs upstream_transport: buffered (SASL already frames "
                "every message)"
            )
        if (
            self.workers > 1
            and self.upstream_uri is None
            and self.database_url.startswith("sqlite")
        ):
            raise ValueError(
                f"{self.workers} workers need PostgreSQL: SQLite has one writer at a time, and "
                "each worker is an instance writing the same file; serve SQLite with one "
                "(workers: 1)"
            )
        if self.upstream_uri is not None and self.rest_enabled:
            raise ValueError(
                "rest_port is not served with upstream_uri (the Iceberg REST catalog stands on "
                "a metastore database): unset one"
            )
        if self.upstream_uri is not None:
            # Calls pass through undecoded: these rules could not be kept, so they are refused
            # rather than silently not applied (the upstream authorizes; docs/security.md).
            unkept = [
                name
                for name in ("read_only", "allowed_databases", "allowed_databases_by_user")
                if getattr(self, name) != Settings.model_fields[name].default
            ]
            if unkept:
                raise ValueError(
                    f"{', '.join(unkept)} cannot be applied with upstream_uri (calls pass "
                    "through undecoded; the upstream metastore authorizes them): unset them"
                )
        return self

    @model_validator(mode="after")
    def _security_consistent(self) -> Settings:
        for patterns in self.allowed_databases_by_user.values():
            self._regexes(patterns)
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            missing = "tls_key_file" if self.tls_key_file is None else "tls_cert_file"
            raise ValueError(
                f"tls_cert_file and tls_key_file must be set together (a PEM certificate and "
                f"its private key): {missing} is missing"
            )
        if (self.upstream_tls_cert_file is None) != (self.upstream_tls_key_file is None):
            missing = (
                "upstream_tls_key_file"
                if self.upstream_tls_key_file is None
                else "upstream_tls_cert_file"
            )
            raise ValueError(
                "upstream_tls_cert_file and upstream_tls_key_file must be set together (the "
                f"client certificate shown to the upstream and its private key): {missing} is "
                "missing"
            )
        if self.upstream_tls_cert_file is not None and not self.upstream_tls:
            raise ValueError(
                "upstream_tls_cert_file is a client certificate for TLS to the upstream: set "
                "upstream_tls: true too"
            )
        if self.tls_client_auth != "none" and not self.tls_ca_file:
            raise ValueError(f"tls_client_auth: {self.tls_client_auth} needs tls_ca_file")
        if self.sasl_enabled and not self.sasl_users:
            raise ValueError("sasl_enabled needs at least one user in sasl_users")
        if self.sasl_enabled and self.transport != "buffered":
            raise ValueError(
                "sasl_enabled needs transport: buffered (SASL already frames every message)"
            )
        if self.rest_enabled and not self.rest_tokens and not _is_loopback(self.rest_host):
            raise ValueError(
                f"rest_host {self.rest_host} is not a loopback address: set rest_tokens (a "
                "bearer token per user) or listen on 127.0.0.1"
            )
        if self.rest_enabled and self.sasl_enabled and not self.rest_tokens:
            raise ValueError(
                "sasl_enabled with rest_port needs rest_tokens (users of the REST port)"
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

    def thrift_connection_limits(self) -> ConnectionLimits:
        return ConnectionLimits(
            self.max_connections,
            self.max_connections_per_client,
            self.reserved_connections,
            self.reserved_connections_per_client,
        )

    def http_connection_limits(self) -> ConnectionLimits:
        return ConnectionLimits(
            self.http_max_connections,
            self.http_max_connections_per_client,
            self.http_reserved_connections,
            self.http_reserved_connections_per_client,
        )

    @property
    def rest_enabled(self) -> bool:
        return self.rest_port is not None and self.rest_port >= 0

    @property
    def metrics_enabled(self) -> bool:
        return self.metrics_port is not None and self.metrics_port >= 0

    def warehouse_uri(self) -> str:
        """The warehouse root as a URI (relative paths are taken from the working directory)."""
        return to_uri(self.warehouse_dir)

    def external_warehouse_uri(self) -> str | None:
        """The external warehouse root as a URI, None when unset."""
        return to_uri(self.external_warehouse_dir) if self.external_warehouse_dir else None

    def filesystem_root_uris(self) -> list[str]:
        """Where DDL may change files: the warehouse, the external warehouse when set, and
        ``filesystem_roots`` (relative paths taken from the working directory, as for the
        warehouse)."""
        external = self.external_warehouse_uri()
        return [self.warehouse_uri(), *([external] if external else []), *self.extra_root_uris()]

    def extra_root_uris(self) -> list[str]:
        """``filesystem_roots`` as URIs (relative paths taken from the working directory)."""
        return [to_uri(r.strip()) for r in self.filesystem_roots]

    def redacted(self) -> dict[str, Any]:
        """The settings as a dict safe to log: secrets and database passwords masked."""
        out = self.model_dump()
        for key, value in out.items():
            if isinstance(getattr(self, key), SecretStr) and value is not None:
                out[key] = "********"
        out["database_url"] = dburl.masked(self.database_url)
        if self.database_listen_url:
            out["database_listen_url"] = dburl.masked(self.database_listen_url)
        out["sasl_users"] = {user: "********" for user in self.sasl_users}
        out["rest_tokens"] = {user: "********" for user in self.rest_tokens}
        return out

    def secrets(self) -> list[str]:
        """Every secret value, for the log scrubber (observability/redact.py)."""
        from sqlalchemy.engine import make_url

        found = [
            s.get_secret_value()
            for s in (
                self.admin_token,
                self.tls_key_password,
                self.upstream_tls_key_password,
                self.upstream_sasl_password,
                self.s3_secret_access_key,
            )
            if s
        ]
        found += [p.get_secret_value() for p in self.sasl_users.values()]
        found += [t.get_secret_value() for t in self.rest_tokens.values()]
        for text in (self.database_url, self.database_listen_url):
            if not text:
                continue
            try:
                url = make_url(text)
                found += [url.password or ""] + [
                    str(v) for k, v in url.query.items() if "password" in k.lower()
                ]
            except Exception:  # noqa: BLE001 - an unparsable URL is refused elsewhere
                pass
        return [s for s in found if s]


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def upstream_address(uri: str) -> tuple[str, int]:
    """(host, port) of a ``thrift://HOST:PORT`` URI; ValueError in words a user can act on."""
    parsed = urlparse(uri.strip())
    try:
        port = parsed.port
    except ValueError:
        port = None
    if parsed.scheme != "thrift" or not parsed.hostname or port is None or port == 0:
        raise ValueError(f"{uri!r} is not thrift://HOST:PORT (e.g. thrift://metastore:9083)")
    if parsed.path not in ("", "/") or parsed.query or parsed.username:
        raise ValueError(f"{uri!r}: only thrift://HOST:PORT is understood (no path, user, query)")
    return parsed.hostname, port


def to_uri(path_or_uri: str) -> str:
    if "://" in path_or_uri or path_or_uri.startswith("file:"):
        return path_or_uri.rstrip("/") if path_or_uri.count("/") > 3 else path_or_uri
    return "file:" + str(Path(path_or_uri).expanduser().resolve())


def default_config_file() -> Path | None:
    """$HMS_CACHE_PROXY_CONFIG, else conf/hms-cache-proxy.yaml in the working directory if there."""
    env = os.environ.get(CONFIG_FILE_ENV)
    if env:
        return Path(env)
    default = Path("conf/hms-cache-proxy.yaml")
    return default if default.is_file() else None


class SettingsError(ValueError):
    """Settings the service cannot start with: one line per problem, each naming the setting
    the way the user gave it (flag, variable, file key or hive-site property)."""


class _YamlBeyondDefaults(YamlConfigSettingsSource):
    """The YAML file less the keys that only repeat their default: a copy of the documented
    conf/hms-cache-proxy.yaml (every key at its default) must not mask hive-site.xml."""

    def __call__(self) -> dict[str, Any]:
        return _beyond_defaults(super().__call__())


def _beyond_defaults(data: dict[str, Any]) -> dict[str, Any]:
    fields = Settings.model_fields
    return {k: v for k, v in data.items() if k not in fields or v != fields[k].default}


class _HiveSiteSource(PydanticBaseSettingsSource):
    """The values read from hive-site.xml: the lowest of all sources."""

    def __init__(self, settings_cls: type[BaseSettings], values: dict[str, Any]) -> None:
        super().__init__(settings_cls)
        self.values = values

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self.values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.values)


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    *,
    flag_names: Mapping[str, str] | None = None,
    notes: list[str] | None = None,
    **overrides: Any,
) -> Settings:
    """Settings from hive-site.xml (``hive_site``), the given (or default) YAML file, the
    environment and explicit overrides, in rising precedence.

    ``overrides`` with the value None are ignored, so unset command-line flags do not mask
    the file or the environment. ``flag_names`` (setting -> flag) lets errors name a setting
    as the flag the user typed; ``notes`` receives what hive-site.xml gave that is not used
    (for the log). Raises SettingsError (or FileNotFoundError for the YAML file).
    """
    path = Path(config_file) if config_file is not None else default_config_file()
    try:
        file_data = read_settings_file(path) if path is not None else {}
    except SettingsFileError as exc:
        raise SettingsError(str(exc)) from None
    given = {k: v for k, v in overrides.items() if v is not None}
    origins = Origins(
        ENV_PREFIX,
        config_file=path,
        file_keys=frozenset(_beyond_defaults(file_data)),
        flag_names=dict(flag_names or {}),
        flags_given=frozenset(given),
    )
    stray = stray_variables(ENV_PREFIX, Settings.model_fields, frozenset({CONFIG_FILE_ENV}))
    misspelt = [f"{name}: not a setting; did you mean {meant}?" for name, meant in stray if meant]
    if misspelt:
        raise SettingsError("\n".join(misspelt))
    if notes is not None:
        notes.extend(f"{name} is not a setting and is ignored" for name, _ in stray)
    cls = _settings_class(path, None)
    try:
        settings = cls(**given)
    except ValidationError as exc:
        raise SettingsError(explain(exc, origins, Settings.model_fields)) from None
    except yaml.YAMLError as exc:
        raise SettingsError(f"{path} is not valid YAML: {_one_line(exc)}") from None
    except PydanticSettingsError as exc:
        raise SettingsError(_unparsable(exc, origins)) from None
    if not settings.hive_site:
        return settings
    try:
        site = read_hive_site(Path(settings.hive_site), upstream=settings.upstream_from_hive_site)
    except ConfigurationFileError as exc:
        raise SettingsError(f"{origins.name('hive_site')}: {exc}") from None
    origins.hive_site = site.path
    origins.hive_site_properties = site.properties
    refused = [
        f"{site.path}: {message}"
        for setting, message in site.problems.items()
        if not origins.given_above_hive_site(setting)
    ]
    if refused:
        raise SettingsError("\n".join(refused))
    try:
        settings = _settings_class(path, site.values)(**given)
    except ValidationError as exc:
        raise SettingsError(explain(exc, origins, Settings.model_fields)) from None
    if notes is not None:
        notes.extend(f"{site.path}: {note}" for note in site.notes)
        notes.extend(
            f"{site.path}: {prop} is overridden by {origins.name(setting)}"
            for setting, prop in site.properties.items()
            if origins.given_above_hive_site(setting)
        )
    return settings


def _settings_class(path: Path | None, hive_site: dict[str, Any] | None) -> type[Settings]:
    if path is None and hive_site is None:
        return Settings
    if path is not None and not path.is_file():
        raise FileNotFoundError(f"config file {path} does not exist")
    yaml_file = str(path) if path is not None else None

    class LoadedSettings(Settings):
        model_config = SettingsConfigDict(yaml_file=yaml_file)

        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            if not hive_site:
                return (init_settings, env_settings, YamlConfigSettingsSource(settings_cls))
            return (
                init_settings,
                env_settings,
                _YamlBeyondDefaults(settings_cls),
                _HiveSiteSource(settings_cls, hive_site),
            )

    return LoadedSettings


def _unparsable(exc: Exception, origins: Origins) -> str:
    """pydantic-settings' 'error parsing value for field "x" from source ...' (a variable
    holding a list or mapping that is not JSON), naming the variable and the form expected."""
    found = re.search(r'field "(\w+)"', str(exc))
    if found is None:
        return _one_line(exc)
    setting = found.group(1)
    return (
        f"{origins.name(setting)}: not a value of this setting; lists and mappings are "
        'written as JSON, e.g. ["a", "b"] or {"name": "value"}'
    )


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
