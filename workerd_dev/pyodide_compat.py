"""Can every runtime dependency of the worker be installed under Pyodide, and how big is it?

pywrangler (workers-py 1.17.9) resolves the worker's dependencies with
`uv pip compile` for a Pyodide interpreter against PyPI plus the Pyodide 314.0.7
package index (`--index-strategy unsafe-best-match`: the best version from
either), wheels only, and installs them into python_modules/. The runtime's own
Pyodide supplies only the interpreter and the standard library. This script
walks the dependency closure of the worker's runtime requirements in uv.lock,
with markers evaluated for the Pyodide target (Emscripten, wasm32, Python 3.14),
and classifies every package:

- pure         a `*-none-any` wheel of the locked version (uv.lock; else the
               installed dist-info WHEEL tags);
- pyemscripten a compiled package with a wheel on PyPI built for this Pyodide's ABI
               (`pyemscripten_2026_0_wasm32`), recorded in uv.lock: the worker gets
               the locked version, as the local venv does;
- pyodide      a compiled package that only the Pyodide index builds
               (workerd_dev/pyodide-314.0.7-packages.json, from pyodide-lock.json of the
               npm package pyodide@314.0.7): the worker gets Pyodide's version, which
               may differ from the lock;
- missing      none of these: it cannot be installed in the worker.

Roots: [project.dependencies] plus workers-runtime-sdk (what pywrangler vendors),
and the extras in WORKER_EXTRAS, if any. A package reached only through such an
extra is flagged, since pywrangler vendors [project.dependencies] alone.

It then sets what a deploy installs beside what was tested: the venv's version (all
tests under CPython), what the local workerd runs vendor (the locked wheel, or what
stands in for a package only the Pyodide index builds: workerd_dev/python_modules.py),
and what `pywrangler sync` takes (Pyodide's build of a compiled package; a pure one at
the newest release the constraints allow at the first sync, which its own `pylock.toml`
then pins: uv.lock is not read). Rows where a deploy differs from what was tested are
marked.

It then estimates the upload: the vendored closure unpacked (what wrangler
uploads from python_modules/, file by file) plus the worker's own modules,
against the Worker size limit. Exact where a lock or an installed RECORD has the
number; a stand-in, marked `~`, where none does (Pyodide's own builds have no
size in any lock).

Exit status 1 when any package is missing or the estimate is over the limit.
Standard library plus `packaging`.
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

from workerd_dev import PROJECT_DIR
from workerd_dev.substitutes import offline_substitutes

ROOT = PROJECT_DIR
PYODIDE_VERSION = "314.0.7"
PYODIDE_LIST = Path(__file__).resolve().parent / f"pyodide-{PYODIDE_VERSION}-packages.json"
# Extras the worker would import from; none, since its MCP client moved into
# [project.dependencies] (an extra named here is walked too, its packages flagged).
WORKER_EXTRAS: tuple[str, ...] = ()
# pywrangler adds the Workers SDK to every sync (MANAGED_SDK_PACKAGE in workers-py).
SYNC_ADDS = ("workers-runtime-sdk",)
# The wheel platform of Pyodide 314's ABI (pyodide-lock.json info.abi_version 2026_0).
PYEMSCRIPTEN_PLATFORM = "pyemscripten_2026_0_wasm32"
PYTHON_TAG = "cp314"

# Cloudflare's Worker size limit, checked 2026-12: 64 MiB per Worker, uncompressed, on
# every plan, since the compressed limits (3 MB Free / 10 MB Paid) were removed on
# 2026-09-04 (Workers limits page and changelog; wrangler 4.164.0's bundle reporter
# compares against the same 64 MiB). Startup time and isolate memory are further
# limits that size feeds into; neither is measured here.
WORKER_SIZE_LIMIT = 64 * 1024 * 1024
WORKER_SIZE_LIMIT_TEXT = "64 MiB uncompressed per Worker (every plan, since 2026-09-04)"
NEAR_SHARE = 0.5
# Unpacked/wheel size when nothing better is known (replaced by the ratio measured on
# the closure's own pure packages whenever there are any).
DEFAULT_UNPACK_RATIO = 3.0

# The environment markers of the Python Workers runtime (Pyodide 314, Python 3.14.2).
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

Kind = Literal["pure", "pyemscripten", "pyodide", "missing"]


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


def is_pyodide_wheel(filename: str) -> bool:
    """True for a compiled wheel built for the worker's Pyodide (its ABI and Python)."""
    python, abi, plat = _wheel_tags(filename)
    if plat != PYEMSCRIPTEN_PLATFORM:
        return False
    pythons = python.split(".")
    return PYTHON_TAG in pythons or (abi == "abi3" and any(t.startswith("cp3") for t in pythons))


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


