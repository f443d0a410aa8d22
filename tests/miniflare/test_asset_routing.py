"""Workers assets' default html_handling ("auto-trailing-slash"), on a tree with every case.

The cases `web/` has are checked against workerd itself in
tests/conformance/test_static_assets.py; this table holds the rest of Cloudflare's
documented behaviour (a page file beside a folder with an index).
"""

from __future__ import annotations

import pytest

from miniflare.asset_routing import Redirect, Serve, route

FILES = {"index.html", "page.html", "folder/index.html", "css/app.css", "README.md"}


def is_file(relative: str) -> bool:
    return relative in FILES


@pytest.mark.parametrize(
    ("path", "answer"),
    [
        ("/", Serve("index.html")),
        ("/index.html", Redirect("/")),
        ("/index", Redirect("/")),
        ("/page", Serve("page.html")),
        ("/page.html", Redirect("/page")),
        ("/page/", Redirect("/page")),
        ("/folder", Redirect("/folder/")),
        ("/folder/", Serve("folder/index.html")),
        ("/folder/index.html", Redirect("/folder/")),
        ("/folder/index", Redirect("/folder/")),
        ("/folder.html", Redirect("/folder/")),
        ("/css/app.css", Serve("css/app.css")),
        ("/README.md", Serve("README.md")),
        ("/css/", None),
        ("/css", None),
        ("/missing.html", None),
        ("/missing", None),
        ("/css/app.css/", None),
    ],
)
def test_each_spelling_is_served_redirected_or_left_to_the_worker(path, answer) -> None:
    assert route(path, is_file) == answer
