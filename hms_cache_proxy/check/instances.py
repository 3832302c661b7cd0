"""The instances a check run talks to: real ``hms-cache-proxy serve`` processes on one database.

Each has its settings in environment variables (the child's HMS_CACHE_PROXY_* variables are
replaced, and it runs in a directory of its own so no YAML file of the caller's applies), an
HTTP endpoint with an admin token (the checker stalls pollers through it) and a log file. An
instance can be killed with SIGKILL and started again on the same ports.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from hms_cache_proxy.bench.cases import connect
from hms_cache_proxy.bench.targets import free_port

ROOT = Path(__file__).resolve().parents[2]


class Instance:
    """One ``serve`` process; ``name`` is how reports call it. ``database_url`` empty: an
    instance in upstream mode (``upstream_uri`` in ``settings``)."""

    def __init__(
        self, name: str, database_url: str, workdir: Path, settings: dict[str, Any]
    ) -> None:
        self.name = name
        self.database_url = database_url
        self.workdir = workdir
        self.port = free_port()
        self.http_port = free_port()
        self.token = secrets.token_hex(16)
        self.settings = settings
        self.log_path = workdir / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, timeout: float = 90.0) -> None:
        self.launch()
        self._wait_answering(timeout)

    def launch(self) -> None:
        """Start the process without waiting for it to answer (``wait_answering`` does)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("HMS_CACHE_PROXY_")}
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        values = {
            **({"database_url": self.database_url} if self.database_url else {}),
            "host": "127.0.0.1",
            "port": self.port,
            "metrics_host": "127.0.0.1",
            "metrics_port": self.http_port,
            "admin_token": self.token,
            "warehouse_dir": str(self.workdir / "warehouse"),
            **self.settings,
        }
        for key, value in values.items():
            text = json.dumps(value) if isinstance(value, bool | list) else str(value)
            env["HMS_CACHE_PROXY_" + key.upper()] = text
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "hms_cache_proxy", "serve"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.workdir,
            )
        self.starts += 1

    def wait_answering(self, timeout: float = 90.0) -> None:
        self._wait_answering(timeout)

    def _wait_answering(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: {self.tail()}")
            try:
                client = connect("127.0.0.1", self.port, timeout_s=10)
                try:
                    client.get_all_databases()
                    return
                finally:
                    client.close()
            except Exception as exc:  # noqa: BLE001 - not up yet
                last = f"{type(exc).__name__}: {exc}"
                time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not answer within {timeout:.0f}s ({last})")

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()

    def pause_poller(self, seconds: float) -> dict[str, Any]:
        """POST /admin/poller/pause?seconds=N: this instance's poller stalls that long."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}/admin/poller/pause?seconds={seconds:g}",
            data=b"",
            method="POST",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=45) as answer:
            return dict(json.loads(answer.read()))

    def admin(self, action: str, db: str, table: str | None = None) -> int:
        """POST /admin/refresh or /admin/flush of a database or table; the HTTP status."""
        query = urllib.parse.urlencode({"db": db, **({"table": table} if table else {})})
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}/admin/{action}?{query}",
            data=b"",
            method="POST",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=45) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as exc:  # 404: a table gone meanwhile
            return int(exc.code)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])