def runtime_roots(
    pyproject: Path = ROOT / "pyproject.toml", lock: dict[str, dict[str, Any]] | None = None
) -> tuple[list[str], list[str]]:
    """(what pywrangler vendors: [project.dependencies] and the SDK, names only in extras).

    The SDK counts only when uv.lock has it (its size and tags come from there).
    """
    project = tomllib.loads(pyproject.read_text())["project"]
    base = [normalize(Requirement(r).name) for r in project.get("dependencies", [])]
    for name in SYNC_ADDS:
        if name not in base and (lock is None or name in lock):
            base.append(name)
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
    built = [w for w in wheels if is_pyodide_wheel(w)]
    if built:
        return Verdict(name, version, "pyemscripten", built[0])
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
    base, extra = runtime_roots(root / "pyproject.toml", lock)
    vendored = closure(lock, base)
    everything = closure(lock, base + extra)
    verdicts = []
    for name in sorted(everything):
        verdict = judge(name, lock, pyodide)
        verdict.via_extra_only = name not in vendored
        verdicts.append(verdict)
    notes = _constraint_notes(lock, verdicts)
    # Only where the deploy takes Pyodide's build: a pure or pyemscripten package comes
    # from PyPI at the version the requirement asks for, whatever Pyodide's index holds.
    from_pyodide = {v.name for v in verdicts if v.kind == "pyodide"}
    for spec_text in tomllib.loads((root / "pyproject.toml").read_text())["project"].get(
        "dependencies", []
    ):
        req = Requirement(spec_text)
        shipped = pyodide.get(normalize(req.name))
        if (
            shipped
            and normalize(req.name) in from_pyodide
            and not SpecifierSet(str(req.specifier)).contains(shipped["version"])
        ):
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


@dataclass
class SizeLine:
    """One vendored package's share of the upload."""

    name: str
    version: str
    wheel: int
    unpacked: int
    wheel_exact: bool
    unpacked_exact: bool
    basis: str


@dataclass
class BundleEstimate:
    """The estimated upload against the Worker size limit."""

    lines: list[SizeLine]
    own_code: int
    limit: int = WORKER_SIZE_LIMIT

    @property
    def vendored(self) -> int:
        """Unpacked bytes of python_modules/."""
        return sum(line.unpacked for line in self.lines)

    @property
    def wheels(self) -> int:
        """Compressed bytes: the wheels as downloaded."""
        return sum(line.wheel for line in self.lines)

    @property
    def total(self) -> int:
        """What wrangler uploads, uncompressed: python_modules/ plus the worker's modules."""
        return self.vendored + self.own_code

    @property
    def share(self) -> float:
        """The total as a fraction of the limit."""
        return self.total / self.limit

    @property
    def verdict(self) -> Literal["within", "near", "over"]:
        """`near` from half the limit on: time to drop something (README)."""
        if self.share >= 1:
            return "over"
        return "near" if self.share >= NEAR_SHARE else "within"


def _wheel_sizes(package: dict[str, Any]) -> dict[str, int]:
    return {
        w["url"].rsplit("/", 1)[1]: int(w["size"])
        for w in package.get("wheels", [])
        if w.get("size") is not None
    }


