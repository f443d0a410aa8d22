"""Text a person will see as a label (thread titles): only what renders as what it is.

Removed on write, by Unicode class rather than by a list of examples:

- control characters (Cc: NUL, C0/C1 controls, DEL), replaced by a space;
- format characters (Cf): bidi embeddings, overrides and isolates (U+202A-202E,
  U+2066-2069), marks (U+200E/F, U+061C), zero-width space and word joiner, BOM,
  soft hyphen, invisible operators, interlinear annotations and the tag block
  (U+E0000-E007F, used to smuggle invisible text); ZWJ and ZWNJ stay, since
  scripts (Persian, Indic) and emoji sequences need them;
- surrogates, private-use characters and noncharacters;
- line and paragraph separators become spaces; runs of whitespace become one space;
- more than a few combining marks stacked on one base character.
"""

from __future__ import annotations

import unicodedata

_KEEP_FORMAT = {"\u200c", "\u200d"}  # ZWNJ, ZWJ
_DROP_CATEGORIES = {"Cf", "Cs", "Co"}
_MAX_COMBINING_RUN = 3


def _is_noncharacter(char: str) -> bool:
    code = ord(char)
    return 0xFDD0 <= code <= 0xFDEF or (code & 0xFFFE) == 0xFFFE


def clean_label(text: str) -> str:
    """The text with invisible, direction-changing and control characters removed."""
    out: list[str] = []
    combining = 0
    for char in text:
        category = unicodedata.category(char)
        if category in ("Cc", "Zl", "Zp"):
            out.append(" ")
            combining = 0
            continue
        if (category in _DROP_CATEGORIES and char not in _KEEP_FORMAT) or _is_noncharacter(char):
            continue
        if category.startswith("M"):
            combining += 1
            if combining > _MAX_COMBINING_RUN:
                continue
        else:
            combining = 0
        out.append(char)
    return " ".join("".join(out).split())


def has_visible_text(text: str) -> bool:
    """True when something other than spaces, joiners and marks is left."""
    return any(
        not c.isspace() and c not in _KEEP_FORMAT and not unicodedata.category(c).startswith("M")
        for c in text
    )
