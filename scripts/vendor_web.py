"""Copy the browser chat's third-party modules from node_modules into web/vendor/.

The page loads them as ES modules from its own origin (CSP `script-src 'self'`, no
bundler): marked (GFM markdown) and DOMPurify (the sanitizer on marked's output), at the
exact versions package.json pins, each with its licence beside it. Run after changing a
version (`npm install --save-dev --save-exact marked@X`), then commit web/vendor/;
tests/web/test_vendored.py fails while the copies and the pins disagree.

axe-core (the accessibility checker) is copied the same way into tests/web/vendor/: the
browser tests inject it into the page; it is never served to users.

    uv run python scripts/vendor_web.py [--node-modules DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "web" / "vendor"
TEST_VENDOR = ROOT / "tests" / "web" / "vendor"
NODE_MODULES = ROOT / "node_modules"
# package -> (the module file in the package, its licence files). Each module is written
# as `<package>.js`: every static host serves .js as JavaScript, which module scripts need.
MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "marked": ("lib/marked.esm.js", ("LICENSE",)),
    "dompurify": ("dist/purify.es.mjs", ("LICENSE", "LICENSE-MPL")),
}
# Only for the browser tests (tests/web/vendor/), kept under the package's own file name.
TEST_MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "axe-core": ("axe.min.js", ("LICENSE", "LICENSE-3RD-PARTY.txt")),
}


def pinned() -> dict[str, str]:
    """The exact version package.json pins for each vendored package."""
    dev = json.loads((ROOT / "package.json").read_text())["devDependencies"]
    return {name: dev[name] for name in (*MODULES, *TEST_MODULES)}


def copies(node_modules: Path = NODE_MODULES) -> list[tuple[Path, Path]]:
    """(source in node_modules, target in a vendor folder) for every vendored file."""
    pairs = []
    for name, (module, licences) in MODULES.items():
        package = node_modules / name
        pairs.append((package / module, VENDOR / name / f"{name}.js"))
        for relative in licences:
            pairs.append((package / relative, VENDOR / name / Path(relative).name))
    for name, (module, licences) in TEST_MODULES.items():
        package = node_modules / name
        for relative in (module, *licences):
            pairs.append((package / relative, TEST_VENDOR / name / Path(relative).name))
    return pairs


def _listing(folder: Path, names: dict[str, object], what: str) -> None:
    versions = pinned()
    lines = [f"# Vendored {what} (scripts/vendor_web.py writes this folder)", ""]
    lines += [f"- `{name}` {versions[name]}: `{name}/`" for name in names]
    (folder / "README.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node-modules", type=Path, default=NODE_MODULES)
    node_modules = parser.parse_args(argv).node_modules
    for name, version in pinned().items():
        installed = json.loads((node_modules / name / "package.json").read_text())
        if installed["version"] != version:
            print(f"{name}: node_modules has {installed['version']}, package.json pins {version}")
            return 1
    for source, target in copies(node_modules):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    _listing(VENDOR, MODULES, "browser modules")
    _listing(TEST_VENDOR, TEST_MODULES, "test-only browser scripts, never served")
    print(f"vendored {', '.join(pinned())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
