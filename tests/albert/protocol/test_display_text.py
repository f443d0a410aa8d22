"""Labels keep no control, format (bidi, invisible) or separator character, by class."""

from __future__ import annotations

import sys
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from albert.protocol.display_text import clean_label, has_visible_text

FORBIDDEN = {"Cc", "Cs", "Co", "Zl", "Zp"}
JOINERS = {"\u200c", "\u200d"}


def _every_char_of(categories: set[str]) -> list[str]:
    return [
        chr(c)
        for c in range(sys.maxunicode + 1)
        if unicodedata.category(chr(c)) in categories and chr(c) not in JOINERS
    ]


def test_every_format_and_control_character_is_removed() -> None:
    # The whole classes, not a list of examples: all of Cc, Cf (but the joiners), Co.
    hostile = [*_every_char_of({"Cc", "Cf"}), chr(0xE000), chr(0xF8FF), chr(0x10FFFD)]
    for chunk in range(0, len(hostile), 500):
        text = "a" + "".join(hostile[chunk : chunk + 500]) + "b"
        cleaned = clean_label(text)
        assert cleaned.replace(" ", "") == "ab", [hex(ord(c)) for c in cleaned]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(), max_size=80))
def test_cleaned_labels_hold_nothing_forbidden_and_cleaning_twice_changes_nothing(
    text: str,
) -> None:
    cleaned = clean_label(text)
    for char in cleaned:
        category = unicodedata.category(char)
        assert category not in FORBIDDEN, hex(ord(char))
        assert category != "Cf" or char in JOINERS, hex(ord(char))
    assert cleaned == cleaned.strip() and "  " not in cleaned
    assert clean_label(cleaned) == cleaned


def test_stacked_combining_marks_are_capped_and_invisible_text_is_blank() -> None:
    assert clean_label("Z" + "\u0336" * 50) == "Z" + "\u0336" * 3
    assert not has_visible_text(clean_label("\u200d\u0301 \u200c"))
    assert has_visible_text(clean_label("\u202eok"))