def _installed_size(name: str, version: str) -> int | None:
    """Bytes of the installed distribution's files (its RECORD), when it is `version`."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    if dist.version != version or dist.files is None:
        return None
    total = 0
    for file in dist.files:
        # wrangler skips *.pyc; pywrangler's install writes none.
        if file.suffix == ".pyc" or "__pycache__" in file.parts or file.size is None:
            continue
        total += int(file.size)
    return total or None


def _own_code(root: Path) -> int:
    total = 0
    for folder in ("src", "durable_objects"):
        for path in (root / folder).rglob("*.py"):
            if "__pycache__" not in path.parts:
                total += path.stat().st_size
    return total


def estimate_bundle(
    verdicts: list[Verdict],
    lock: dict[str, dict[str, Any]],
    pyodide: dict[str, dict[str, Any]],
    root: Path = ROOT,
) -> BundleEstimate:
    """Size of python_modules/ after a sync, and of the worker's own modules."""
    raw: list[tuple[Verdict, int, bool, int | None, bool, str]] = []
    for v in verdicts:
        if v.via_extra_only or v.kind == "missing":
            continue
        sizes = _wheel_sizes(lock.get(v.name, {}))
        installed = _installed_size(v.name, v.version)
        if v.kind in ("pure", "pyemscripten") and v.detail in sizes:
            wheel, wheel_exact = sizes[v.detail], True
            basis = "wheel in uv.lock"
        elif sizes:
            wheel, wheel_exact = max(sizes.values()), False
            built = v.detail.split("-")[1]
            basis = f"Pyodide's build {built} is in no lock: {v.version}'s largest wheel"
        else:
            wheel, wheel_exact, basis = 0, False, "no wheel size known"
        # The installed files are the wheel's own only for a pure package.
        unpacked_exact = installed is not None and v.kind == "pure"
        if installed is not None:
            basis += "; unpacked: installed RECORD" + ("" if unpacked_exact else " (CPython build)")
        raw.append((v, wheel, wheel_exact, installed, unpacked_exact, basis))
    measured = [(w, u) for _, w, we, u, ue, _ in raw if we and ue and u]
    ratio = (
        sum(u for _, u in measured) / sum(w for w, _ in measured)
        if measured and sum(w for w, _ in measured)
        else DEFAULT_UNPACK_RATIO
    )
    lines = []
    for v, wheel, wheel_exact, installed, unpacked_exact, basis in raw:
        if installed is None:
            unpacked = round(wheel * ratio)
            basis += f"; unpacked: wheel x {ratio:.1f}"
        else:
            unpacked = installed
        lines.append(
            SizeLine(v.name, v.version, wheel, unpacked, wheel_exact, unpacked_exact, basis)
        )
    return BundleEstimate(lines, _own_code(root))


def _mib(size: int, exact: bool = True) -> str:
    return f"{'' if exact else '~'}{size / 1024 / 1024:.2f} MiB"


@dataclass(frozen=True)
class DeployLine:
    """One package: the version the tests ran, what offline workerd runs vendor, what a
    deploy takes, and whether the deploy differs from what was tested."""

    name: str
    tested: str
    offline: str
    deployed: str
    differs: bool


def deploy_lines(
    verdicts: list[Verdict], offline: dict[str, str], lock: dict[str, dict[str, Any]]
) -> list[DeployLine]:
    """What a deploy installs beside what was tested, for the vendored closure.

    `offline`: what the local workerd runs put in place of a package (name → words); the
    locked wheel for any other.
    """
    native = {v.name: v.detail.split("-")[1] for v in verdicts if v.kind == "pyodide" and v.notes}
    lines = []
    for v in verdicts:
        if v.via_extra_only:
            continue
        pins = [
            normalize(dep["name"])
            for dep in lock.get(v.name, {}).get("dependencies", [])
            if normalize(dep["name"]) in native
        ]
        if v.kind == "pyodide":
            deployed, differs = f"{v.detail.split('-')[1]} (Pyodide's build)", bool(v.notes)
        elif pins:
            # Locked with a compiled package the deploy gets in another version.
            builds = ", ".join(f"{name} {native[name]}" for name in pins)
            deployed, differs = f"the release that accepts {builds}", True
        else:
            deployed, differs = f"{v.version} or newer (pylock.toml pins)", False
        vendored = offline.get(v.name, v.version)
        lines.append(DeployLine(v.name, v.version, vendored, deployed, differs))
    return lines


