"""Where the tests find the facts of Hive 4.0 they check the project against (tests/data).

The files travel with the repository, so a fresh clone runs its own tests; tests/data/README.md
says what they hold and where they came from.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
THRIFT_FACTS = DATA_DIR / "hive-metastore-thrift-4.0.json"
SCHEMA_FACTS = DATA_DIR / "hive-4.0.0-postgres-schema.json"


@cache
def load_facts(path: Path) -> dict[str, Any]:
    """One facts file, parsed once per test process (callers must not change it)."""
    if not path.is_file():
        raise FileNotFoundError(f"facts file {path} is missing: restore it from git (tests/data/)")
    return json.loads(path.read_text())
