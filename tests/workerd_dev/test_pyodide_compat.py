"""The Pyodide compatibility check and bundle estimate: on the project's own lock, and on
locks made to fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from workerd_dev import pyodide_compat as compat

PROJECT = Path(__file__).resolve().parents[2]


def test_every_runtime_dependency_installs_under_pyodide() -> None:
    verdicts, notes = compat.check(PROJECT)
    by_name = {v.name: v for v in verdicts}
    missing = [f"{v.name}: {v.detail}" for v in verdicts if v.kind == "missing"]
    assert missing == []
    # The closure is the real one: the worker's own deps and the MCP client's.
    for name in ("pydantic", "pydantic-core", "httpx", "anyio", "h11", "mcp", "httpx2"):
        assert name in by_name
    # PyPI has a wheel of the locked pydantic-core built for Pyodide 314's ABI: pywrangler
    # (best match over PyPI and the Pyodide index) takes it, so the worker runs the
    # venv's pydantic. cryptography has none: the worker gets Pyodide's build.
    assert by_name["pydantic-core"].kind == "pyemscripten"
    assert "pyemscripten_2026_0_wasm32" in by_name["pydantic-core"].detail
    assert by_name["cryptography"].kind == "pyodide"
    assert by_name["httpx"].kind == "pure"
    # pywrangler vendors the Workers SDK into every sync.
    assert by_name["workers-runtime-sdk"].kind == "pure"
    assert not by_name["workers-runtime-sdk"].via_extra_only
    # Markers are evaluated for Emscripten: httpx2's fetch backend is in, uvicorn is out.
    assert "httpx2-jsfetch" in by_name
    assert "uvicorn" not in by_name and "truststore" not in by_name
    assert any(note.startswith("cryptography ") for note in notes)
    assert not any(note.startswith("pydantic ") for note in notes)


def test_the_package_list_is_pyodide_314_0_7s() -> None:
    pyodide = compat.load_pyodide()
    assert compat.PYODIDE_LIST.name == "pyodide-314.0.7-packages.json"
    assert pyodide["pydantic-core"]["version"] == "2.41.5"
    assert pyodide["cryptography"]["file_name"].endswith("pyemscripten_2026_0_wasm32.whl")


def test_main_reports_success_and_the_bundle_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    assert compat.main() == 0
    out = capsys.readouterr().out
    assert "built for Pyodide on PyPI, or shipped by Pyodide 314.0.7" in out
    assert "bundle estimate" in out
    assert "of 64 MiB uncompressed per Worker" in out
    assert "cryptography" in out.split("bundle estimate", 1)[1]
    assert "what a deploy installs, against what was tested" in out


def test_what_a_deploy_installs_is_set_beside_what_was_tested() -> None:
    verdicts, _ = compat.check(PROJECT)
    lock = compat.load_lock(PROJECT / "uv.lock")
    offline = compat.offline_substitutes()
    lines = {line.name: line for line in compat.deploy_lines(verdicts, offline, lock)}
    pyodide = compat.load_pyodide()
    # The three compiled packages only the Pyodide index builds: a deploy takes its build.
    for name in ("cryptography", "cffi", "rpds-py"):
        line = lines[name]
        assert line.differs and line.tested == lock[name]["version"]
        assert line.deployed == f"{pyodide[name]['version']} (Pyodide's build)"
    # And what was locked against them may resolve to another release.
    assert lines["jsonschema"].differs and "rpds-py" in lines["jsonschema"].deployed
    # Offline runs: a real substitute for rpds-py, stand-ins for the others.
    assert "pyrsistent-as-rpds-py" in lines["rpds-py"].offline
    assert lines["cryptography"].offline == "client-only stand-in"
    # A pure package is tested and deployed at the locked version (pylock.toml pins it).
    assert not lines["httpx"].differs and lines["httpx"].offline == lock["httpx"]["version"]


def test_the_project_estimate_counts_the_vendored_closure_only() -> None:
    verdicts, _ = compat.check(PROJECT)
    lock = compat.load_lock(PROJECT / "uv.lock")
    estimate = compat.estimate_bundle(verdicts, lock, compat.load_pyodide(), PROJECT)
    by_name = {line.name: line for line in estimate.lines}
    vendored = {v.name for v in verdicts if not v.via_extra_only}
    assert set(by_name) == vendored
    # The pyemscripten wheel's size is the one in uv.lock, exactly.
    core = next(p for p in lock["pydantic-core"]["wheels"] if "pyemscripten" in p["url"])
    assert by_name["pydantic-core"].wheel == core["size"] and by_name["pydantic-core"].wheel_exact
    # Pyodide's own builds have no size in any lock: a stand-in, never called exact.
    assert not by_name["cryptography"].wheel_exact
    assert not by_name["cryptography"].unpacked_exact
    own = sum(
        p.stat().st_size
        for folder in ("src", "durable_objects")
        for p in (PROJECT / folder).rglob("*.py")
        if "__pycache__" not in p.parts
    )
    assert estimate.own_code == own
    assert estimate.total == sum(line.unpacked for line in estimate.lines) + own
    assert 0 < estimate.share < 1


@pytest.mark.parametrize(
    ("filename", "pure"),
    [
        ("httpx-0.28.1-py3-none-any.whl", True),
        ("six-1.16.0-py2.py3-none-any.whl", True),
        ("pydantic_core-2.41.5-cp314-cp314-pyemscripten_2026_0_wasm32.whl", False),
        ("orjson-3.10.0-cp311-cp311-manylinux_2_17_x86_64.whl", False),
        ("cryptography-47.0.0-cp314-abi3-manylinux_2_28_x86_64.whl", False),
    ],
)
def test_wheel_tags(filename: str, pure: bool) -> None:
    assert compat.is_pure_wheel(filename) is pure


def _write_project(root: Path, deps: list[str], packages: str) -> None:
    quoted = ", ".join(f'"{d}"' for d in deps)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "probe"\nversion = "0"\ndependencies = [{quoted}]\n'
    )
    (root / "uv.lock").write_text("version = 1\n" + packages)


def _package(name: str, version: str, wheels: list[str], deps: str = "") -> str:
    wheel_lines = ", ".join(f'{{ url = "https://files.example/{w}" }}' for w in wheels)
    return (
        f'\n[[package]]\nname = "{name}"\nversion = "{version}"\n'
        f"dependencies = [{deps}]\nwheels = [{wheel_lines}]\n"
    )


def test_a_native_package_pyodide_does_not_ship_fails(tmp_path: Path) -> None:
    _write_project(
        tmp_path,
        ["fastjson"],
        _package(
            "fastjson",
            "1.0",
            ["fastjson-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"],
            '{ name = "uvloop", marker = "sys_platform != \'emscripten\'" }, { name = "orjson" }',
        )
        + _package("uvloop", "0.21", ["uvloop-0.21-cp311-cp311-manylinux_2_17_x86_64.whl"])
        + _package("orjson", "3.10.0", ["orjson-3.10.0-cp311-cp311-manylinux_2_17_x86_64.whl"]),
    )
    verdicts, _ = compat.check(tmp_path)
    kinds = {v.name: v.kind for v in verdicts}
    assert kinds == {"fastjson": "missing", "orjson": "pyodide"}


def test_a_source_only_package_fails(tmp_path: Path) -> None:
    _write_project(tmp_path, ["oldlib"], _package("oldlib", "0.1", []))
    [verdict] = compat.check(tmp_path)[0]
    assert verdict.kind == "missing" and "source distribution" in verdict.detail


def test_a_requirement_that_excludes_pyodides_build_is_noted_only_where_a_deploy_takes_it(
    tmp_path: Path,
) -> None:
    # orjson comes from Pyodide's index; pydantic-core's pyemscripten wheel from PyPI, at
    # the version asked for, whatever build Pyodide's index holds.
    _write_project(
        tmp_path,
        ["orjson>=99", "pydantic-core>=99"],
        _package("orjson", "99.0", ["orjson-99.0-cp311-cp311-manylinux_2_17_x86_64.whl"])
        + _package(
            "pydantic-core",
            "99.0",
            ["pydantic_core-99.0-cp314-cp314-pyemscripten_2026_0_wasm32.whl"],
        ),
    )
    notes = [note for note in compat.check(tmp_path)[1] if "excludes Pyodide's build" in note]
    assert len(notes) == 1 and notes[0].startswith("orjson>=99 excludes")


def _sized(name: str, version: str, wheels: list[tuple[str, int]], deps: str = "") -> str:
    wheel_lines = ", ".join(
        f'{{ url = "https://files.example/{w}", size = {size} }}' for w, size in wheels
    )
    return (
        f'\n[[package]]\nname = "{name}"\nversion = "{version}"\n'
        f"dependencies = [{deps}]\nwheels = [{wheel_lines}]\n"
    )


def test_a_pyemscripten_wheel_counts_only_for_this_pyodides_abi(tmp_path: Path) -> None:
    _write_project(
        tmp_path,
        ["fastcore", "oldcore"],
        _sized(
            "fastcore",
            "3.0",
            [
                ("fastcore-3.0-cp314-cp314-pyemscripten_2026_0_wasm32.whl", 2_000_000),
                ("fastcore-3.0-cp314-cp314-manylinux_2_17_x86_64.whl", 3_000_000),
            ],
        )
        + _sized(
            "oldcore", "1.0", [("oldcore-1.0-cp313-cp313-pyemscripten_2025_0_wasm32.whl", 10)]
        ),
    )
    kinds = {v.name: v.kind for v in compat.check(tmp_path)[0]}
    assert kinds == {"fastcore": "pyemscripten", "oldcore": "missing"}


def test_sizes_come_from_the_lock_and_unknown_unpacked_sizes_are_scaled(tmp_path: Path) -> None:
    _write_project(
        tmp_path,
        ["probe-pure-a", "orjson"],
        _sized(
            "probe-pure-a",
            "1.0",
            [("probe_pure_a-1.0-py3-none-any.whl", 100_000)],
            '{ name = "orjson" }',
        )
        + _sized(
            "orjson", "9.9.9", [("orjson-9.9.9-cp311-cp311-manylinux_2_17_x86_64.whl", 500_000)]
        ),
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "entry.py").write_text("x = 1\n")
    verdicts, _ = compat.check(tmp_path)
    estimate = compat.estimate_bundle(
        verdicts, compat.load_lock(tmp_path / "uv.lock"), compat.load_pyodide(), tmp_path
    )
    by_name = {line.name: line for line in estimate.lines}
    assert by_name["probe-pure-a"].wheel == 100_000 and by_name["probe-pure-a"].wheel_exact
    # orjson: Pyodide builds it; its build's size is in no lock, the locked wheel stands in.
    assert by_name["orjson"].wheel == 500_000 and not by_name["orjson"].wheel_exact
    # Neither is installed here: unpacked = wheel x the default ratio, marked as a guess.
    ratio = compat.DEFAULT_UNPACK_RATIO
    assert by_name["probe-pure-a"].unpacked == round(100_000 * ratio)
    assert not by_name["probe-pure-a"].unpacked_exact
    assert estimate.own_code == len("x = 1\n")
    assert estimate.verdict == "within"


def test_an_estimate_over_the_limit_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = compat.WORKER_SIZE_LIMIT // 2
    _write_project(
        tmp_path,
        ["bigdata"],
        _sized("bigdata", "1.0", [("bigdata-1.0-py3-none-any.whl", huge)]),
    )
    assert compat.main(tmp_path) == 1
    out = capsys.readouterr().out
    assert "over" in out and "bigdata" in out and "README" in out


def test_near_starts_at_half_the_limit() -> None:
    line = compat.SizeLine("x", "1", 0, compat.WORKER_SIZE_LIMIT // 2, True, True, "")
    assert compat.BundleEstimate([line], own_code=0).verdict == "near"
    line.unpacked -= 1
    assert compat.BundleEstimate([line], own_code=0).verdict == "within"
