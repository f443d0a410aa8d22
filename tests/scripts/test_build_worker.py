"""Wrangler's [build] step copies durable_objects/ into python_modules/, fresh each time."""

from __future__ import annotations

from pathlib import Path

from scripts import build_worker


def test_build_vendors_the_package_and_drops_stale_files(tmp_path: Path) -> None:
    package = tmp_path / "durable_objects"
    (package / "__pycache__").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "chat.py").write_text("class ChatDurableObject: ...\n")
    (package / "__pycache__" / "chat.cpython-311.pyc").write_bytes(b"\0")
    vendor = tmp_path / "python_modules"
    (vendor / "durable_objects").mkdir(parents=True)
    (vendor / "durable_objects" / "removed.py").write_text("stale")
    (vendor / "pydantic").mkdir()
    (vendor / "pydantic" / "__init__.py").write_text("vendored by pywrangler")

    copied = build_worker.build(tmp_path)

    assert sorted(p.relative_to(vendor).as_posix() for p in copied) == [
        "durable_objects/__init__.py",
        "durable_objects/chat.py",
    ]
    assert not (vendor / "durable_objects" / "removed.py").exists()
    assert not (vendor / "durable_objects" / "__pycache__").exists()
    assert (vendor / "durable_objects" / "chat.py").read_text() == "class ChatDurableObject: ...\n"
    assert (vendor / "pydantic" / "__init__.py").read_text() == "vendored by pywrangler"
