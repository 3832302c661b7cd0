"""The Thrift types, loaded once from the project's IDL.

Every layer uses these generated classes directly (Table, Partition, MetaException, ...):
there are no parallel model classes to keep in sync.
"""

from __future__ import annotations

from pathlib import Path

import thriftpy2


def idl_dir() -> Path:
    """Where the .thrift files are: inside the installed package, else the source tree."""
    packaged = Path(__file__).with_name("idl")
    if (packaged / "hive_metastore.thrift").is_file():
        return packaged
    return Path(__file__).resolve().parent.parent / "idl"


def _load():
    d = idl_dir()
    return thriftpy2.load(
        str(d / "hive_metastore.thrift"),
        module_name="hive_metastore_thrift",
        include_dirs=[str(d)],
    )


hms = _load()
"""The Hive metastore module: structs, enums, exceptions and ``ThriftHiveMetastore``."""

fb303 = hms.fb303
service = hms.ThriftHiveMetastore
