"""Messages that ask for nothing to be looked up: greetings, thanks, goodbyes, "who are you".

A message is small talk when it carries nothing a tool could take (no number, address,
ticker, name, chain or field, no word of a question's subject) and says something social:
a greeting, thanks or praise, a goodbye, a laugh, a yes, or a question about the assistant
itself. What it says is read from its words as a whole, so "cheers mate, legend", "much
appreciated 🙏" and "gm fren" are recognised like "thanks" and "hi". Each gets a short
reply of its own, never the help text's "I could not match that question".
"""

from __future__ import annotations

import re
from typing import Literal

from demo_planner import vocabulary as voc
from demo_planner.text import phrase_tokens

Kind = Literal["thanks", "greeting", "farewell", "identity", "wellbeing", "agree"]
_WORD = re.compile(r"[a-z']+")
_EMOJI = re.compile(r"[\U0001F300-\U0001FAFF\u2600-\u27BF]")
_PHRASES = {
    kind: sorted({phrase_tokens(p) for p in phrases}, key=len, reverse=True)
    for kind, phrases in voc.SOCIAL_PHRASES.items()
}
# Which kind answers a message that says several things ("thanks, bye!" says goodbye).
_ORDER: tuple[Kind, ...] = ("identity", "wellbeing", "farewell", "thanks", "greeting", "agree")


def small_talk(message: str, *, asks_for_data: bool) -> Kind | None:
    """What a social message says, or None when it asks for something (`asks_for_data`:
    the reading found anything a tool could take)."""
    if asks_for_data:
        return None
    lowered = message.lower().replace("\u2019", "'")
    words = _WORD.findall(lowered)
    if not words:
        return "thanks" if _EMOJI.search(message) else None
    if len(words) > 12:
        return None
    found: set[Kind] = set()
    covered: set[int] = set()
    for kind in _ORDER:
        for phrase in _PHRASES[kind]:
            n = len(phrase)
            for i in range(len(words) - n + 1):
                if tuple(words[i : i + n]) == phrase:
                    found.add(kind)
                    covered |= set(range(i, i + n))
    if not found:
        return None
    rest = [w for i, w in enumerate(words) if i not in covered]
    if any(w not in voc.SOCIAL_FILLER for w in rest):
        return None
    return next(k for k in _ORDER if k in found)


def reply(kind: Kind, examples: list[str], previous: str | None) -> list[str]:
    """The lines of the reply to a social message (`examples`: questions the tools offered
    now can answer; `previous`: the last question answered, if any)."""
    if kind == "identity":
        lines = [
            "I'm Albert's assistant, running here without a language model: I read your "
            "question, call the data tools and answer only from what they return. I can look "
            "up tokens, addresses, vaults and yields, wallets and the news feed, for example:",
            *[f"- {e}" for e in examples],
        ]
    elif kind == "wellbeing":
        lines = ["All good here, thanks for asking. What would you like me to look up?"]
    elif kind == "farewell":
        lines = ["Bye for now. Come back any time you want something checked."]
    elif kind == "greeting":
        lines = ["Hi! Ask me about a token, an address, vaults and yields, or a wallet, e.g.:"]
        lines += [f"- {e}" for e in examples[:3]]
    elif kind == "agree":
        lines = ["Noted. Anything else you'd like me to look up?"]
    else:
        lines = ["Glad to help. Ask me anything else about tokens, addresses, vaults or wallets."]
    if previous and kind in ("thanks", "agree"):
        lines += [
            "",
            "To change your previous question, name only what to change, for example "
            "“and on base?” or “what about Aave?”.",
        ]
    return lines
