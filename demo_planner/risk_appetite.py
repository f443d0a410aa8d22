"""How much risk a question accepts, said in words: "nothing sketchy", "somewhere safe",
"not too risky", "degen plays".

The words are read by their structure: a risky word under a negation ("nothing sketchy",
"no degen stuff", "not too risky", "avoid anything dodgy") caps the risk rating at medium;
a request for safety as a quality of what is asked for ("somewhere safe", "play it safe",
"conservative", "blue chip") caps it at low; a bold one ("degen", "aggressive") sets no
cap. A yes/no question about one thing ("is it safe?", "how risky is X?") asks for a
judgement, not a level, and is left to the risk analysis. The level goes to the vault
tools' highest-acceptable-rating field and is said back to the user.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from demo_planner import vocabulary as voc
from demo_planner.negation import negator_at
from demo_planner.text import phrase_tokens

Level = Literal["low", "medium", "high"]
_SAFE = sorted({phrase_tokens(p) for p in voc.SAFE_APPETITE}, key=len, reverse=True)
_BOLD = sorted({phrase_tokens(p) for p in voc.BOLD_APPETITE}, key=len, reverse=True)
# Words between a negator and the risky word ("nothing too risky", "avoid anything dodgy").
_DEGREE = frozenset("too that very super overly anything any the a".split())
_QUESTION_START = frozenset({"is", "are", "was", "were", "does", "do", "would", "will", "can"})


@dataclass(frozen=True)
class Appetite:
    """The risk level a question accepts, and the words that said it."""

    level: Level
    text: str
    start: int
    end: int

    def said_back(self) -> str:
        """The level as the answer repeats it."""
        if self.level == "high":
            return (
                f"Read “{self.text}” as no cap on risk: every risk rating is listed, each "
                "with its rating."
            )
        return f"Read “{self.text}” as a risk rating of at most {self.level}."


def read_appetite(words: list[str], texts: list[str]) -> Appetite | None:
    """The risk level the question accepts, if it says one."""
    if _judgement(words):
        return None
    for i in range(len(words)):
        span = negator_at(words, i)
        if not span:
            continue
        j = i + span
        while j < len(words) and words[j] in _DEGREE:
            j += 1
        if j < len(words) and words[j] in voc.RISKY_WORDS:
            end = j + (1 if j + 1 < len(words) and words[j + 1] in ("stuff", "plays") else 0)
            return Appetite("medium", " ".join(texts[i : end + 1]), i, end)
    asked: list[tuple[list[tuple[str, ...]], Level]] = [(_SAFE, "low"), (_BOLD, "high")]
    for phrases, level in asked:
        for i in range(len(words)):
            for phrase in phrases:
                n = len(phrase)
                if tuple(words[i : i + n]) == phrase and not _negated(words, i):
                    shown = [t for t in texts[i : i + n] if t != ","]
                    return Appetite(level, " ".join(shown), i, i + n - 1)
    return None


def _judgement(words: list[str]) -> bool:
    """'is it safe?', 'how risky is the top vault?': a judgement of one thing."""
    if not words:
        return False
    if words[0] == "how" and len(words) > 1 and words[1] in ("safe", "risky", "secure"):
        return True
    if len(words) > 1 and words[1] == "there":
        return False  # "is there anything safe…": asks for options
    return words[0] in _QUESTION_START and bool(set(words) & {"safe", "risky", "secure"})


def _negated(words: list[str], i: int) -> bool:
    return any(negator_at(words, k) for k in range(max(0, i - 2), i))
