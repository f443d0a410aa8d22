"""workerd's `dev` Pyodide bundle, built offline from the npm `pyodide` package.

The bundle is a Cap'n Proto message (`bundle.capnp`, wire-compatible with workerd's
`jsg/modules.capnp` Bundle) of three internal modules: Pyodide's `pyodide.asm.mjs`
with the text patches workerd's own build applies (`PATCHES`, read from workerd's
`src/pyodide/helpers.bzl` and checked against the exports its binary has), the
`pyodide.asm.wasm` beside it and the standard library zip. `capnp eval` writes it;
the same inputs give the same bytes.

workerd's `dev` release names the Pyodide version it was built for and refuses any
other at start ("Pyodide version mismatch, expected '…'"). `ensure_bundle` builds
the version it last saw (or `PYODIDE_VERSION`), asks the installed workerd with a
one-test Python worker (`workerd test`, ~2 s, no port), and rebuilds once for the
version workerd names if they differ; the answer is kept per workerd version.

`python -m workerd_dev` builds (or finds) it, with the vendored modules.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from workerd_dev import cache_dir, write_atomically
from workerd_dev.tools import Tools, capnp, find_tools, npm

# What workerd 1.20261117.1's dev release expects; the probe corrects it for any other.
PYODIDE_VERSION = "314.0.6"
BUNDLE_FILE = "pyodide_dev.capnp.bin"
SCHEMA = Path(__file__).with_name("bundle.capnp")
# The files of the npm package that go into the bundle (as named in bundle.capnp).
ASM_MJS, ASM_WASM, STDLIB_ZIP = "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip"
COMPAT_FLAGS = ("python_workers", "python_workers_development")
PROBE_SECONDS = 60
BUILD_SECONDS = 300

_EVAL_REFUSED = "(() => {throw new Error('the Pyodide runtime tried to eval code')})()"

# The names workerd's runtime exports to the patched module, imported by it at the top:
# `pyodide-internal:builtin_wrappers` in workerd 1.2026-11 (earlier: `…:pool/builtin_wrappers`,
# which also exported reportUndefinedSymbolsPatched; that patch is gone with it).
_PRELUDE = (
    "import { addEventListener, getRandomValues, location, monotonicDateNow, newWasmModule,"
    " patchedLoadLibData, wasmInstantiate } from 'pyodide-internal:builtin_wrappers';\n"
)


@dataclass(frozen=True)
class Patch:
    """One text replacement in pyodide.asm.mjs, and why workerd needs it."""

    find: str
    replace: str
    why: str


# In workerd's order. Each must match at least once: a Pyodide release where one does not
# is a release workerd's runtime was not written for, and the build says so.
PATCHES: tuple[Patch, ...] = (
    Patch(
        "new WebAssembly.Module",
        "newWasmModule",
        "workerd compiles Wasm only through its checked wrapper",
    ),
    Patch("WebAssembly.instantiate", "wasmInstantiate", "the same, for instantiation"),
    Patch("Date.now", "monotonicDateNow", "mtimes must move, or imports read stale folders"),
    Patch(
        "crypto.getRandomValues(",
        "getRandomValues(Module, ",
        "entropy at import time is controlled (snapshots)",
    ),
    Patch("eval(func)", _EVAL_REFUSED, "eval is not allowed in a Worker"),
    Patch("eval(data)", _EVAL_REFUSED, "eval is not allowed in a Worker"),
    Patch("eval(UTF8ToString(ptr))", _EVAL_REFUSED, "eval is not allowed in a Worker"),
    Patch(
        "function loadLibData(){",
        "function loadLibData(){"
        "var libData=patchedLoadLibData(Module,libName,flags.rpath);"
        "return flags.loadAsync?Promise.resolve(libData):libData;}"
        "function replacedLoadLibData(){",
        "shared libraries are read from workerd's read-only file system",
    ),
    Patch(
        "getMemory(",
        "Module.getMemoryPatched(Module, libName, ",
        "a shared library's memory base must be stable across snapshots",
    ),
    Patch(
        "export default _createPyodideModule;",
        _PRELUDE + "export default _createPyodideModule; export { _createPyodideModule };",
        "workerd imports the factory by name, and the wrappers above",
    ),
)


class BundleError(RuntimeError):
    """The bundle could not be built, or the installed workerd refuses it."""


@dataclass(frozen=True)
class Bundle:
    """A built bundle: the folder to give workerd as its bundle cache, and what is in it."""

    directory: Path
    pyodide_version: str
    sha256: str
    size: int

    @property
    def path(self) -> Path:
        return self.directory / BUNDLE_FILE


def recipe_key(version: str) -> str:
    """What decides the bundle's bytes: the Pyodide version, the patches, the schema."""
    recipe = json.dumps(
        [version, [(p.find, p.replace) for p in PATCHES], SCHEMA.read_text()], sort_keys=True
    )
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def patch_runtime(source: str) -> str:
    """pyodide.asm.mjs as workerd loads it; BundleError naming any patch that no longer fits."""
    missing = [p.find for p in PATCHES if p.find not in source]
    if missing:
        raise BundleError(
            "this Pyodide's pyodide.asm.mjs lacks text workerd's runtime patches: "
            + ", ".join(repr(m) for m in missing)
        )
    for patch in PATCHES:
        source = source.replace(patch.find, patch.replace)
    return source


