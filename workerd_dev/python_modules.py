"""python_modules/ for local workerd runs: the closure `pywrangler sync` vendors, from PyPI.

`pywrangler sync` resolves the worker's [project.dependencies] (and the Workers SDK)
for a Pyodide interpreter against PyPI and the Pyodide package index, both out of reach
offline. The same closure is read from uv.lock instead (workerd_dev.pyodide_compat
walks it with Pyodide's markers), and each package is taken from PyPI at its locked
version: its pure-Python wheel, or its wheel built for Pyodide's ABI
(`pyemscripten_2026_0_wasm32`, which pydantic-core publishes). Every download is
checked against the lock's sha256 and kept in the cache.

Three packages are built by the Pyodide index alone (cffi, cryptography, rpds-py), so
none of them can be had offline. In their place, written only into the staged copy the
local runs use (workerd_dev.project), never into the project's python_modules/, so no
upload carries one:

- rpds-py: a real package, PyPI's pure-Python `pyrsistent-as-rpds-py` on `pyrsistent`
  (locked in the `workerd-offline` group), behind a two-line `rpds` module. jsonschema
  runs on it, so the `mcp` SDK validates tool output schemas as it does anywhere;
- cryptography: a client-only stand-in (workerd_dev/standins/cryptography): the four
  names the `mcp` SDK's client imports on its way in (for a server's sealed request
  state, which a client never uses), each of which, used, writes STANDIN_CALLED to the
  log and raises. Nothing else of `cryptography` is there, so PyJWT offers HS256 only;
- cffi: a module that fails its import, naming the package and why (only cryptography's
  real build needs it).
"""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx

from workerd_dev import PROJECT_DIR, cache_dir
from workerd_dev.pyodide_compat import (
    Verdict,
    check,
    closure,
    judge,
    load_lock,
    load_pyodide,
    normalize,
)
from workerd_dev.substitutes import CLIENT_STANDINS, STANDIN_MARKER, STANDINS_DIR, SUBSTITUTES

DOWNLOAD_TIMEOUT = httpx.Timeout(60.0, connect=15.0)


class VendorError(RuntimeError):
    """python_modules/ cannot be made: a package is missing or a download is wrong."""


@dataclass(frozen=True)
class Vendored:
    """What went into python_modules/: wheels unpacked, and packages stood in for."""

    wheels: tuple[str, ...]
    standins: tuple[str, ...]
    substitutes: tuple[str, ...] = ()


def _locked_wheel(lock: dict[str, dict[str, Any]], verdict: Verdict) -> dict[str, Any]:
    for wheel in lock[verdict.name].get("wheels", []):
        if wheel["url"].rsplit("/", 1)[1] == verdict.detail:
            return dict(wheel)
    raise VendorError(f"{verdict.name}: uv.lock names no wheel {verdict.detail}")


