"""Questions that point into the previous answer's vaults: "how risky is the first one?".

A follow-up that refines the previous question's conditions is merged into it
(demo_planner.followups); one that points at a vault an earlier answer listed ("the
second one", "its history", "that vault's yield") is read with that vault's id in place of
the words that pointed, so it is planned as if the user had named the vault. The vaults are
read from the latest earlier turn's own tool results that listed some (a page of vaults, in
its order), never from the answer's text: a model's answer may word them otherwise.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from albert.ai.model import ChatMessage
from albert.ai.untrusted import unfenced
from demo_planner.text import VAULT_ID
from demo_planner.vault_table import read_page

_ORDINALS = {
    "first": 1, "1st": 1, "top": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3,
    "fourth": 4, "4th": 4, "fifth": 5, "5th": 5, "sixth": 6, "6th": 6, "seventh": 7,
    "7th": 7, "eighth": 8, "8th": 8, "ninth": 9, "9th": 9, "tenth": 10, "10th": 10,
    "last": -1,
}  # fmt: skip
_ORDINAL = "|".join(sorted(_ORDINALS, key=len, reverse=True))
_POINTER = re.compile(
    rf"\b(?:the\s+)?(?P<ordinal>{_ORDINAL})\s+(?:one|vault|pool|result)(?:'s)?\b"
    rf"|\b(?:the\s+)?(?P<bare>{_ORDINAL})(?=\s*(?:\?|$))"
    r"|\b(?:that|this)\s+(?:one|vault|pool)(?:'s)?\b"
    r"|\b(?P<it>its|it)\b",
    re.IGNORECASE,
)


# "its history?", "how risky is it?": a bare "it" points back only in a short question.
_IT_WORDS = 6
# How many earlier turns are searched for the vaults a question points into.
_TURNS_BACK = 4


class Pointed(NamedTuple):
    """A question read with the vault it pointed at named by its id."""

    question: str
    words: str  # the words that pointed ("the first one")
    vault: str  # the vault's name, as the results gave it
    shown: str  # the question with the vault's name in place of the words, for the reader


def point_into(question: str, messages: list[ChatMessage]) -> Pointed | None:
    """The question with the vault it points at named, or None when it points at none."""
    if VAULT_ID.search(question):
        return None
    found = _POINTER.search(question)
    if found is None:
        return None
    if found["it"] and len(question.split()) > _IT_WORDS:
        return None  # "it" in a longer question may mean anything it names itself
    rows = previous_vaults(messages)
    if not rows:
        return None
    word = (found["ordinal"] or found["bare"] or "").lower()
    place = _ORDINALS.get(word, 1)
    index = len(rows) - 1 if place == -1 else place - 1
    if index >= len(rows):
        return None
    name, vault_id = rows[index]
    said = found.group(0)
    return Pointed(
        question=question[: found.start()] + vault_id + question[found.end() :],
        words=said,
        vault=name,
        shown=question[: found.start()] + name + question[found.end() :],
    )


def previous_vaults(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    """The vaults (name, id) of the latest earlier turn whose results listed vaults, in
    their order ("the first one", then "the second one's history" both point into it)."""
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    for turn in range(len(users) - 2, max(len(users) - 2 - _TURNS_BACK, -1), -1):
        rows: list[tuple[str, str]] = []
        for message in messages[users[turn] + 1 : users[turn + 1]]:
            if message.role != "tool":
                continue
            page = read_page(unfenced(message.content))
            if page is not None:
                rows += [(row.name, row.vault_id) for row in page.rows]
        if rows:
            return rows
    return []
