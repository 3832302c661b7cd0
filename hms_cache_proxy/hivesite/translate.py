"""The settings a stock metastore's hive-site.xml / metastore-site.xml gives this service.

Read: the database (``javax.jdo.option.ConnectionURL``, ``...ConnectionUserName``,
``...ConnectionPassword``), the warehouse (``metastore.warehouse.dir`` /
``hive.metastore.warehouse.dir``), the external warehouse (``metastore.warehouse.external.dir``
/ ``hive.metastore.warehouse.external.dir``) and the Thrift port (``metastore.thrift.port`` /
``hive.metastore.port``, else the port of ``metastore.thrift.uris`` / ``hive.metastore.uris``).
The min-history switches (``metastore.txn.use.minhistorylevel`` /
``hive.txn.use.minhistorylevel``, ``metastore.txn.use.minhistorywriteid`` /
``hive.txn.use.minhistorywriteid``) are read too. As in Hive's MetastoreConf, the
``metastore.`` name is looked up before the ``hive.`` one.
Asked for upstream mode (``upstream_from_hive_site``), the file is a client's: the metastore to
stand in front of is the first URI of ``metastore.thrift.uris`` / ``hive.metastore.uris``, and
the database properties are not read.

What cannot be honoured (Derby, MySQL, a credential provider instead of a password, Kerberos,
keystore TLS, a variable that resolves to nothing) becomes a *problem* of the setting it
concerns: refused at start unless the user's own settings give that setting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from hms_cache_proxy.hivesite import jdbc
from hms_cache_proxy.hivesite.xmlconf import UnresolvedVariable, expand, read_properties

CONNECTION_URL = ("javax.jdo.option.ConnectionURL",)
CONNECTION_USER = ("javax.jdo.option.ConnectionUserName",)
CONNECTION_PASSWORD = ("javax.jdo.option.ConnectionPassword",)
CREDENTIAL_PROVIDER = ("hadoop.security.credential.provider.path",)
WAREHOUSE = ("metastore.warehouse.dir", "hive.metastore.warehouse.dir")
EXTERNAL_WAREHOUSE = ("metastore.warehouse.external.dir", "hive.metastore.warehouse.external.dir")
DEFAULT_FS = ("fs.defaultFS", "fs.default.name")
PORT = ("metastore.thrift.port", "hive.metastore.port")
URIS = ("metastore.thrift.uris", "hive.metastore.uris")
SASL = ("metastore.sasl.enabled", "hive.metastore.sasl.enabled")
AUTHENTICATION = ("metastore.authentication", "hive.metastore.authentication")
USE_SSL = ("metastore.use.SSL", "hive.metastore.use.SSL")
MIN_HISTORY_LEVEL = ("metastore.txn.use.minhistorylevel", "hive.txn.use.minhistorylevel")
MIN_HISTORY_WRITE_ID = ("metastore.txn.use.minhistorywriteid", "hive.txn.use.minhistorywriteid")


@dataclass
class HiveSite:
    """What one file gives: setting values, the property each came from, problems, notes."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)  # setting -> property name
    problems: dict[str, str] = field(default_factory=dict)  # setting -> why it is refused
    notes: list[str] = field(default_factory=list)


def read_hive_site(path: Path, *, upstream: bool = False) -> HiveSite:
    """Read ``path`` (raises ConfigurationFileError when it is missing or not XML); with
    ``upstream``, the upstream metastore's URI instead of the database."""
    props = read_properties(path)
    site = HiveSite(path)
    _Reader(props, site, upstream).run()
    return site


