"""The Kubernetes examples of docs/deployment.md: YAML that parses, a pod whose sidecar runs
in upstream mode with flags and settings the real parser and settings accept."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest
import yaml

from hms_cache_proxy.config import ENV_PREFIX, Settings, load_settings
from tests.support.container import ROOT

DOC = ROOT / "docs" / "deployment.md"
SIDECAR_SETTINGS = ROOT / "docs" / "examples" / "sidecar.yaml"


def _yaml_blocks() -> list[Any]:
    blocks = re.findall(r"^```yaml\n(.*?)^```", DOC.read_text(), re.S | re.M)
    assert blocks, "no ```yaml block in docs/deployment.md"
    return [yaml.safe_load(block) for block in blocks]  # every one parses


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod["spec"]
    return list(spec.get("initContainers", [])) + list(spec["containers"])


def _upstream_pod() -> dict[str, Any]:
    pods = [
        doc
        for doc in _yaml_blocks()
        if isinstance(doc, dict)
        and doc.get("kind") == "Pod"
        and any("--upstream" in c.get("args", []) for c in _containers(doc))
    ]
    assert len(pods) == 1, "one pod example with a sidecar in upstream mode"
    return pods[0]


def test_the_tiers_pod_parses_and_its_sidecar_names_the_upstream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hms_cache_proxy.cli import build_parser

    pod = _upstream_pod()
    sidecar = next(c for c in _containers(pod) if "--upstream" in c.get("args", []))
    args = build_parser().parse_args(sidecar["args"])
    assert args.command == "serve"
    assert args.upstream == "thrift://hms-central.metastore.svc:9083"

    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    env = {e["name"]: e["value"] for e in sidecar["env"] if "value" in e}
    named = {e["name"] for e in sidecar["env"]}
    assert all(n.startswith(ENV_PREFIX) for n in named)
    config = env.pop(ENV_PREFIX + "CONFIG")
    mounts = {m["mountPath"] for m in sidecar["volumeMounts"]}
    assert config in mounts  # the settings file is the one mounted
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(SIDECAR_SETTINGS, upstream_uri=args.upstream)
    assert settings.upstream_uri == args.upstream
    assert {n[len(ENV_PREFIX) :].lower() for n in named} - {"config"} <= set(Settings.model_fields)

    driver = next(c for c in pod["spec"]["containers"] if c["name"] == "driver")
    uris = [a.split("=", 1)[1] for a in driver["args"] if "hive.metastore.uris=" in a]
    assert uris == [f"thrift://localhost:{settings.port}"]  # the driver talks to its sidecar
    assert settings.host == "127.0.0.1"  # Thrift private to the pod
