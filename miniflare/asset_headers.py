"""The `_headers` file of a static assets folder, applied as Workers static assets do.

Blocks of a URL pattern (a path; `*` matches anything, including `/`) followed by
indented `Name: value` lines; `#` starts a comment. Every block whose pattern
matches a request's path adds its headers. The file itself is never served.
"""

from __future__ import annotations

import re
from pathlib import Path

CONFIG_FILES = frozenset({"_headers", "_redirects", ".assetsignore"})


class HeaderRules:
    """Parsed `_headers` rules of one assets folder."""

    def __init__(self, rules: list[tuple[re.Pattern[str], dict[str, str]]]) -> None:
        self._rules = rules

    @classmethod
    def load(cls, assets_dir: Path | None) -> HeaderRules:
        """The folder's rules (none without a `_headers` file)."""
        path = assets_dir / "_headers" if assets_dir is not None else None
        if path is None or not path.is_file():
            return cls([])
        return cls.parse(path.read_text())

    @classmethod
    def parse(cls, text: str) -> HeaderRules:
        """Rules from the file's text; a header line before any pattern is an error."""
        rules: list[tuple[re.Pattern[str], dict[str, str]]] = []
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.split("#", 1)[0].rstrip() if raw.lstrip().startswith("#") else raw.rstrip()
            if not line.strip():
                continue
            if not line[0].isspace():
                pattern = "^" + ".*".join(re.escape(part) for part in line.strip().split("*")) + "$"
                rules.append((re.compile(pattern), {}))
                continue
            name, sep, value = line.strip().partition(":")
            if not sep or not rules:
                raise ValueError(f"_headers line {number}: expected 'Name: value' under a path")
            rules[-1][1][name.strip().lower()] = value.strip()
        return cls(rules)

    def for_path(self, path: str) -> dict[str, str]:
        """The headers every matching rule adds, later rules winning a repeated name."""
        out: dict[str, str] = {}
        for pattern, headers in self._rules:
            if pattern.match(path):
                out.update(headers)
        return out
