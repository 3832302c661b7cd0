"""mypy over hms_cache_proxy/ (configured in pyproject.toml): the handler and the three stores
must agree with the store contract, store/api.py. A call the contract does not have, a wrong
argument, or a store that no longer implements the contract fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_finds_no_errors(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"mypy failed:\n{done.stdout}{done.stderr}"
