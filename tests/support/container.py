"""What the container files say, read the way Docker and Compose read them, for tests that
cannot run a Docker engine: docker-compose.yml, docker/Dockerfile's instructions, and the
Compose Specification's JSON schema (from a PyPI package, never written by hand)."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
PIPELINE_DOCKERFILE = ROOT / "docker" / "Dockerfile.pipeline"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"

# docker-compose 1.29.2 (the last Python release) ships the Compose Specification's schema as
# compose/config/compose_spec.json. Pinned by hash: the test trusts this file only.
SCHEMA_PACKAGE = "docker-compose==1.29.2"
SCHEMA_WHEEL = "docker_compose-1.29.2-py2.py3-none-any.whl"
SCHEMA_WHEEL_SHA256 = "8d5589373b35c8d3b1c8c1182c6e4a4ff14bffa3dd0b605fcd08f73c94cef809"
SCHEMA_MEMBER = "compose/config/compose_spec.json"


class SchemaUnavailable(RuntimeError):
    """The schema could not be fetched from the package registry (or failed its hash)."""


def compose_spec_schema(cache_dir: Path) -> dict[str, Any]:
    """The Compose Specification JSON schema, from the docker-compose wheel in ``cache_dir``
    (downloaded there with pip, from the package registry or pip's cache, when missing)."""
    wheel = cache_dir / SCHEMA_WHEEL
    if not wheel.is_file():
        cmd = [sys.executable, "-m", "pip", "download", SCHEMA_PACKAGE, "--no-deps"]
        cmd += ["--only-binary=:all:", "--disable-pip-version-check", "-d", str(cache_dir)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if done.returncode != 0 or not wheel.is_file():
            raise SchemaUnavailable(
                f"`{' '.join(cmd)}` failed ({done.returncode}): {done.stderr[-2000:]}"
            )
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != SCHEMA_WHEEL_SHA256:
        wheel.unlink()
        raise SchemaUnavailable(f"{SCHEMA_WHEEL} has sha256 {digest}, not the pinned one")
    with zipfile.ZipFile(wheel) as zf:
        return json.loads(zf.read(SCHEMA_MEMBER))


def load_compose() -> dict[str, Any]:
    """docker-compose.yml as Compose reads it (YAML merge keys resolved)."""
    return yaml.safe_load(COMPOSE_FILE.read_text())


@dataclass
class Dockerfile:
    """The instructions of one stage of a Dockerfile (by default the last: the image
    `docker build` produces)."""

    instructions: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def read(cls, path: Path, stage: int = -1) -> Dockerfile:
        text = re.sub(r"\\\n", " ", path.read_text())  # line continuations
        stages: list[list[tuple[str, str]]] = [[]]
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            keyword, _, rest = line.partition(" ")
            keyword = keyword.upper()
            if keyword == "FROM":
                stages.append([])
            stages[-1].append((keyword, rest.strip()))
        return cls(stages[1:][stage])  # stages[0]: ARGs before the first FROM

    def all(self, keyword: str) -> list[str]:
        return [rest for kw, rest in self.instructions if kw == keyword]

    def one(self, keyword: str) -> str:
        found = self.all(keyword)
        assert len(found) == 1, f"expected one {keyword}, found {found}"
        return found[0]

    def exposed_ports(self) -> set[int]:
        return {int(p.split("/")[0]) for rest in self.all("EXPOSE") for p in rest.split()}

    def exec_form(self, keyword: str) -> list[str]:
        """The JSON array of ENTRYPOINT, CMD or HEALTHCHECK (after its --options and CMD)."""
        rest = self.one(keyword)
        start = rest.index("[")
        return json.loads(rest[start:])

    def copy_pairs(self) -> list[tuple[str, str]]:
        """(source, destination) of each file COPYed from the build context (not --from)."""
        out = []
        for rest in self.all("COPY"):
            parts = shlex.split(rest)
            if any(p.startswith("--from") for p in parts):
                continue
            *sources, dest = [p for p in parts if not p.startswith("--")]
            out += [(source, dest) for source in sources]
        return out

    def copies(self) -> dict[str, str]:
        """Destination -> source of the copies to a full path (a file copied to a file)."""
        return {dest: source for source, dest in self.copy_pairs() if not dest.endswith("/")}

    def volumes(self) -> set[str]:
        return {v for rest in self.all("VOLUME") for v in json.loads(rest)}

    def user(self) -> str:
        return self.one("USER")


def entrypoint_default(variable: str) -> str:
    """The default the entrypoint script gives ``${variable:-default}``."""
    found = re.search(r"\$\{" + re.escape(variable) + r":-([^}]*)\}", ENTRYPOINT.read_text())
    assert found, f"{ENTRYPOINT} does not read {variable}"
    return found.group(1)


def environment(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment as a dict (Compose allows a list of NAME=VALUE too)."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def port_mappings(service: dict[str, Any]) -> list[tuple[int, int]]:
    """(host port, container port) of a service's short-syntax "HOST:CONTAINER" ports."""
    out = []
    for spec in service.get("ports") or []:
        host, container = str(spec).rsplit(":", 1)
        out.append((int(host.rsplit(":", 1)[-1]), int(container.split("/")[0])))
    return out


def volume_mounts(service: dict[str, Any]) -> dict[str, str]:
    """Container path -> source (named volume or ./relative path) of short-syntax volumes."""
    out = {}
    for spec in service.get("volumes") or []:
        source, target, *_ = str(spec).split(":")
        out[target] = source
    return out
