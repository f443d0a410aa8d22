"""Write web/favicon.ico from web/favicon.svg: headless Chromium draws the SVG at 32 and 16 px,
and the PNGs go into one ICO file (PNG entries, as every current browser reads them).

Run after changing the SVG: `uv run python scripts/make_favicon.py`.
"""

from __future__ import annotations

import struct
from pathlib import Path

from playwright.sync_api import sync_playwright

WEB = Path(__file__).resolve().parents[1] / "web"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SIZES = (32, 16)


def render(svg: str, size: int) -> bytes:
    """The SVG as a `size`×`size` PNG with a transparent background."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": size, "height": size})
            page.set_content(
                "<style>html,body{margin:0;background:transparent}svg{display:block}</style>"
                + svg.replace("<svg ", f'<svg width="{size}" height="{size}" ', 1)
            )
            return page.screenshot(
                omit_background=True, clip={"x": 0, "y": 0, "width": size, "height": size}
            )
        finally:
            browser.close()


def ico(pngs: list[tuple[int, bytes]]) -> bytes:
    """An ICO file holding each (size, PNG) as one entry."""
    header = struct.pack("<HHH", 0, 1, len(pngs))
    offset = len(header) + 16 * len(pngs)
    entries, images = b"", b""
    for size, png in pngs:
        entries += struct.pack("<BBBBHHII", size % 256, size % 256, 0, 0, 1, 32, len(png), offset)
        images += png
        offset += len(png)
    return header + entries + images


def main() -> None:
    svg = (WEB / "favicon.svg").read_text()
    (WEB / "favicon.ico").write_bytes(ico([(size, render(svg, size)) for size in SIZES]))
    print(f"wrote {WEB / 'favicon.ico'}")


if __name__ == "__main__":
    main()
