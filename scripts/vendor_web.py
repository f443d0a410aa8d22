"""Copy the browser chat's third-party modules from node_modules into web/vendor/.

The page loads them as ES modules from its own origin (CSP `script-src 'self'`, no
bundler): marked (GFM markdown) and DOMPurify (the sanitizer on marked's output), at the
exact versions package.json pins, each with its licence beside it. Run after changing a
version (`npm install --save-dev --save-exact marked@X`), then commit web/vendor/;
tests/web/test_vendored.py fails while the copies and the pins disagree.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "web" / "vendor"
# package -> (the module file in the package, its licence files). Each module is written
# as `<package>.js`: every static host serves .js as JavaScript, which module scripts need.
MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "marked": ("lib/marked.esm.js", ("LICENSE",)),
    "dompurify": ("dist/purify.es.mjs", ("LICENSE", "LICENSE-MPL")),
}


def pinned() -> dict[str, str]:
    """The exact version package.json pins for each vendored package."""
    dev = json.loads((ROOT / "package.json").read_text())["devDependencies"]
    return {name: dev[name] for name in MODULES}


def copies() -> list[tuple[Path, Path]]:
    """(source in node_modules, target in web/vendor) for every vendored file."""
    pairs = []
    for name, (module, licences) in MODULES.items():
        package = ROOT / "node_modules" / name
        pairs.append((package / module, VENDOR / name / f"{name}.js"))
        for relative in licences:
            pairs.append((package / relative, VENDOR / name / Path(relative).name))
    return pairs


def main() -> int:
    for name, version in pinned().items():
        installed = json.loads((ROOT / "node_modules" / name / "package.json").read_text())
        if installed["version"] != version:
            print(f"{name}: node_modules has {installed['version']}, package.json pins {version}")
            return 1
    for source, target in copies():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    lines = ["# Vendored browser modules (scripts/vendor_web.py writes this folder)", ""]
    lines += [f"- `{name}` {version}: `{name}/`" for name, version in pinned().items()]
    (VENDOR / "README.md").write_text("\n".join(lines) + "\n")
    print(f"vendored {', '.join(pinned())} into {VENDOR.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
