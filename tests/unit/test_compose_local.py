"""tests/container/compose.local.yml, the override scripts/container-test.sh brings
docker-compose.yml up with, must stand in for the registry images without changing anything
else: it only swaps images, each one the script builds, and the local images read the same
variables and paths as the official ones compose configures."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.support.container import ROOT, Dockerfile, environment, load_compose, volume_mounts

CONTAINER_TESTS = ROOT / "tests" / "container"
OVERRIDE = CONTAINER_TESTS / "compose.local.yml"
SCRIPT = ROOT / "scripts" / "container-test.sh"


def _override() -> dict:
    return yaml.safe_load(OVERRIDE.read_text())


def _built_by_script() -> dict[str, Path]:
    """Image name -> build context of each `build IMAGE LOG ... CONTEXT` in the script."""
    text = re.sub(r"\\\n\s*", " ", SCRIPT.read_text())
    found = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) > 3 and words[0] == "build" and words[1].startswith("localhost/"):
            found[words[1]] = ROOT / words[-1]
    return found


def test_the_override_only_swaps_images_of_existing_services() -> None:
    services = load_compose()["services"]
    override = _override()["services"]
    assert set(override) == {"postgres", "prometheus"}
    for name, service in override.items():
        assert name in services
        assert set(service) == {"image"}, f"{name}: the override changes more than the image"
        assert service["image"] != services[name]["image"]


def test_every_image_the_override_names_is_built_by_the_script() -> None:
    built = _built_by_script()
    for name, service in _override()["services"].items():
        context = built.get(service["image"])
        assert context is not None, f"{name}: {service['image']} is not built by {SCRIPT.name}"
        assert (context / "Containerfile").is_file()
    # and the proxies' and pipeline's images under the names docker-compose.yml gives them
    for service in load_compose()["services"].values():
        if "build" in service:
            assert f"localhost/{service['image']}" in built


def test_the_local_postgres_reads_what_compose_sets() -> None:
    postgres = load_compose()["services"]["postgres"]
    entrypoint = (CONTAINER_TESTS / "postgres" / "entrypoint.sh").read_text()
    for variable in environment(postgres):
        assert f"${{{variable}" in entrypoint, f"the local postgres ignores {variable}"
    image = Dockerfile.read(CONTAINER_TESTS / "postgres" / "Containerfile")
    (data,) = volume_mounts(postgres)  # the official image's data directory
    assert image.volumes() == {data}
    assert f"PGDATA={data}" in image.one("ENV")
    assert "pg_isready" in str(postgres["healthcheck"]["test"])
    assert "/usr/lib/postgresql/15/bin" in image.one("ENV")  # pg_isready on PATH


def test_the_local_prometheus_reads_the_mounted_config() -> None:
    prometheus = load_compose()["services"]["prometheus"]
    image = Dockerfile.read(CONTAINER_TESTS / "prometheus" / "Containerfile")
    config = next(t for t, s in volume_mounts(prometheus).items() if "prometheus.yml" in s)
    assert f"--config.file={config}" in image.exec_form("CMD")
    assert {int(spec.split(":")[-1]) for spec in prometheus["ports"]} == image.exposed_ports()
