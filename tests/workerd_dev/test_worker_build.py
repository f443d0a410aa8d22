"""Wrangler's [build] step: refuses an unsynced python_modules/, then vendors durable_objects/."""

from __future__ import annotations

from pathlib import Path

import pytest

from workerd_dev import worker_build as build_worker


def _project(root: Path, deps: tuple[str, ...] = ("pydantic>=2.9", "httpx>=0.27")) -> None:
    quoted = ", ".join(f'"{d}"' for d in deps)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "probe"\nversion = "0"\ndependencies = [{quoted}]\n'
    )
    package = root / "durable_objects"
    (package / "__pycache__").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "chat.py").write_text("class ChatDurableObject: ...\n")
    (package / "__pycache__" / "chat.cpython-311.pyc").write_bytes(b"\0")


def _vendor(root: Path, dist: str, version: str, package: str | None = None) -> None:
    """What `uv pip install` leaves in python_modules/ for one distribution."""
    vendor = root / "python_modules"
    (vendor / f"{dist.replace('-', '_')}-{version}.dist-info").mkdir(parents=True)
    if package:
        (vendor / package).mkdir(exist_ok=True)
        (vendor / package / "__init__.py").write_text(f"# vendored {dist}\n")


def _synced(root: Path) -> None:
    _vendor(root, "workers-runtime-sdk", "1.9.5", "workers")
    _vendor(root, "pydantic", "2.14.4", "pydantic")
    _vendor(root, "httpx", "0.29.0", "httpx")


def test_build_vendors_the_package_and_drops_stale_files(tmp_path: Path) -> None:
    _project(tmp_path)
    _synced(tmp_path)
    vendor = tmp_path / "python_modules"
    (vendor / "durable_objects").mkdir()
    (vendor / "durable_objects" / "removed.py").write_text("stale")

    copied = build_worker.build(tmp_path)

    assert sorted(p.relative_to(vendor).as_posix() for p in copied) == [
        "durable_objects/__init__.py",
        "durable_objects/chat.py",
    ]
    assert not (vendor / "durable_objects" / "removed.py").exists()
    assert not (vendor / "durable_objects" / "__pycache__").exists()
    assert (vendor / "durable_objects" / "chat.py").read_text() == "class ChatDurableObject: ...\n"
    assert (vendor / "pydantic" / "__init__.py").read_text() == "# vendored pydantic\n"


def test_a_tree_pywrangler_never_synced_is_refused(tmp_path: Path) -> None:
    _project(tmp_path)
    with pytest.raises(build_worker.UnsyncedUpload) as refused:
        build_worker.build(tmp_path)
    message = str(refused.value)
    assert "uv run pywrangler deploy" in message
    assert "workers-runtime-sdk" in message and "pydantic" in message and "httpx" in message
    # Nothing was written: a refused build leaves no half-made python_modules/.
    assert not (tmp_path / "python_modules").exists()


def test_dependencies_without_the_sdk_are_refused(tmp_path: Path) -> None:
    # `pip install -t python_modules pydantic httpx` by hand: packages, but no `workers`.
    _project(tmp_path)
    _vendor(tmp_path, "pydantic", "2.14.4", "pydantic")
    _vendor(tmp_path, "httpx", "0.29.0", "httpx")
    report = build_worker.check_sync(tmp_path)
    assert report.missing == ("workers-runtime-sdk (the `workers` module)",)
    with pytest.raises(build_worker.UnsyncedUpload):
        build_worker.build(tmp_path)


def test_an_sdk_dist_info_without_its_package_is_refused(tmp_path: Path) -> None:
    _project(tmp_path)
    _synced(tmp_path)
    (tmp_path / "python_modules" / "workers" / "__init__.py").unlink()
    assert not build_worker.check_sync(tmp_path).complete


def test_a_dependency_added_after_the_last_sync_is_refused(tmp_path: Path) -> None:
    _project(tmp_path, deps=("pydantic>=2.9", "httpx>=0.27", "Typing_Extensions[x]>=4"))
    _synced(tmp_path)
    report = build_worker.check_sync(tmp_path)
    assert report.missing == ("typing-extensions",)
    _vendor(tmp_path, "typing_extensions", "4.16.0")
    assert build_worker.check_sync(tmp_path).complete


def test_a_dependency_whose_marker_excludes_pyodide_is_not_required(tmp_path: Path) -> None:
    _project(
        tmp_path,
        deps=(
            "pydantic>=2.9",
            "httpx>=0.27",
            "uvloop>=0.21; sys_platform != 'emscripten'",
            "tzdata; sys_platform == 'emscripten'",
        ),
    )
    _synced(tmp_path)
    assert build_worker.check_sync(tmp_path).missing == ("tzdata",)


def test_main_refuses_with_the_deploy_command_and_exit_status_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path)
    monkeypatch.delenv(build_worker.ALLOW_UNSYNCED_ENV, raising=False)
    assert build_worker.main(tmp_path) == 1
    err = capsys.readouterr().err
    assert "refusing to build" in err and "`uv run pywrangler deploy`" in err


@pytest.mark.parametrize("value", ["", "0", "yes", "true"])
def test_only_the_exact_escape_value_lets_an_unsynced_build_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    _project(tmp_path)
    monkeypatch.setenv(build_worker.ALLOW_UNSYNCED_ENV, value)
    assert build_worker.main(tmp_path) == 1


def test_the_escape_builds_and_says_the_bundle_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path)
    monkeypatch.setenv(build_worker.ALLOW_UNSYNCED_ENV, "1")
    assert build_worker.main(tmp_path) == 0
    out = capsys.readouterr()
    assert "cannot serve requests" in out.err
    assert (tmp_path / "python_modules" / "durable_objects" / "chat.py").exists()
