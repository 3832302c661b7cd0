"""Running the service for tests: in this process (a thread) or as a real `serve` process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hms_cache_proxy.app import Service, build_service
from hms_cache_proxy.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def settings_for(database_url: str, warehouse: Path, **overrides: Any) -> Settings:
    # The HTTP endpoint is off unless a test asks for it (metrics_port=0 for a free port):
    # many services run at once, and the default port 9090 can be taken only once.
    overrides.setdefault("metrics_port", None)
    overrides.setdefault("port", 0)
    return Settings(
        database_url=database_url,
        host="127.0.0.1",
        warehouse_dir=str(warehouse),
        **overrides,
    )


@contextmanager
def running_service(database_url: str, warehouse: Path, **overrides: Any) -> Iterator[Service]:
    """The service on a free port in a background thread of this process."""
    service = build_service(settings_for(database_url, warehouse, **overrides))
    service.start_background()
    try:
        yield service
    finally:
        service.stop(grace_seconds=5)


class ServerProcess:
    """``hms-cache-proxy serve`` as a child process (what users and Spark talk to); with
    ``upstream``, in upstream mode in front of that metastore (``database_url`` unused)."""

    def __init__(
        self,
        database_url: str,
        warehouse: Path,
        log_path: Path,
        *extra: str,
        port: int = 0,
        upstream: str | None = None,
    ) -> None:
        self.port = port or free_port()
        self.database_url = database_url
        self.log_path = log_path
        stands_on = (
            ["--upstream", upstream]
            if upstream
            else ["--database-url", database_url, "--warehouse-dir", str(warehouse)]
        )
        cmd = [
            sys.executable,
            "-m",
            "hms_cache_proxy",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *stands_on,
            *extra,
        ]
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        # No HTTP endpoint unless asked for (--metrics-port in extra): 9090 is one port for all.
        env.setdefault("HMS_CACHE_PROXY_METRICS_PORT", "off")
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = self.log_path.read_text()[-4000:]
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not listen within {timeout}s:\n{self.log_path.read_text()}")

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self._log.close()
