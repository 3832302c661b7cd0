"""The container's entrypoint and health check, run directly on this machine (no Docker engine
here): a temporary directory stands in for /etc/hms-cache-proxy, environment variables for
compose's, SQLite for PostgreSQL. The service must answer /healthz (through the Dockerfile's
own HEALTHCHECK command) and Thrift, and stop on SIGTERM with exit status 0."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hms_cache_proxy.config import ENV_PREFIX
from tests.support.apache_thrift import apache_client
from tests.support.container import DOCKERFILE, ENTRYPOINT, PIPELINE_DOCKERFILE, ROOT, Dockerfile
from tests.support.server import free_port

IMAGE_CONFIG = ROOT / "docker" / "hms-cache-proxy.yaml"


def _wait_listening(proc: subprocess.Popen, port: int, out: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"exited {proc.returncode}:\n{out.read_text()[-4000:]}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"not listening on {port}:\n{out.read_text()[-4000:]}")


def _healthcheck(env: dict[str, str]) -> int:
    """The image's HEALTHCHECK command, with this machine's Python for the image's."""
    command = Dockerfile.read(DOCKERFILE).exec_form("HEALTHCHECK")
    assert command[0] == "python"
    return subprocess.run([sys.executable, *command[1:]], env=env, timeout=30).returncode


@pytest.fixture
def container_env(tmp_path: Path) -> dict[str, str]:
    """The environment compose would give a proxy, pointed at this machine's paths."""
    config_dir = tmp_path / "etc"
    config_dir.mkdir()
    shutil.copy(IMAGE_CONFIG, config_dir / "hms-cache-proxy.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    env.update(
        PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
        PYTHONPATH=str(ROOT),
        HMS_ENTRYPOINT_CONFIG_DIR=str(config_dir),
        HMS_ENTRYPOINT_INIT_DB="true",
        HMS_CACHE_PROXY_HOST="127.0.0.1",
        HMS_CACHE_PROXY_PORT=str(free_port()),
        HMS_CACHE_PROXY_METRICS_HOST="127.0.0.1",
        HMS_CACHE_PROXY_METRICS_PORT=str(free_port()),
        HMS_CACHE_PROXY_DATABASE_URL=f"sqlite:///{tmp_path / 'metastore.db'}",
        HMS_CACHE_PROXY_WAREHOUSE_DIR=str(tmp_path / "warehouse"),
    )
    return env


@pytest.fixture
def entrypoint(container_env: dict[str, str], tmp_path: Path) -> Iterator[subprocess.Popen]:
    assert shutil.which("hms-cache-proxy", path=container_env["PATH"]), "package not installed"
    out = tmp_path / "entrypoint.log"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            ["sh", str(ENTRYPOINT)], env=container_env, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        _wait_listening(proc, int(container_env["HMS_CACHE_PROXY_PORT"]), out)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def test_entrypoint_serves_health_and_thrift_then_stops_on_sigterm(
    entrypoint: subprocess.Popen, container_env: dict[str, str], tmp_path: Path
) -> None:
    assert _healthcheck(container_env) == 0
    client, trans = apache_client("127.0.0.1", int(container_env["HMS_CACHE_PROXY_PORT"]))
    try:
        assert client.get_all_databases() == ["default"]
    finally:
        trans.close()
    entrypoint.send_signal(signal.SIGTERM)
    assert entrypoint.wait(60) == 0
    assert _healthcheck(container_env) != 0  # nothing answers any more
    lines = (tmp_path / "entrypoint.log").read_text().splitlines()
    # init-db ran first (HMS_ENTRYPOINT_INIT_DB) and printed its plain result; from then on the
    # service logged as the config file in the stand-in /etc/hms-cache-proxy says: JSON lines.
    serving = [i for i, line in enumerate(lines) if "serving thrift://" in line]
    assert serving and any("4.0.0" in line for line in lines[: serving[0]])
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert any("serving thrift://" in r["message"] for r in records)
    assert records[-1]["message"].startswith("stopped")


@pytest.mark.slow
@pytest.mark.parametrize("dockerfile", [DOCKERFILE, PIPELINE_DOCKERFILE], ids=lambda p: p.name)
def test_the_build_stage_copies_enough_to_build_the_wheel(dockerfile: Path, tmp_path: Path) -> None:
    """`pip wheel .` on exactly the files the build stage COPYs (what .dockerignore lets in)."""
    build = Dockerfile.read(dockerfile, stage=0)
    context = tmp_path / "context"
    context.mkdir()
    ignored = set((ROOT / ".dockerignore").read_text().split())
    for source, dest in build.copy_pairs():
        assert source not in ignored, f"{source} is excluded by .dockerignore"
        target = context / dest.removeprefix("./")
        if dest.endswith("/"):
            target = target / Path(source).name
        if (ROOT / source).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(ROOT / source, target, ignore=ignore)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / source, target)
    wheels = tmp_path / "wheels"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(context)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = wheels.glob("hms_cache_proxy-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert "hms_cache_proxy/idl/hive_metastore.thrift" in names
    assert "hms_cache_proxy/conf/hms-cache-proxy.yaml" in names
