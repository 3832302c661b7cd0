"""PyIceberg's HiveCatalog appending rows in a process of its own (its Thrift package,
``hive_metastore``, must not meet the suite's generated one of the same name):

    python -m tests.support.hive_catalog_writer THRIFT_URI TABLE FIRST COUNT

prints ``ready`` once it has loaded the table, then appends one row (``id``) per id,
reloading and retrying on CommitFailedException."""

from __future__ import annotations

import sys
import time

import pyarrow as pa
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.exceptions import CommitFailedException


def main(uri: str, table: str, first: int, count: int) -> None:
    catalog = HiveCatalog("hive", uri=uri)
    catalog.load_table(table)
    print("ready", flush=True)  # the other writer starts now, so the two overlap
    for i in range(first, first + count):
        while True:
            try:
                catalog.load_table(table).append(pa.table({"id": pa.array([i], pa.int64())}))
                break
            except CommitFailedException:
                time.sleep(0.01)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
