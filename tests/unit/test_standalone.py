"""The repository stands alone: a clone runs its own tests and reads its own docs.

The project grew next to a workspace folder that users do not have. Nothing tracked may point
there; the facts the tests check against live in tests/data and the design in docs/design.md.
The needles are built from pieces so this file does not match itself.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.facts import DATA_DIR, SCHEMA_FACTS, THRIFT_FACTS

REPO_ROOT = Path(__file__).resolve().parents[2]
_WORKSPACE = "sha" + "red"
NEEDLES = (f"../{_WORKSPACE}", f"{_WORKSPACE}/reference", f"{_WORKSPACE}/DESIGN")


def tracked_files() -> list[str]:
    """`git ls-files` of the checkout this test runs from (skips outside a git checkout)."""
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("not a git checkout: no list of tracked files")
    out = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "ls-files", "-z"],
        capture_output=True,
        check=True,
    ).stdout
    return [name for name in out.decode().split("\0") if name]


def workspace_references(text: bytes) -> list[str]:
    """The needles that occur in a file's bytes."""
    return [needle for needle in NEEDLES if needle.encode() in text]


def test_needles_are_found() -> None:
    """The check below proves something only if it can see a reference."""
    assert workspace_references(b"see ../" + _WORKSPACE.encode() + b"/reference/x.json") == [
        NEEDLES[0],
        NEEDLES[1],
    ]
    assert workspace_references(b"docs/design.md and tests/data/") == []


def test_no_tracked_file_points_outside_the_repository() -> None:
    offenders = []
    for name in tracked_files():
        path = REPO_ROOT / name
        if path.is_symlink() or not path.is_file():
            continue
        found = workspace_references(path.read_bytes())
        if found:
            offenders.append(f"{name}: {', '.join(found)}")
    assert not offenders, "tracked files name a folder outside the repository:\n" + "\n".join(
        offenders
    )


def test_facts_the_tests_read_are_tracked() -> None:
    tracked = set(tracked_files())
    for path in (THRIFT_FACTS, SCHEMA_FACTS, DATA_DIR / "README.md"):
        assert path.is_relative_to(REPO_ROOT), path
        assert path.relative_to(REPO_ROOT).as_posix() in tracked, f"{path} is not in git"


def test_design_docs_are_tracked() -> None:
    tracked = set(tracked_files())
    assert {"docs/design.md", "docs/client-calls.md"} <= tracked
