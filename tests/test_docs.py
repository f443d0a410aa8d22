"""The README is the front door (short, linking the docs/ pages), and every link resolves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "web" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(title: str) -> str:
    """GitHub's anchor for a header."""
    text = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", text, flags=re.M)}


def test_the_readme_is_short_and_links_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 350
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{page.name}" in readme, f"{page.name} is not linked from the README"


def test_every_relative_link_and_anchor_resolves() -> None:
    broken: list[str] = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in LINK.findall(text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such header)")
    assert broken == []


TEST_FILE = re.compile(r"`(tests/[\w/.-]+\.py)(?:::\w+)?`")


def test_every_test_file_the_docs_name_exists() -> None:
    # A doc pointing at a test that was moved or never written tells the reader nothing.
    # The performance history tells of earlier states, with tests of theirs since gone.
    missing = [
        f"{page.relative_to(ROOT)}: {name}"
        for page in PAGES
        if page.name != "performance-history.md"
        for name in TEST_FILE.findall(page.read_text())
        if not (ROOT / name).exists()
    ]
    assert missing == []
