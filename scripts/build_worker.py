"""Wrangler's [build] step: put durable_objects/ where the deployed worker can import it.

Wrangler uploads the main module's folder (src/) and python_modules/ from the
project root, which the Python Workers runtime adds to sys.path. pywrangler fills
python_modules/ with the vendored [project.dependencies]; this step adds the
durable_objects package beside them, fresh on every build. Standard library only:
wrangler runs it with whatever python3 is on PATH.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("durable_objects",)


def build(root: Path = ROOT) -> list[Path]:
    """Copy each first-party package outside src/ into python_modules/; return the files."""
    vendor = root / "python_modules"
    copied: list[Path] = []
    for name in PACKAGES:
        source = root / name
        target = vendor / name
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for path in sorted(source.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            dest = target / path.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            copied.append(dest)
    return copied


def main() -> int:
    """Entry point for wrangler's [build] command."""
    files = build()
    print(f"build_worker: {len(files)} module(s) copied into python_modules/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