def print_deploy_lines(lines: list[DeployLine]) -> None:
    """The table of what a deploy installs against what the tests ran."""
    print()
    print("what a deploy installs, against what was tested (≠: a deploy differs):")
    width = max([len(line.name) for line in lines] + [len("package")])
    tested = max([len(line.tested) for line in lines] + [len("tests (venv)")])
    offline = max([len(line.offline) for line in lines] + [len("workerd offline")])
    head = f"{'package':<{width}}  {'tests (venv)':<{tested}}  {'workerd offline':<{offline}}"
    print(f"    {head}  deploy")
    for line in lines:
        mark = "≠" if line.differs else " "
        print(
            f"  {mark} {line.name:<{width}}  {line.tested:<{tested}}  "
            f"{line.offline:<{offline}}  {line.deployed}"
        )


def print_estimate(estimate: BundleEstimate) -> None:
    """The per-package table, the totals and the verdict against the limit."""
    print()
    print(
        "bundle estimate (python_modules/ after `pywrangler sync`, plus src/ and durable_objects/):"
    )
    width = max([len(line.name) for line in estimate.lines] + [len("package")])
    print(f"  {'package':<{width}}  {'wheel':>11}  {'unpacked':>11}  basis")
    for line in sorted(estimate.lines, key=lambda item: -item.unpacked):
        print(
            f"  {line.name:<{width}}  {_mib(line.wheel, line.wheel_exact):>11}  "
            f"{_mib(line.unpacked, line.unpacked_exact):>11}  {line.basis}"
        )
    own = _mib(estimate.own_code)
    print(f"  {'worker modules':<{width}}  {'':>11}  {own:>11}  src/, durable_objects/")
    exact = all(line.unpacked_exact for line in estimate.lines)
    print(
        f"  total: {_mib(estimate.total, exact)} unpacked "
        f"({_mib(estimate.wheels, False)} as wheels) of {WORKER_SIZE_LIMIT_TEXT}: "
        f"{estimate.share:.0%}, {estimate.verdict}"
    )
    if estimate.verdict != "within":
        heavy = sorted(estimate.lines, key=lambda item: -item.unpacked)[:3]
        print(
            "  the largest: "
            + ", ".join(f"{line.name} {_mib(line.unpacked, line.unpacked_exact)}" for line in heavy)
            + "; README, 'Deploy to Cloudflare', says what can be dropped"
        )


def main(root: Path = ROOT) -> int:
    """Print the table, the notes and the size estimate; exit 1 on a missing package or an
    estimate over the limit."""
    verdicts, notes = check(root)
    width = max(len(v.name) for v in verdicts)
    for v in verdicts:
        extra = "  (extra only)" if v.via_extra_only else ""
        print(f"{v.name:<{width}}  {v.version:<12} {v.kind:<12} {v.detail}{extra}")
        for note in v.notes:
            print(f"{'':<{width}}  note: {note}")
    for note in notes:
        print(f"note: {note}")
    print_deploy_lines(deploy_lines(verdicts, offline_substitutes(), load_lock(root / "uv.lock")))
    estimate = estimate_bundle(verdicts, load_lock(root / "uv.lock"), load_pyodide(), root)
    print_estimate(estimate)
    missing = [v.name for v in verdicts if v.kind == "missing"]
    status = 0
    if missing:
        print(f"cannot be installed under Pyodide: {', '.join(missing)}")
        status = 1
    else:
        print(
            f"{len(verdicts)} packages: all pure Python, built for Pyodide on PyPI, "
            f"or shipped by Pyodide {PYODIDE_VERSION}"
        )
    if estimate.verdict == "over":
        print(f"the estimated upload is over the Worker size limit ({WORKER_SIZE_LIMIT_TEXT})")
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