def fetch_pyodide(version: str, cache: Path) -> Path:
    """The npm package `pyodide@version` as a tarball in the cache (npm checks its integrity)."""
    target = cache / "npm" / f"pyodide-{version}.tgz"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        result = subprocess.run(
            [str(npm()), "pack", f"pyodide@{version}", "--pack-destination", scratch, "--json"],
            capture_output=True,
            text=True,
            timeout=BUILD_SECONDS,
            check=False,
        )
        if result.returncode != 0:
            raise BundleError(f"npm pack pyodide@{version} failed:\n{result.stderr[-2000:]}")
        packed = json.loads(result.stdout)[0]["filename"]
        Path(scratch, packed).replace(target)
    return target


def _extract(tarball: Path, into: Path) -> None:
    wanted = {f"package/{name}": name for name in (ASM_MJS, ASM_WASM, STDLIB_ZIP)}
    with tarfile.open(tarball) as archive:
        for member in archive.getmembers():
            name = wanted.pop(member.name, None)
            if name is None:
                continue
            source = archive.extractfile(member)
            if source is None:
                raise BundleError(f"{tarball.name}: {member.name} is not a file")
            with source, (into / name).open("wb") as out:
                shutil.copyfileobj(source, out)
    if wanted:
        raise BundleError(f"{tarball.name} lacks {', '.join(sorted(wanted))}")


def build(version: str, cache: Path | None = None) -> Bundle:
    """Build the bundle of `version` (or find it built) under the cache's `bundles/`."""
    cache = cache or cache_dir()
    directory = cache / "bundles" / f"{version}-{recipe_key(version)}"
    manifest = directory / "bundle.json"
    if manifest.exists() and (directory / BUNDLE_FILE).exists():
        return Bundle(directory=directory, **json.loads(manifest.read_text()))
    tarball = fetch_pyodide(version, cache)
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        work = Path(scratch)
        _extract(tarball, work)
        mjs = work / ASM_MJS
        mjs.write_text(patch_runtime(mjs.read_text()))
        shutil.copyfile(SCHEMA, work / SCHEMA.name)
        out = work / BUNDLE_FILE
        with out.open("wb") as sink:
            result = subprocess.run(
                [str(capnp()), "eval", "--binary", SCHEMA.name, "dev"],
                cwd=work,
                stdout=sink,
                stderr=subprocess.PIPE,
                text=False,
                timeout=BUILD_SECONDS,
                check=False,
            )
        if result.returncode != 0:
            raise BundleError(f"capnp eval failed:\n{result.stderr.decode(errors='replace')}")
        data = out.read_bytes()
        out.replace(directory / BUNDLE_FILE)
    bundle = Bundle(
        directory=directory,
        pyodide_version=version,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
    )
    write_atomically(
        manifest,
        json.dumps({"pyodide_version": version, "sha256": bundle.sha256, "size": bundle.size}),
    )
    return bundle