class _Reader:
    def __init__(self, props: dict[str, str], site: HiveSite, upstream: bool = False) -> None:
        self.props = props
        self.site = site
        self.upstream = upstream

    def run(self) -> None:
        if self.upstream:
            self._upstream()
        else:
            self._database()
            self._switch(MIN_HISTORY_LEVEL, "txn_use_min_history_level")
            self._switch(MIN_HISTORY_WRITE_ID, "txn_use_min_history_write_id")
        self._warehouse()
        self._port()
        self._security()

    # -- lookups ---------------------------------------------------------------------------------

    def _get(self, names: tuple[str, ...], setting: str) -> tuple[str, str] | None:
        """(property, expanded value) of the first of ``names`` that is set; an unresolvable
        variable becomes a problem of ``setting``."""
        for name in names:
            raw = self.props.get(name)
            if raw is None or raw.strip() == "":
                continue
            try:
                return name, expand(raw, self.props).strip()
            except UnresolvedVariable as exc:
                self._problem(
                    setting,
                    f"{name} uses {exc.variable}, which resolves to nothing here (only "
                    "${env:NAME}, ${system:user.name}, ${system:java.io.tmpdir}, "
                    "${system:user.home} and other properties of the file are known): set "
                    f"{setting} in the YAML file, an HMS_CACHE_PROXY_{setting.upper()} variable "
                    "or a flag instead",
                )
                self.site.properties.setdefault(setting, name)
                return None
        return None

    def _problem(self, setting: str, message: str) -> None:
        self.site.problems.setdefault(setting, message)

    def _flag(self, names: tuple[str, ...]) -> tuple[str, str] | None:
        for name in names:
            value = self.props.get(name)
            if value is not None and value.strip():
                return name, value.strip()
        return None

    # -- the parts -------------------------------------------------------------------------------

    def _database(self) -> None:
        setting = "database_url"
        found = self._get(CONNECTION_URL, setting)
        if found is None:
            if setting not in self.site.problems:
                self._problem(
                    setting,
                    "no javax.jdo.option.ConnectionURL (a stock metastore would then use an "
                    "embedded Derby database, which cannot be shared): set it to the "
                    "PostgreSQL metastore's jdbc:postgresql://HOST:PORT/DB, or give "
                    "--database-url / HMS_CACHE_PROXY_DATABASE_URL",
                )
            return
        prop, url = found
        self.site.properties[setting] = prop
        user = self._get(CONNECTION_USER, setting)
        password = self._get(CONNECTION_PASSWORD, setting)
        if setting in self.site.problems:
            return
        provider = self._flag(CREDENTIAL_PROVIDER)
        try:
            translated = jdbc.to_sqlalchemy(
                url, user[1] if user else None, password[1] if password else None
            )
        except jdbc.JdbcURLError as exc:
            self._problem(setting, f"{prop}: {exc}")
            return
        if translated.url.password is None and provider is not None:
            self._problem(
                setting,
                f"the database password is kept in a Hadoop credential provider "
                f"({provider[0]}={provider[1]}), which hms-cache-proxy cannot read: put it in "
                "javax.jdo.option.ConnectionPassword, or give the whole URL as "
                "HMS_CACHE_PROXY_DATABASE_URL=postgresql://USER:PASSWORD@HOST:PORT/DB",
            )
            return
        self.site.values[setting] = translated.url.render_as_string(hide_password=False)
        self.site.notes.extend(f"{prop}: {note}" for note in translated.notes)

    def _upstream(self) -> None:
        setting = "upstream_uri"
        found = self._get(URIS, setting)
        if found is None:
            if setting not in self.site.problems:
                self._problem(
                    setting,
                    "no hive.metastore.uris (or metastore.thrift.uris) naming the metastore to "
                    "stand in front of: set it, or give --upstream / "
                    "HMS_CACHE_PROXY_UPSTREAM_URI",
                )
            return
        prop, text = found
        self.site.properties[setting] = prop
        uris = [u.strip() for u in text.split(",") if u.strip()]
        if not uris or urlparse(uris[0]).scheme != "thrift":
            self._problem(setting, f"{prop}={text}: the first URI is not thrift://HOST:PORT")
            return
        self.site.values[setting] = uris[0]
        if len(uris) > 1:
            self.site.notes.append(
                f"{prop}: in front of the first of its {len(uris)} URIs, {uris[0]} (one upstream)"
            )

    def _warehouse(self) -> None:
        self._directory(WAREHOUSE, "warehouse_dir")
        self._directory(EXTERNAL_WAREHOUSE, "external_warehouse_dir")

    def _directory(self, names: tuple[str, ...], setting: str) -> None:
        """A warehouse root, as the managed and the external warehouse are read alike."""
        found = self._get(names, setting)
        if found is None:
            return
        prop, location = found
        self.site.properties[setting] = prop
        scheme = urlparse(location).scheme
        default_fs = self._get(DEFAULT_FS, setting)
        if not scheme and location.startswith("/") and default_fs is not None:
            fs = default_fs[1].rstrip("/")
            if not fs.startswith("file:"):
                location = fs + location  # Hadoop qualifies bare paths with fs.defaultFS
        self.site.values[setting] = location
        if urlparse(location).scheme not in ("", "file"):
            self.site.notes.append(
                f"{prop}={location}: locations on this filesystem are recorded but their "
                "directories are neither made nor deleted by hms-cache-proxy"
            )

    def _port(self) -> None:
        setting = "port"
        found = self._get(PORT, setting)
        if found is None and setting not in self.site.problems:
            uris = self._get(URIS, setting)
            if uris is not None:
                prop, text = uris
                first = text.split(",")[0].strip()
                try:
                    port = urlparse(first).port
                except ValueError:
                    port = None
                if port is not None:
                    found = (prop, str(port))
        if found is None:
            return
        prop, text = found
        self.site.properties[setting] = prop
        self.site.values[setting] = text

    def _switch(self, names: tuple[str, ...], setting: str) -> None:
        """A boolean property: ``true`` / ``false`` in any case (what else Hive would read as
        false is refused, so a typo does not silently change the behaviour)."""
        found = self._get(names, setting)
        if found is None:
            return
        prop, text = found
        self.site.properties[setting] = prop
        if text.lower() not in ("true", "false"):
            self._problem(setting, f"{prop}={text}: expected true or false")
            return
        self.site.values[setting] = text.lower() == "true"

    def _security(self) -> None:
        sasl = self._flag(SASL)
        if sasl is not None and sasl[1].lower() == "true":
            self.site.properties["sasl_enabled"] = sasl[0]
            self._problem(
                "sasl_enabled",
                f"{sasl[0]}=true asks for Kerberos (SASL GSSAPI) logins, which hms-cache-proxy "
                "does not do (only SASL PLAIN with sasl_users: docs/security.md); set "
                "sasl_enabled and sasl_users in the YAML file (or sasl_enabled: false to serve "
                "without logins on purpose)",
            )
        auth = self._flag(AUTHENTICATION)
        if auth is not None and auth[1].upper() not in ("NOSASL", "NONE"):
            self.site.properties.setdefault("sasl_enabled", auth[0])
            self._problem(
                "sasl_enabled",
                f"{auth[0]}={auth[1]} asks for logins hms-cache-proxy does not check that way "
                "(it does SASL PLAIN with sasl_users: docs/security.md); set sasl_enabled and "
                "sasl_users in the YAML file (or sasl_enabled: false to serve without logins "
                "on purpose)",
            )
        ssl = self._flag(USE_SSL)
        if ssl is not None and ssl[1].lower() == "true":
            self.site.properties["tls_cert_file"] = ssl[0]
            self._problem(
                "tls_cert_file",
                f"{ssl[0]}=true asks for TLS from Java keystores, which hms-cache-proxy does "
                "not read: give the certificate and key as PEM files (--tls-cert FILE "
                "--tls-key FILE, or tls_cert_file / tls_key_file; docs/security.md)",
            )
