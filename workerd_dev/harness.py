"""Run a piece of Python inside workerd, beside the worker's own modules: `workerd test`.

The benchmarks time imports inside the real Pyodide this way. The worker's modules go in
as wrangler hands them to workerd: every `.py` of src/ a Python module under its path
there, every file of the staged python_modules/ a data module under `python_modules/`
(which the runtime puts on sys.path). The test's module is the main one: a
`WorkerEntrypoint` named `Default` whose `test()` prints what it measured. Each run is a
fresh isolate (a cold start), in about two seconds plus what the code does.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from workerd_dev import PROJECT_DIR
from workerd_dev.pyodide_bundle import COMPAT_FLAGS, Bundle
from workerd_dev.tools import Tools

RUN_SECONDS = 180
MAIN_MODULE = "harness_main.py"


class HarnessError(RuntimeError):
    """The test worker did not run to its end; the message ends with workerd's output."""


@dataclass(frozen=True)
class HarnessRun:
    """What workerd printed, the lines the test printed as `harness: <json>`, and how long
    the whole `workerd test` process took (its start, the isolate's, and the test)."""

    output: str
    results: list[dict[str, object]]
    seconds: float


def _module(name: str, kind: str, path: Path, config_dir: Path) -> str:
    relative = os.path.relpath(path, config_dir)
    return f"(name = {json.dumps(name)}, {kind} = embed {json.dumps(relative)})"


@dataclass(frozen=True)
class Extras:
    """What a test worker carries beyond the worker's own modules."""

    # (module name, file): further Python modules, e.g. ("tests/x.py", path).
    modules: tuple[tuple[str, Path], ...] = ()
    # Further folders whose files go under python_modules/, e.g. a vendored pytest.
    python_modules: tuple[Path, ...] = ()
    # A Durable Object class of the main module, bound as OBJECTS, with SQLite storage in
    # a folder of the run (workerd's in-memory storage has no SQL).
    durable_object: str | None = None
    # Outbound fetch to loopback and private addresses (servers a test or bench starts);
    # without it the worker has no network at all.
    network: bool = False
    # (name, text): text bindings of the env, as wrangler's [vars] become.
    text_bindings: tuple[tuple[str, str], ...] = ()


def _vendored(folder: Path, config_dir: Path) -> list[str]:
    return [
        _module("python_modules/" + path.relative_to(folder).as_posix(), "data", path, config_dir)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    ]


def worker_config(
    main: Path,
    python_modules: Path,
    config_dir: Path,
    src: Path,
    compatibility_date: str,
    extras: Extras = Extras(),
) -> str:
    """The capnp text config of a test worker with the worker's modules."""
    modules = [_module(MAIN_MODULE, "pythonModule", main, config_dir)]
    for path in sorted(src.rglob("*.py")):
        if "__pycache__" not in path.parts:
            name = path.relative_to(src).as_posix()
            modules.append(_module(name, "pythonModule", path, config_dir))
    modules += [_module(name, "pythonModule", path, config_dir) for name, path in extras.modules]
    for folder in (python_modules, *extras.python_modules):
        modules += _vendored(folder, config_dir)
    flags = ", ".join(json.dumps(flag) for flag in COMPAT_FLAGS)
    listed = ",\n    ".join(modules)
    fields = ""
    services = '(name = "harness", worker = .w)'
    if extras.network:
        # The worker's default outbound service is the one named "internet".
        services += ', (name = "internet", network = (allow = ["private", "local"]))'
    bindings = [
        f"(name = {json.dumps(name)}, text = {json.dumps(text)})"
        for name, text in extras.text_bindings
    ]
    if extras.durable_object is not None:
        name = json.dumps(extras.durable_object)
        storage = json.dumps(str(config_dir / "objects"))
        (config_dir / "objects").mkdir(exist_ok=True)
        services += f', (name = "objects", disk = (path = {storage}, writable = true))'
        fields = (
            f'  durableObjectNamespaces = [(className = {name}, uniqueKey = "harness",'
            " enableSql = true)],\n"
            '  durableObjectStorage = (localDisk = "objects"),\n'
        )
        bindings.append(f'(name = "OBJECTS", durableObjectNamespace = {name})')
    if bindings:
        fields += f"  bindings = [{', '.join(bindings)}],\n"
    return (
        'using Workerd = import "/workerd/workerd.capnp";\n'
        f"const config :Workerd.Config = (services = [{services}]);\n"
        "const w :Workerd.Worker = (\n"
        f"  modules = [\n    {listed}\n  ],\n"
        f"  compatibilityDate = {json.dumps(compatibility_date)},\n"
        f"  compatibilityFlags = [{flags}],\n"
        f"{fields}"
        ");\n"
    )


def write_worker(
    folder: Path,
    test_body: str,
    python_modules: Path,
    *,
    top_level: str = "",
    extras: Extras = Extras(),
    src: Path = PROJECT_DIR / "src",
    compatibility_date: str = "2026-10-01",
) -> Path:
    """Write the test worker and its config into `folder`; the config's path.

    `top_level` runs when the isolate loads the module (what a memory snapshot keeps);
    `test_body` is the body of `async def test(self, ctrl)`, indented by 8, and reports
    with `report(**values)`, which prints a `harness: <json>` line.
    """
    source = (
        "import json\n\n"
        "from workers import WorkerEntrypoint\n\n"
        f"{top_level}\n\n"
        "def report(**values):\n"
        "    print('harness: ' + json.dumps(values))\n\n\n"
        "class Default(WorkerEntrypoint):\n"
        "    async def test(self, ctrl):\n"
        f"{test_body}"
    )
    main = folder / MAIN_MODULE
    main.write_text(source)
    config = folder / "harness.capnp"
    config.write_text(worker_config(main, python_modules, folder, src, compatibility_date, extras))
    return config


def run_workerd_test(tools: Tools, bundle: Bundle, config: Path, *extra: str) -> HarnessRun:
    """`workerd test` of a written worker (extra workerd options, e.g. for snapshots)."""
    started = time.monotonic()
    try:
        result = subprocess.run(
            [
                str(tools.workerd),
                "test",
                config.name,
                "--experimental",
                f"--pyodide-bundle-disk-cache-dir={bundle.directory}",
                *extra,
            ],
            cwd=config.parent,
            capture_output=True,
            text=True,
            timeout=RUN_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise HarnessError(f"workerd ran past {RUN_SECONDS} s") from exc
    seconds = time.monotonic() - started
    output = result.stdout + result.stderr
    if result.returncode != 0:
        raise HarnessError(f"the test worker failed (exit {result.returncode}):\n{output[-4000:]}")
    results = [
        json.loads(line.split("harness: ", 1)[1])
        for line in output.splitlines()
        if line.startswith("harness: ")
    ]
    return HarnessRun(output=output, results=results, seconds=seconds)


def run_in_workerd(
    tools: Tools,
    bundle: Bundle,
    python_modules: Path,
    test_body: str,
    *,
    top_level: str = "",
    extras: Extras = Extras(),
) -> HarnessRun:
    """Write a test worker in a scratch folder, run it once, and require a report."""
    with tempfile.TemporaryDirectory() as scratch:
        config = write_worker(
            Path(scratch), test_body, python_modules, top_level=top_level, extras=extras
        )
        run = run_workerd_test(tools, bundle, config)
    if not run.results:
        raise HarnessError(f"the test worker reported nothing:\n{run.output[-4000:]}")
    return run
