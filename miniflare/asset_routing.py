"""Which static file a request path names, as Workers static assets decide by default.

Workers assets' default `html_handling` is "auto-trailing-slash": a file `page.html` is
served at `/page`, a folder's `index.html` at `/folder/`, and every other spelling of
either is a 307 to that canonical path (query kept): `/page.html`, `/page/`,
`/folder`, `/folder/index.html`, `/folder/index`, `/index.html` → `/`. Any other file is
served at its own path. A path that names nothing goes to the worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Serve:
    """Serve this file (a path relative to the assets folder)."""

    relative: str


@dataclass(frozen=True)
class Redirect:
    """Answer 307 with this path (the canonical one) as the Location."""

    path: str


def _strip_suffix(path: str) -> str | None:
    """The path without its `index.html`, `index` or `.html` ending, if it has one."""
    for suffix in ("/index.html", "/index"):
        if path.endswith(suffix):
            return path[: -len(suffix)] + "/"
    if path.endswith(".html"):
        return path[: -len(".html")]
    return None


def _canonical(path: str, is_file: Callable[[str], bool]) -> str | None:
    """The canonical path of the HTML file `path` spells, or None when it names none."""
    bare = path.rstrip("/")
    if path.endswith("/") and is_file(f"{path}index.html".lstrip("/")):
        return path
    if bare and is_file(f"{bare}.html".lstrip("/")):
        return bare
    if is_file(f"{bare}/index.html".lstrip("/")):
        return f"{bare}/"
    return None


def route(path: str, is_file: Callable[[str], bool]) -> Serve | Redirect | None:
    """What the assets layer answers for `path` (decoded, starting with `/`)."""
    if not path.endswith("/") and not path.endswith(".html") and is_file(path.lstrip("/")):
        return Serve(path.lstrip("/"))
    stripped = _strip_suffix(path)
    canonical = _canonical(stripped if stripped is not None else path, is_file)
    if canonical is None:
        return None
    if canonical != path:
        return Redirect(canonical)
    if canonical.endswith("/"):
        return Serve(f"{canonical}index.html".lstrip("/"))
    return Serve(f"{canonical}.html".lstrip("/"))
