"""``python -m hms_cache_proxy.pipeline JOB ...`` or ``spark-submit .../pipeline/__main__.py``.

Under spark-submit this file runs as a plain script, so the package root is put on the path
when ``hms_cache_proxy`` is not installed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

if not __package__:  # run as a script (spark-submit): make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hms_cache_proxy.closed_stdout import quiet_on_closed_stdout  # noqa: E402
from hms_cache_proxy.pipeline.args import add_arguments  # noqa: E402
from hms_cache_proxy.pipeline.command import run  # noqa: E402


@quiet_on_closed_stdout
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hms_cache_proxy.pipeline",
        description="PySpark pipeline jobs against a Hive metastore (see docs/pipeline.md).",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