_PROBE_WORKER = """\
import sys

import pyodide
from workers import WorkerEntrypoint


class Default(WorkerEntrypoint):
    async def test(self, ctrl):
        print(f"albert-probe pyodide={pyodide.__version__} python={sys.version.split()[0]}")
"""

# The probe runs with the runtime's built-in SDK: it has no python_modules/ of its own.
_PROBE_CONFIG = """\
using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (services = [(name = "probe", worker = .probe)]);
const probe :Workerd.Worker = (
  modules = [(name = "probe.py", pythonModule = embed "probe.py")],
  compatibilityDate = "2026-10-01",
  compatibilityFlags = [%s, "disable_python_external_sdk"],
);
"""

_MISMATCH = re.compile(r"Pyodide version mismatch, expected '([^']+)'")
_ANSWER = re.compile(r"albert-probe pyodide=(\S+) python=(\S+)")


@dataclass(frozen=True)
class ProbeResult:
    """What workerd said of a bundle: it ran (versions), or which version it wants."""

    ran: bool
    pyodide: str | None = None
    python: str | None = None
    expected: str | None = None
    output: str = ""


def probe(tools: Tools, bundle: Bundle) -> ProbeResult:
    """Run a one-test Python worker on the installed workerd with `bundle`."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "probe.py").write_text(_PROBE_WORKER)
        flags = ", ".join(f'"{flag}"' for flag in COMPAT_FLAGS)
        (folder / "probe.capnp").write_text(_PROBE_CONFIG % flags)
        try:
            result = subprocess.run(
                [
                    str(tools.workerd),
                    "test",
                    "probe.capnp",
                    "--experimental",
                    f"--pyodide-bundle-disk-cache-dir={bundle.directory}",
                ],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=PROBE_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise BundleError(f"workerd did not finish the probe in {PROBE_SECONDS} s") from exc
    output = result.stdout + result.stderr
    answer = _ANSWER.search(output)
    if result.returncode == 0 and answer:
        return ProbeResult(True, answer.group(1), answer.group(2), output=output)
    mismatch = _MISMATCH.search(output)
    return ProbeResult(False, expected=mismatch.group(1) if mismatch else None, output=output)


def _remembered(cache: Path, workerd_version: str) -> Path:
    return cache / "bundles" / f"workerd-{workerd_version}.json"


def ensure_bundle(
    tools: Tools | None = None, cache: Path | None = None, guess: str = PYODIDE_VERSION
) -> Bundle:
    """The bundle the installed workerd runs, built if needed and checked by running it.

    `guess` is the Pyodide version built first when this workerd was never asked.
    """
    tools = tools or find_tools()
    cache = cache or cache_dir()
    known = _remembered(cache, tools.workerd_version)
    if known.exists():
        seen = json.loads(known.read_text())
        bundle = build(str(seen["pyodide_version"]), cache)
        if bundle.sha256 == seen.get("sha256"):
            return bundle
    version = guess
    for _ in range(2):
        bundle = build(version, cache)
        result = probe(tools, bundle)
        if result.ran:
            write_atomically(
                known,
                json.dumps({"pyodide_version": bundle.pyodide_version, "sha256": bundle.sha256}),
            )
            return bundle
        if result.expected is None or result.expected == version:
            break
        version = result.expected
    raise BundleError(
        f"workerd {tools.workerd_version} refused the Pyodide {version} bundle:\n"
        + result.output[-3000:]
    )
