"""A new thread's title, made from its first question.

A list shows the start of each title, so a title made of the question's first words
("What are the best…") names every thread alike. The title keeps the question's own
words, without the opening that carries no subject, and ends at a word.
"""

from __future__ import annotations

import re
import unicodedata

MAX_TITLE_CHARS = 60

# Openings that say nothing of the subject. They are taken off one after another
# ("hi, can you show me the best…" → "best…"); a greeting only as one ("hello, …",
# "hi Albert …"): "Hello from Lisbon" is a subject.
_OPENINGS = (
    "please",
    "can you please",
    "could you please",
    "can you",
    "could you",
    "would you",
    "i'd like to know",
    "i would like to know",
    "i want to know",
    "i'd like",
    "i would like",
    "i want",
    "tell me about",
    "tell me",
    "show me",
    "give me",
    "find me",
    "list",
    "what are the",
    "what are",
    "what is the",
    "what is",
    "what's the",
    "whats the",
    "what's",
    "whats",
    "which are the",
    "which is the",
    "the",
)
_LONGEST_FIRST = sorted(_OPENINGS, key=len, reverse=True)
_OPENING = re.compile(
    r"^(?:" + "|".join(map(re.escape, _LONGEST_FIRST)) + r")\b[\s,:;!.-]*", re.IGNORECASE
)
_GREETING = re.compile(
    r"^(?:(?:hi|hey|hello)\s*[,:;!.-]+|(?:(?:hi|hey|hello)\s+)?albert\b[,:;!.-]*)\s*",
    re.IGNORECASE,
)
_TRAILING = re.compile(r"[\s?!.,;:？！。、؟*_~\"'”’»]+$")
# Quote and markdown marks before the words ("> ", "# ", "**", a bullet, a quote).
_LEADING_MARKS = re.compile(r"^(?:[#>*_~\"'“”„‘’«»]+|[-+](?=\s)|\s+)+")
# Invisible characters a pasted question may carry: controls, zero-width spaces, byte
# order marks and direction overrides. Joiners stay: they are part of emoji and scripts.
_KEPT_FORMATS = {"\u200c", "\u200d"}


def _visible(text: str) -> str:
    return "".join(
        ch
        for ch in text
        if ch.isspace()
        or unicodedata.category(ch) not in ("Cc", "Cf")
        or ch in _KEPT_FORMATS
        or "\U000e0020" <= ch <= "\U000e007f"  # the tags of a flag emoji
    )


def title_from_question(text: str, limit: int = MAX_TITLE_CHARS) -> str:
    """The title of a thread whose first question is `text` ("" when it has no words)."""
    words = " ".join(_visible(text).split())
    subject = _LEADING_MARKS.sub("", words)
    for _ in range(len(_OPENINGS)):
        shorter = _GREETING.sub("", _OPENING.sub("", subject, count=1), count=1)
        if shorter == subject:
            break
        subject = shorter
    # A question that is only an opening ("hi", "what is") keeps its own words.
    title = _TRAILING.sub("", subject) or _TRAILING.sub("", words) or words
    if len(title) > limit:
        cut = title[: limit - 1]
        space = cut.rfind(" ")
        # At a word when one ends in the second half; a long token (an address) is cut.
        title = (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:-") + "…"
    first = title.split(" ", 1)[0]
    # "best yields" → "Best yields", but a mixed-case ticker ("stETH") keeps its case.
    head = title[:1].title()
    return head + title[1:] if first.islower() and len(head) == 1 else title
