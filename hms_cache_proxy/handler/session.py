"""Session, configuration and fb303 calls.

Hive keeps per-connection configuration (setMetaConf) in the connection's thread; this server
also runs one thread per connection, so a thread-local holds it.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from hms_cache_proxy import __version__
from hms_cache_proxy.handler.base import HandlerBase
from hms_cache_proxy.idl import fb303, hms

# Keys a client may read and set per session with getMetaConf/setMetaConf (Hive's
# MetastoreConf "metaConfVars"), with the defaults this server reports.
META_CONF_DEFAULTS: dict[str, str] = {
    "hive.metastore.try.direct.sql": "true",
    "hive.metastore.try.direct.sql.ddl": "true",
    "hive.metastore.client.socket.timeout": "600s",
    "hive.metastore.partition.name.whitelist.pattern": "",
    "hive.metastore.disallow.incompatible.col.type.changes": "true",
    "hive.metastore.disallow.incompatible.col.type.changes.table.skip.list": "",
    "hive.metastore.batch.retrieve.max": "300",
    "hive.metastore.batch.retrieve.table.partition.max": "1000",
    "hive.metastore.limit.partition.request": "-1",
    "hive.metastore.authorization.storage.checks": "false",
    "hive.metastore.disallow.invalid.col.type.changes": "true",
    "hive.metastore.aggregate.stats.cache.enabled": "false",
    "hive.metastore.event.db.notification.api.auth": "false",
    "metastore.try.direct.sql": "true",
    "metastore.try.direct.sql.ddl": "true",
    "metastore.client.socket.timeout": "600s",
    "metastore.partition.name.whitelist.pattern": "",
    "metastore.disallow.incompatible.col.type.changes": "true",
    "metastore.batch.retrieve.max": "300",
    "metastore.limit.partition.request": "-1",
}

# get_config_value may read only these families of keys (Hive's security rule).
_READABLE_CONFIG = re.compile(r"(hive|hdfs|mapred|metastore).*")


class SessionHandlers(HandlerBase):
    _session = threading.local()

    def _meta_conf(self) -> dict[str, str]:
        conf = getattr(self._session, "conf", None)
        if conf is None:
            conf = self._session.conf = {}
        return conf

    # -- session ---------------------------------------------------------------------------------

    def set_ugi(self, user_name: str, group_names: list[str] | None) -> list[str]:
        self._session.user = user_name
        return [*(group_names or []), user_name]

    def current_user(self) -> str | None:
        return getattr(self._session, "user", None)

    def get_config_value(self, name: str, defaultValue: str | None) -> str | None:
        if name is None or not _READABLE_CONFIG.match(name):
            raise hms.ConfigValSecurityException(
                message=f"For security reasons, the config key {name} cannot be accessed"
            )
        return self._config_values().get(name, defaultValue)

    def _config_values(self) -> dict[str, str]:
        warehouse = self.settings.warehouse_uri()
        external = self.settings.external_warehouse_uri()
        return {
            "hive.metastore.warehouse.dir": warehouse,
            "metastore.warehouse.dir": warehouse,
            **(
                {
                    "hive.metastore.warehouse.external.dir": external,
                    "metastore.warehouse.external.dir": external,
                }
                if external
                else {}
            ),
            "hive.metastore.uris": self.settings.server_uri,
            "hive.metastore.event.message.factory": _encoder_class(self.settings),
            "metastore.event.message.factory": _encoder_class(self.settings),
            **META_CONF_DEFAULTS,
            **self._meta_conf(),
        }

    def getMetaConf(self, key: str) -> str:
        if key not in META_CONF_DEFAULTS:
            raise hms.MetaException(message=f"Invalid configuration key {key}")
        return self._meta_conf().get(key, META_CONF_DEFAULTS[key])

    def setMetaConf(self, key: str, value: str) -> None:
        if key not in META_CONF_DEFAULTS:
            raise hms.MetaException(message=f"Invalid configuration key {key}")
        self._meta_conf()[key] = value

    def get_metastore_db_uuid(self) -> str:
        return self.store.metastore_db_uuid()

    # -- fb303 -----------------------------------------------------------------------------------

    def getName(self) -> str:
        return "hms-cache-proxy"

    def getVersion(self) -> str:
        return __version__

    def getStatus(self) -> int:
        return fb303.fb_status.ALIVE

    def getStatusDetails(self) -> str:
        return "Alive"

    def getCounters(self) -> dict[str, int]:
        return {}

    def getCounter(self, key: str) -> int:
        return 0

    def setOption(self, key: str, value: str) -> None:
        self._options()[key] = value

    def getOption(self, key: str) -> str:
        return self._options().get(key, "")

    def getOptions(self) -> dict[str, str]:
        return dict(self._options())

    def _options(self) -> dict[str, str]:
        opts = getattr(self._session, "options", None)
        if opts is None:
            opts = self._session.options = {}
        return opts

    def getCpuProfile(self, profileDurationInSec: int) -> str:
        return ""

    def aliveSince(self) -> int:
        return self.started_at

    def reinitialize(self) -> None:
        """Oneway; nothing to reinitialise."""

    def shutdown(self) -> None:
        """Oneway: a client saying goodbye (Spark sends it before it closes a connection).

        As in Hive, this ends only the caller's session state, never the server."""
        self._session.__dict__.clear()


def _encoder_class(settings: Any) -> str:
    if settings.event_message_format == "json-0.2":
        return "org.apache.hadoop.hive.metastore.messaging.json.JSONMessageEncoder"
    return "org.apache.hadoop.hive.metastore.messaging.json.gzip.GzipJSONMessageEncoder"
