"""Starting from a stock metastore's hive-site.xml or metastore-site.xml (``--hive-site``)."""

from hms_cache_proxy.hivesite.translate import HiveSite, read_hive_site
from hms_cache_proxy.hivesite.xmlconf import ConfigurationFileError

__all__ = ["ConfigurationFileError", "HiveSite", "read_hive_site"]
