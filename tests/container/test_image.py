"""The container images built and run for real: scripts/container-test.sh with podman (Debian's
packages, no Docker engine or registry needed) builds docker/Dockerfile and
docker/Dockerfile.pipeline and runs them on SQLite, on PostgreSQL and under docker-compose.yml.
The script names the step that failed; its whole output is in the assertion message.

Leave it out with `-m "not container"`: it takes 1-3 minutes with the images' layers cached,
about 8 with nothing cached."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.container import ROOT

pytestmark = [pytest.mark.container, pytest.mark.slow]

SCRIPT = ROOT / "scripts" / "container-test.sh"


def test_images_build_serve_stop_and_compose_with_podman(tmp_path: Path) -> None:
    log = tmp_path / "container-test.log"
    env = {**os.environ, "HMS_CONTAINER_PYTHON": sys.executable}
    with log.open("wb") as out:
        done = subprocess.run(
            ["bash", str(SCRIPT)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=1800,
        )
    text = log.read_text(errors="replace")
    print(text)  # the steps and their times, with -s or on failure
    assert done.returncode == 0, text[-8000:]
    assert "container-test: all steps passed" in text
