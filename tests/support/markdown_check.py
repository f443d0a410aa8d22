"""What a Markdown document would do in a viewer: raw HTML, images, links, by two renderers.

- markdown-it-py (CommonMark, with GFM tables and strikethrough), raw HTML on and every
  link scheme let through (a permissive viewer), read as tokens: exactly what the text
  makes, whatever a viewer would then filter;
- marked (the version the chat vendors, GFM) under the Node.js package.json brings,
  read as the HTML it writes.
"""

from __future__ import annotations

import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt

PROJECT_DIR = Path(__file__).resolve().parents[2]


NODE = PROJECT_DIR / "node_modules" / ".bin" / "node"
MARKED = PROJECT_DIR / "web" / "vendor" / "marked" / "marked.js"
# ftp: marked links a bare ftp:// URL itself (GFM autolinks); it runs nothing.
SAFE_SCHEMES = ("http", "https", "mailto", "ftp")
# What marked writes from Markdown alone (no raw HTML): anything else came from the text.
MARKED_TAGS = {
    "p", "br", "strong", "em", "del", "code", "pre", "blockquote", "hr", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "a", "table", "thead", "tbody", "tr", "th", "td",
    "input",
}  # fmt: skip


def permissive_parser() -> MarkdownIt:
    """markdown-it-py as a permissive viewer: raw HTML on, every link scheme let through."""
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.validateLink = lambda _url: True  # type: ignore[method-assign]
    return md


def unsafe_tokens(markdown: str) -> list[str]:
    """Raw HTML, images and links to other schemes the text makes (markdown-it-py)."""
    found: list[str] = []
    pending: list[Any] = list(permissive_parser().parse(markdown))
    while pending:
        token = pending.pop()
        if token.type in ("html_block", "html_inline"):
            found.append(f"raw HTML {token.content.strip()[:80]!r}")
        elif token.type == "image":
            found.append(f"image {token.attrGet('src')!r}")
        elif token.type == "link_open":
            href = str(token.attrGet("href") or "")
            if urlsplit(href).scheme.lower() not in SAFE_SCHEMES:
                found.append(f"link {href[:80]!r}")
        pending.extend(token.children or [])
    return found


def marked_html(texts: list[str]) -> list[str | None]:
    """Each text as the vendored marked renders it (GFM, as the chat configures it); None
    where marked throws (it does on some nestings of quotes in lists)."""
    script = (
        f"import {{ Marked }} from {json.dumps(MARKED.as_uri())};\n"
        "import { readFileSync } from 'node:fs';\n"
        "const texts = JSON.parse(readFileSync(0, 'utf8'));\n"
        "const marked = new Marked({ gfm: true, breaks: true, async: false });\n"
        "const render = (t) => { try { return marked.parse(t); } catch { return null; } };\n"
        "process.stdout.write(JSON.stringify(texts.map(render)));\n"
    )
    out = subprocess.run(
        [str(NODE), "--input-type=module", "-e", script],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=Path(PROJECT_DIR),
    )
    return list(json.loads(out.stdout))


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in MARKED_TAGS:
            self.found.append(f"tag <{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"handler {name}")
            if name in ("href", "src") and urlsplit(value or "").scheme.lower() not in SAFE_SCHEMES:
                self.found.append(f"{name} {str(value)[:80]!r}")

    def handle_comment(self, data: str) -> None:
        self.found.append("comment")


def unsafe_html(html: str | None) -> list[str]:
    """Tags marked does not write, handlers, and links or sources to other schemes."""
    if html is None:
        return []  # nothing rendered
    parser = _Tags()
    parser.feed(html)
    parser.close()
    return parser.found
