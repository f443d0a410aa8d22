"""Can every runtime dependency of the worker be installed under Pyodide?

pywrangler installs the worker's dependencies as wheels only, for Pyodide's
platform: a package is fine when it ships a pure-Python wheel (`py3-none-any`,
`none-any` tags) or when Pyodide itself ships a build of it. This script walks
the dependency closure of the worker's runtime requirements in uv.lock, with
markers evaluated for the Pyodide target (Emscripten, wasm32, Python 3.14), and
classifies every package:

- pure     a `*-none-any` wheel of the locked version (uv.lock; else the installed
           dist-info WHEEL tags);
- pyodide  a compiled package that Pyodide ships (scripts/pyodide-314.0.6-packages.json,
           from pyodide-lock.json of the npm package pyodide@314.0.6, the Pyodide
           that Python Workers run for Python 3.14); pywrangler resolves the version
           Pyodide built, which may differ from the lock;
- missing  neither: it cannot be installed in the worker.

Roots: [project.dependencies] (what pywrangler vendors) and the `mcp` extra (the
worker's MCP client). A package reached only through the extra is flagged, since
pywrangler vendors [project.dependencies] alone.

Exit status 1 when any package is missing. Standard library plus `packaging`.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent
PYODIDE_LIST = Path(__file__).resolve().parent / "pyodide-314.0.6-packages.json"
WORKER_EXTRAS = ("mcp",)

# The environment markers of the Python Workers runtime (Pyodide 314.0.6, Python 3.14.2).
PYODIDE_MARKERS: dict[str, str] = {
    "implementation_name": "cpython",
    "implementation_version": "3.14.2",
    "os_name": "posix",
    "platform_machine": "wasm32",
    "platform_python_implementation": "CPython",
    "platform_release": "5.0.3",
    "platform_system": "Emscripten",
    "platform_version": "#1",
    "python_full_version": "3.14.2",
    "python_version": "3.14",
    "sys_platform": "emscripten",
}

Kind = Literal["pure", "pyodide", "missing"]


def normalize(name: str) -> str:
    """PEP 503 name normalisation."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Verdict:
    """How one distribution gets into the worker."""

    name: str
    version: str
    kind: Kind
    detail: str
    via_extra_only: bool = False
    notes: list[str] = field(default_factory=list)


def _marker_ok(marker: str | None, extra: str = "") -> bool:
    if not marker:
        return True
    return Marker(marker).evaluate({**PYODIDE_MARKERS, "extra": extra})


def _wheel_tags(filename: str) -> tuple[str, str, str]:
    stem = filename.removesuffix(".whl")
    parts = stem.split("-")
    return parts[-3], parts[-2], parts[-1]


def is_pure_wheel(filename: str) -> bool:
    """True for a wheel whose ABI tag is `none` and platform tag is `any`."""
    python, abi, plat = _wheel_tags(filename)
    return abi == "none" and plat == "any" and any(t.startswith("py3") for t in python.split("."))


def _installed_pure(name: str) -> bool | None:
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    wheel = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    if not tags:
        return None
    return all(tag.endswith("-none-any") for tag in tags)


def load_lock(path: Path = ROOT / "uv.lock") -> dict[str, dict[str, Any]]:
    """uv.lock packages by normalised name."""
    data = tomllib.loads(path.read_text())
    return {normalize(p["name"]): p for p in data["package"]}


def load_pyodide(path: Path = PYODIDE_LIST) -> dict[str, dict[str, Any]]:
    """The packages Pyodide ships, by normalised name."""
    data = json.loads(path.read_text())
    return {normalize(k): v for k, v in data["packages"].items()}


def runtime_roots(pyproject: Path = ROOT / "pyproject.toml") -> tuple[list[str], list[str]]:
    """(names in [project.dependencies], names only in the worker's extras)."""
    project = tomllib.loads(pyproject.read_text())["project"]
    base = [normalize(Requirement(r).name) for r in project.get("dependencies", [])]
    extra: list[str] = []
    for name in WORKER_EXTRAS:
        for spec in project.get("optional-dependencies", {}).get(name, []):
            req_name = normalize(Requirement(spec).name)
            if req_name not in base:
                extra.append(req_name)
    return base, extra


def closure(lock: dict[str, dict[str, Any]], roots: list[str]) -> dict[str, set[str]]:
    """Every package reachable from `roots` on Pyodide, with the extras requested of it."""
    seen: dict[str, set[str]] = {}
    stack: list[tuple[str, tuple[str, ...]]] = [(r, ()) for r in roots]
    while stack:
        name, extras = stack.pop()
        requested = seen.setdefault(name, set())
        new_extras = set(extras) - requested
        if name in seen and requested and not new_extras and extras:
            continue
        requested.update(extras)
        package = lock.get(name)
        if package is None:
            continue
        deps = list(package.get("dependencies", []))
        for extra in extras:
            deps += package.get("optional-dependencies", {}).get(extra, [])
        for dep in deps:
            if not _marker_ok(dep.get("marker")):
                continue
            dep_name = normalize(dep["name"])
            dep_extras = tuple(dep.get("extra", []))
            if dep_name not in seen or set(dep_extras) - seen[dep_name]:
                stack.append((dep_name, dep_extras))
    return seen