def fetch_wheel(wheel: dict[str, Any], cache: Path, client: httpx.Client) -> Path:
    """The wheel at `wheel["url"]`, from the cache or PyPI, checked against its lock hash."""
    name = str(wheel["url"]).rsplit("/", 1)[1]
    algorithm, _, expected = str(wheel["hash"]).partition(":")
    target = cache / "wheels" / name
    if target.exists() and hashlib.new(algorithm, target.read_bytes()).hexdigest() == expected:
        return target
    response = client.get(str(wheel["url"]))
    response.raise_for_status()
    if hashlib.new(algorithm, response.content).hexdigest() != expected:
        raise VendorError(f"{name}: the download does not match uv.lock's {algorithm}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_bytes(response.content)
    partial.replace(target)
    return target


def unpack_wheel(wheel: Path, into: Path) -> None:
    """Install a wheel's files into a flat site folder, as `pip install --target` does."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            parts = Path(member.filename).parts
            if member.is_dir() or ".." in parts or Path(member.filename).is_absolute():
                continue
            # `<dist>.data/purelib|platlib/...` installs at the top; other schemes
            # (scripts, headers, data) have no place in a Worker.
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue
                parts = parts[2:]
            target = into.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, target.open("wb") as out:
                shutil.copyfileobj(source, out)


def top_level_modules(distribution: str) -> list[str]:
    """The importable top-level names of an installed distribution (this venv's build)."""
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return []
    names = set()
    listed = dist.read_text("top_level.txt")
    if listed:
        names.update(line.strip() for line in listed.splitlines() if line.strip())
    for file in dist.files or []:
        first = file.parts[0]
        if first.endswith((".dist-info", ".data")) or first == "__pycache__":
            continue
        names.add(first.split(".", 1)[0] if first.endswith((".py", ".so", ".pyd")) else first)
    return sorted(n for n in names if n.isidentifier())


def standin_source(module: str, distribution: str) -> str:
    """A module that fails its import, saying why (it is never uploaded)."""
    reason = (
        f"{distribution} has no Pyodide build reachable offline (only the Pyodide package "
        f"index builds it), so local workerd runs stand in for `{module}` with this "
        "module; a deploy's `pywrangler sync` vendors Pyodide's real build"
    )
    return (
        f"# {STANDIN_MARKER}: written by workerd_dev.python_modules for local workerd runs.\n"
        f"raise ModuleNotFoundError({reason!r}, name={module!r})\n"
    )


def write_standin(distribution: str, into: Path) -> list[str]:
    """Stand-ins for every top-level module of `distribution`; their names."""
    modules = top_level_modules(distribution) or [distribution.replace("-", "_")]
    for module in modules:
        package = into / module
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(standin_source(module, distribution))
    return modules


def vendor(into: Path, root: Path = PROJECT_DIR, cache: Path | None = None) -> Vendored:
    """Fill the empty folder `into` with the worker's dependency closure for Pyodide."""
    verdicts, _notes = check(root)
    deployed = [v for v in verdicts if not v.via_extra_only]
    return _install(deployed, into, load_lock(root / "uv.lock"), cache or cache_dir())


def vendor_locked(
    roots: list[str], into: Path, root: Path = PROJECT_DIR, cache: Path | None = None
) -> Vendored:
    """Fill the empty folder `into` with the Pyodide closure of other locked packages
    (e.g. pytest, for code run inside workerd by the tests)."""
    lock = load_lock(root / "uv.lock")
    pyodide = load_pyodide()
    verdicts = [judge(name, lock, pyodide) for name in sorted(closure(lock, roots))]
    return _install(verdicts, into, lock, cache or cache_dir())


def _install(
    verdicts: list[Verdict], into: Path, lock: dict[str, dict[str, Any]], cache: Path
) -> Vendored:
    missing = [f"{v.name} ({v.detail})" for v in verdicts if v.kind == "missing"]
    if missing:
        raise VendorError("no Pyodide build of: " + ", ".join(missing))
    into.mkdir(parents=True, exist_ok=True)
    if any(into.iterdir()):
        raise VendorError(f"{into} is not empty")
    wheels: list[str] = []
    standins: list[str] = []
    substitutes: list[str] = []
    pyodide = load_pyodide()
    with httpx.Client(timeout=DOWNLOAD_TIMEOUT, follow_redirects=True) as client:

        def install(verdict: Verdict) -> None:
            wheel = fetch_wheel(_locked_wheel(lock, verdict), cache, client)
            unpack_wheel(wheel, into)
            wheels.append(wheel.name)

        for verdict in verdicts:
            name = normalize(verdict.name)
            if verdict.kind in ("pure", "pyemscripten"):
                install(verdict)
            elif name in SUBSTITUTES:
                substitute = SUBSTITUTES[name]
                for locked in substitute.locked:
                    real = judge(locked, lock, pyodide)
                    if real.kind != "pure":
                        raise VendorError(f"{locked}: uv.lock has no pure wheel ({real.detail})")
                    install(real)
                for relative, source in substitute.modules.items():
                    (into / relative).parent.mkdir(parents=True, exist_ok=True)
                    (into / relative).write_text(source)
                substitutes.append(name)
            elif name in CLIENT_STANDINS:
                shutil.copytree(
                    STANDINS_DIR / name,
                    into / name,
                    ignore=shutil.ignore_patterns("__pycache__"),
                )
                standins.append(name)
            else:
                write_standin(verdict.name, into)
                standins.append(name)
    return Vendored(tuple(wheels), tuple(standins), tuple(substitutes))
