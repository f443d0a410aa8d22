"""wrangler.toml and .dev.vars.example say what the deployed worker needs."""

from __future__ import annotations

import tomllib
from pathlib import Path

from miniflare.config import parse_dev_vars

ROOT = Path(__file__).resolve().parents[2]
CONFIG = tomllib.loads((ROOT / "wrangler.toml").read_text())
SECRETS = {"MODEL_API_KEY", "MODEL_BASE_URL", "TYPESENSE_API_KEY", "ANALYTICS_API_KEY"}
SECRETS |= {"AUTH_SIGNING_KEY", "AUTH_PREVIOUS_SIGNING_KEY", "AUTH_JWT_SECRET"}
SECRETS |= {"DATA_SERVER_API_KEY"}


def test_python_worker_with_its_entry_and_a_recent_compatibility_date() -> None:
    assert CONFIG["main"] == "src/entry.py" and (ROOT / CONFIG["main"]).is_file()
    assert "python_workers" in CONFIG["compatibility_flags"]
    # From 2026-09-08 on, Python Workers run Python 3.14 (a Pyodide 314 release), so
    # pywrangler resolves packages against the Pyodide 314.0.7 index, the list
    # scripts/check_pyodide_compat.py checks against.
    assert CONFIG["compatibility_date"] >= "2026-09-08"
    assert CONFIG["build"]["command"] == "python3 scripts/build_worker.py"


def test_the_chat_object_has_sqlite_storage_from_the_first_migration() -> None:
    chat = CONFIG["durable_objects"]["bindings"][0]
    assert chat == {"name": "CHAT", "class_name": "ChatDurableObject"}
    first = CONFIG["migrations"][0]
    assert first["new_sqlite_classes"] == ["ChatDurableObject"]
    tags = [m["tag"] for m in CONFIG["migrations"]]
    assert len(tags) == len(set(tags))


def test_the_shared_limiter_is_an_object_class_of_its_own_with_sqlite_storage() -> None:
    bindings = CONFIG["durable_objects"]["bindings"]
    assert {"name": "LIMITER", "class_name": "LimiterDurableObject"} in bindings
    created = [c for m in CONFIG["migrations"] for c in m.get("new_sqlite_classes", [])]
    assert created.count("LimiterDurableObject") == 1
    # Every bound class is exported by the entry module.
    entry = (ROOT / CONFIG["main"]).read_text()
    for binding in bindings:
        assert binding["class_name"] in entry


def test_assets_ai_observability_and_vars() -> None:
    assert (ROOT / CONFIG["assets"]["directory"]).joinpath("index.html").is_file()
    assert CONFIG["ai"] == {"binding": "AI"}
    assert CONFIG["observability"]["enabled"] is True
    variables = CONFIG["vars"]
    for name in ("PLATFORM_API_URL", "TYPESENSE_URL", "MCP_DEFAULT_SERVER_URL"):
        assert variables[name].startswith("https://")
    assert "WORKERS_AI_MODEL" in variables and "AI_GATEWAY_ID" in variables
    assert not SECRETS & set(variables), "secrets belong in `wrangler secret put`, not [vars]"


def test_the_worker_answers_the_embed_before_the_static_assets() -> None:
    from albert.embed import EMBED_PATH

    # /embed's headers name the tenant's host per request: a static _headers rule
    # cannot, so the worker must see the request (albert.embed).
    assert CONFIG["assets"]["binding"] == "ASSETS"
    assert CONFIG["assets"]["run_worker_first"] == ["/api/*", "/healthz", EMBED_PATH]
    assert f'head.path == "{EMBED_PATH}"' in (ROOT / CONFIG["main"]).read_text()


def test_dev_vars_example_lists_every_secret_and_nothing_else() -> None:
    example = parse_dev_vars((ROOT / ".dev.vars.example").read_text())
    assert set(example) == SECRETS
    assert all(value == "" for value in example.values())
    for name in SECRETS:
        assert name in (ROOT / "wrangler.toml").read_text()


def test_every_secret_is_a_setting_the_worker_reads() -> None:
    from albert.settings import Settings

    aliases = {field.alias for field in Settings.model_fields.values()}
    assert aliases >= SECRETS