def judge(
    name: str, lock: dict[str, dict[str, Any]], pyodide: dict[str, dict[str, Any]]
) -> Verdict:
    """Classify one locked distribution."""
    package = lock.get(name, {})
    version = str(package.get("version", "?"))
    wheels = [w["url"].rsplit("/", 1)[1] for w in package.get("wheels", [])]
    pure = [w for w in wheels if is_pure_wheel(w)]
    if pure:
        return Verdict(name, version, "pure", pure[0])
    if not wheels:
        installed = _installed_pure(name)
        if installed:
            return Verdict(name, version, "pure", "installed dist-info WHEEL tags are none-any")
    shipped = pyodide.get(name)
    if shipped is not None:
        verdict = Verdict(name, version, "pyodide", shipped["file_name"])
        if shipped["version"] != version:
            verdict.notes.append(f"Pyodide builds {shipped['version']}, the lock has {version}")
        return verdict
    detail = "no pure-Python wheel and no Pyodide build"
    if not wheels:
        detail = "source distribution only (pywrangler installs wheels only)"
    return Verdict(name, version, "missing", detail)


def _constraint_notes(lock: dict[str, dict[str, Any]], verdicts: list[Verdict]) -> list[str]:
    # Only compiled packages constrain the resolution: pywrangler must take Pyodide's
    # build of them, then a release of each dependent that accepts that build (pydantic
    # pins pydantic-core exactly). Pure packages come from PyPI at the locked version.
    native = {v.name: v for v in verdicts if v.kind == "pyodide" and v.notes}
    names = {v.name for v in verdicts}
    notes: list[str] = []
    for parent in sorted(names):
        for dep in lock.get(parent, {}).get("dependencies", []):
            dep_name = normalize(dep["name"])
            if dep_name in native:
                notes.append(
                    f"{parent} {lock[parent]['version']} is locked with {dep_name} "
                    f"{native[dep_name].version}; Pyodide builds "
                    f"{native[dep_name].detail.split('-')[1]}, so the worker gets the "
                    f"{parent} release that accepts that build"
                )
    return notes


def check(root: Path = ROOT) -> tuple[list[Verdict], list[str]]:
    """Verdicts for the whole runtime closure, and notes worth reading."""
    lock = load_lock(root / "uv.lock")
    pyodide = load_pyodide()
    base, extra = runtime_roots(root / "pyproject.toml")
    vendored = closure(lock, base)
    everything = closure(lock, base + extra)
    verdicts = []
    for name in sorted(everything):
        verdict = judge(name, lock, pyodide)
        verdict.via_extra_only = name not in vendored
        verdicts.append(verdict)
    notes = _constraint_notes(lock, verdicts)
    for spec_text in tomllib.loads((root / "pyproject.toml").read_text())["project"].get(
        "dependencies", []
    ):
        req = Requirement(spec_text)
        shipped = pyodide.get(normalize(req.name))
        if shipped and not SpecifierSet(str(req.specifier)).contains(shipped["version"]):
            notes.append(f"{req} excludes Pyodide's build {shipped['version']}")
    if extra:
        notes.append(
            "only in the extras "
            + ", ".join(WORKER_EXTRAS)
            + f": {', '.join(sorted(n for n in everything if n not in vendored))}; "
            "pywrangler vendors [project.dependencies] alone, so these are not deployed "
            "unless they move there"
        )
    return verdicts, notes


def main() -> int:
    """Print the table and the notes; exit 1 when anything cannot be installed."""
    verdicts, notes = check()
    width = max(len(v.name) for v in verdicts)
    for v in verdicts:
        extra = "  (extra only)" if v.via_extra_only else ""
        print(f"{v.name:<{width}}  {v.version:<12} {v.kind:<8} {v.detail}{extra}")
        for note in v.notes:
            print(f"{'':<{width}}  note: {note}")
    for note in notes:
        print(f"note: {note}")
    missing = [v.name for v in verdicts if v.kind == "missing"]
    if missing:
        print(f"cannot be installed under Pyodide: {', '.join(missing)}")
        return 1
    print(f"{len(verdicts)} packages: all pure Python or shipped by Pyodide 314.0.6")
    return 0


if __name__ == "__main__":
    sys.exit(main())
