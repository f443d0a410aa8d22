"""The data server's container files: compose.yaml against the settings the code reads, and
a Dockerfile that installs from the package registries only. (Building the image needs a
base image pulled from a container registry, so it is not part of the suite.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from data_server.settings import DataServerSettings

ROOT = Path(__file__).resolve().parents[1]
_DEFAULTED = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")


def _compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def _resolved(value: object) -> str:
    """A compose value with `${NAME:-default}` replaced by its default (unset environment)."""
    return _DEFAULTED.sub(lambda m: m.group(2) or "", str(value))


def _environment(service: dict[str, Any]) -> dict[str, str]:
    return {name: _resolved(value) for name, value in service["environment"].items()}


def test_compose_runs_the_data_server_with_typesense_and_postgres() -> None:
    services = _compose()["services"]
    assert set(services) == {"data-server", "typesense", "postgres"}
    server = services["data-server"]
    env = _environment(server)
    aliases = {field.alias for field in DataServerSettings.model_fields.values()}
    assert set(env) <= aliases, set(env) - aliases  # every variable is one the code reads
    settings = DataServerSettings.from_env(env)
    assert settings.uses_postgres() and settings.host == "0.0.0.0"

    # The write store is the compose PostgreSQL, with its user, password and database.
    pg_url = urlsplit(settings.database_url.get_secret_value())
    pg_env = _environment(services["postgres"])
    assert (pg_url.hostname, pg_url.port) == ("postgres", 5432)
    assert pg_url.username == pg_env["POSTGRES_USER"]
    assert pg_url.password == pg_env["POSTGRES_PASSWORD"]
    assert pg_url.path == "/" + pg_env["POSTGRES_DB"]

    # The index is the compose Typesense, started with the key the server sends.
    ts_url = urlsplit(settings.typesense_url)
    assert (ts_url.hostname, ts_url.port) == ("typesense", 8108)
    command = [_resolved(part) for part in services["typesense"]["command"]]
    assert command[command.index("--api-key") + 1] == settings.typesense_api_key.get_secret_value()

    # Published on loopback only, on the port the server listens on.
    assert server["ports"] == [f"127.0.0.1:{settings.port}:{settings.port}"]
    # The pipeline schedules itself, and the server starts once both stores are healthy.
    assert settings.pipeline_cron and settings.pipeline_run_at_start
    assert {name: dep["condition"] for name, dep in server["depends_on"].items()} == {
        "postgres": "service_healthy",
        "typesense": "service_healthy",
    }
    for name, service in services.items():
        assert service["healthcheck"]["test"][0] == "CMD", name
    probe = " ".join(server["healthcheck"]["test"])
    assert f"127.0.0.1:{settings.port}/readyz" in probe
    assert "pg_isready" in services["postgres"]["healthcheck"]["test"]
    assert "/health" in " ".join(services["typesense"]["healthcheck"]["test"])


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", dockerfile)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def test_the_dockerfile_installs_from_the_package_registries_only() -> None:
    steps = _instructions((ROOT / "Dockerfile").read_text())
    assert re.fullmatch(r"python:3\.1[1-9]-slim", dict(steps)["FROM"])
    assert "ADD" not in {keyword for keyword, _ in steps}  # no remote URLs or archives
    for keyword, rest in steps:
        if keyword != "RUN":
            continue
        for command in re.split(r"&&|;", rest):
            words = shlex.split(command)
            if not words:
                continue
            assert words[0] in {"pip", "uv", "useradd", "mkdir", "chown"}, command
            if words[0] == "pip":
                assert words[:2] == ["pip", "install"] and re.fullmatch(r"uv==[\d.]+", words[-1])
            if words[0] == "uv":
                assert words[:2] == ["uv", "sync"] and "--frozen" in words, command
    users = [rest for keyword, rest in steps if keyword == "USER"]
    assert users and users[-1] not in {"root", "0"}
    health = next(rest for keyword, rest in steps if keyword == "HEALTHCHECK")
    port = next(rest for keyword, rest in steps if keyword == "EXPOSE")
    assert f"127.0.0.1:{port}/readyz" in health
    # What the image copies must cover every package the project's wheel names.
    copied = {rest.split()[0] for keyword, rest in steps if keyword == "COPY"}
    pyproject = (ROOT / "pyproject.toml").read_text()
    packages = re.search(r"packages = \[([^\]]*)\]", pyproject)
    assert packages is not None
    for package in re.findall(r'"([^"]+)"', packages.group(1)):
        assert package.split("/")[0] in copied, package
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".git" in ignored and ".state" in ignored and "node_modules" in ignored
