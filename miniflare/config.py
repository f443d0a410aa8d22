"""Reading the worker's wrangler.toml and .dev.vars, as wrangler does."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, Field


class DurableObjectBinding(BaseModel):
    """`[[durable_objects.bindings]]`."""

    name: str
    class_name: str


class WorkerConfig(BaseModel):
    """The parts of wrangler.toml the local runtime honours."""

    project_dir: Path
    main: str
    vars: dict[str, str] = Field(default_factory=dict)
    secrets: dict[str, str] = Field(default_factory=dict)
    durable_objects: list[DurableObjectBinding] = Field(default_factory=list)
    assets_dir: Path | None = None
    # `[assets] binding`: the name under which the worker reads the files itself.
    assets_binding: str | None = None
    # `[assets] run_worker_first`: paths (`*` matches anything) the worker answers even
    # where a file of that name exists.
    run_worker_first: list[str] = Field(default_factory=list)

    @property
    def main_path(self) -> Path:
        return self.project_dir / self.main


def parse_dev_vars(text: str) -> dict[str, str]:
    """KEY=VALUE lines (dotenv style); quotes stripped, comments and blanks skipped."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def load_config(project_dir: Path, dev_vars: Path | None = None) -> WorkerConfig:
    """Read wrangler.toml (and .dev.vars beside it, if present)."""
    data = tomllib.loads((project_dir / "wrangler.toml").read_text())
    bindings = [
        DurableObjectBinding(name=b["name"], class_name=b["class_name"])
        for b in data.get("durable_objects", {}).get("bindings", [])
    ]
    assets_section = data.get("assets", {})
    assets = assets_section.get("directory")
    first = assets_section.get("run_worker_first", [])
    secrets_file = dev_vars or project_dir / ".dev.vars"
    secrets = parse_dev_vars(secrets_file.read_text()) if secrets_file.exists() else {}
    return WorkerConfig(
        project_dir=project_dir,
        main=data["main"],
        vars={k: str(v) for k, v in data.get("vars", {}).items()},
        secrets=secrets,
        durable_objects=bindings,
        assets_dir=(project_dir / assets).resolve() if assets else None,
        assets_binding=assets_section.get("binding"),
        run_worker_first=[first] if isinstance(first, str) else list(first),
    )
