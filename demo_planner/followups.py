"""Follow-up questions: "and on base?" read as the previous question with the new parts.

A model reads a conversation, not one message; the planner does the same from the messages
it is given. It re-resolves the chain of user messages in the history (oldest first, the
last few only): each message that reads as a refinement of the question before it is merged
into that (resolved) question, any other message starts a new chain. Why re-resolve rather
than read the planner's own earlier answer: the history keeps every user message, while an
answer may be cut, left out (an interrupted turn) or written by a model, so the user's own
words are the one record every turn has.

A refinement names parts only (conditions, a chain, a protocol or asset, an address, a
count, a sort, a window) and no subject of its own: no cue word left over once the parts
are read ("tokens", "wallet", "risk"), and nothing but follow-up filler around the parts
("and", "what about", "only", "instead"). Merging is done on the question's text, so the
result reads exactly as if the user had written it in one sentence: a part of a kind the
previous question already has replaces it in place (a new chain, a new bound on the same
field and side, another protocol, asset or address); a new kind is added at the end.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from albert.ai.model import ChatMessage
from demo_planner import vocabulary as voc
from demo_planner.names import candidates, protocol_matches
from demo_planner.reading import Reading
from demo_planner.text import ADDRESS, ENS_NAME, is_ticker_shaped

_ACK_WORD = re.compile(r"[a-z']+")
_ACK_REST = re.compile(r"[a-z'\s.,!?;:()\u2013\u2014-]")


def is_acknowledgement(message: str) -> bool:
    """True for a message that only thanks or agrees ("thanks, that's helpful!", "ok"),
    not a question ("ok?") and nothing else ("thanks, and on base?")."""
    lowered = message.lower().replace("\u2019", "'")
    words = _ACK_WORD.findall(lowered)
    return (
        0 < len(words) <= 8
        and "?" not in lowered
        and not _ACK_REST.sub("", lowered)
        and all(w in voc.ACKNOWLEDGEMENT_WORDS for w in words)
        and any(w in voc.ACKNOWLEDGEMENT_CORE for w in words)
    )


# How many user messages back a chain of follow-ups is re-read.
MAX_CHAIN = 8
# Cue lists that give a message a subject of its own ("tokens", "wallet", "risk").
SUBJECT_CUES = frozenset({"vault", "token_list", "protocol", "feed", "wallet", "history",
                          "risk", "yield_source", "judgement", "follow_token"})  # fmt: skip
_SORT_VERBS = ("sorted", "sort", "order", "ordered", "rank", "ranked")
_NEGATOR_WORDS = frozenset(w for n in voc.NEGATORS for w in n.split())


@dataclass(frozen=True)
class Part:
    """One part of a question that a follow-up may replace or add: its kind and its text."""

    key: tuple[str, ...]
    start: int  # characters in the question
    end: int
    text: str
    unit: str = ""
    side: str = ""
    value: str = ""  # a chain's slug


@dataclass
class FollowUp:
    """How a follow-up was read: the previous question, the merged one, what changed."""

    previous: str
    question: str
    changes: list[str] = field(default_factory=list)
    # The question as the answer shows it, when it differs from the one planned (a vault
    # named by its id for the tools is named by its name for the reader).
    shown: str = ""


def user_questions(messages: list[ChatMessage]) -> list[str]:
    """The user messages of the conversation, oldest first (the last MAX_CHAIN + 1)."""
    return [m.content for m in messages if m.role == "user"][-(MAX_CHAIN + 1) :]


def resolve_chain(
    questions: list[str],
    reader: Callable[[str], Reading],
    names: NameKinds,
    answerable: Callable[[str], bool],
) -> tuple[str | None, FollowUp | None]:
    """The previous question as resolved, and the last one merged with it (None when the
    last stands alone).

    `names` says which words are protocols or assets; `answerable` whether a
    (resolved) question leads to any tool call, so nothing is built on "thanks" or "why?".
    """
    if len(questions) < 2:
        return None, None
    resolved = questions[0]
    previous: str | None = None
    last: FollowUp | None = None
    for question in questions[1:]:
        previous = resolved if answerable(resolved) else None
        last = merge(previous, question, reader, names) if previous else None
        resolved = last.question if last else question
    return previous, last


def merge(
    previous: str,
    question: str,
    reader: Callable[[str], Reading],
    names: NameKinds,
) -> FollowUp | None:
    """The previous question with the refinement's parts applied, or None if it is not one."""
    reading = reader(question)
    parts = refinement_parts(reading, names)
    if parts is None:
        return None
    before = reader(previous)
    old = _parts(before, names)
    owners = [any(p.key == ("owner",) for p in group) for group in (parts, old)]
    if owners[0] and not owners[1]:
        return None  # an address after a vault question asks about the address
    entities = {p.key for p in old if p.key[0] in ("asset", "protocol")}
    if owners[1] and any(
        p.key[0] in ("asset", "protocol") and p.key not in entities for p in parts
    ):
        return None  # the wallet tools filter by no asset: "what about ETH?" asks about ETH
    edits: list[tuple[int, int, str]] = []
    added: list[Part] = []
    changes: list[str] = []
    taken: set[int] = set()
    compared = _compares_chains(before)
    for part in parts:
        if part.key == ("page",) and part.value[:1] in "+-":
            part = _page_after(part, old)
        if compared and part.key == ("chain", "False"):
            # "and optimism?" after "better on arbitrum or base?": one more side.
            added.append(dataclasses.replace(part, text=f"or {part.text}"))
            changes.append(f"“{part.text}” added as one more side")
            continue
        same = [i for i, p in enumerate(old) if i not in taken and _replaces(part, p)]
        if same:
            first = old[same[0]]
            edits.append((first.start, first.end, part.text))
            edits += [(old[i].start, old[i].end, "") for i in same[1:]]
            taken.update(same)
            replaced = " and ".join(f"“{old[i].text}”" for i in same)
            changes.append(f"“{part.text}” instead of {replaced}")
        else:
            added.append(part)
            changes.append(f"“{part.text}” added")
    text = previous
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    text = re.sub(r"\s+", " ", text).strip().rstrip("?.! ")
    for part in added:
        # A clause break keeps an added bound off the previous question's last field
        # ("TVL above $5M, above 10%"); a chain binds to nothing and reads better without.
        text += f" {part.text}" if part.key[0] == "chain" else f", {part.text}"
    text = text.rstrip("?.! ")
    return FollowUp(previous=previous.strip(), question=text, changes=changes)


def _compares_chains(reading: Reading) -> bool:
    """Whether a question weighs chains against each other ("USDC on arbitrum or base?")."""
    chains = [c for c, negated in reading.chains() if not negated]
    return len(chains) >= 2 and bool(set(reading.words) & voc.COMPARE_WORDS)


def _page_after(step: Part, old: list[Part]) -> Part:
    """'next page' after a question on page N (1 when it named none) asks page N + 1."""
    shown = next((int(p.value) for p in old if p.key == ("page",)), 1)
    page = max(1, shown + int(step.value))
    return Part(("page",), step.start, step.end, f"page {page}", value=str(page))


def refinement_parts(reading: Reading, names: NameKinds) -> list[Part] | None:
    """The parts of a message that is only a refinement, or None when it says more."""
    words = reading.words
    # A field's short name ("10% apy", "TVL over 5M") is a part; a noun that names a field
    # too ("yields over 15%") or that a flag or enum also reads ("vaults") is a subject.
    fields = set(reading.numbers.consumed) | {
        i
        for m in reading.mentions
        if m.kind not in ("flag", "enum")
        for i in range(m.start, m.end + 1)
        if words[i] in voc.FOLLOW_UP_FIELD_WORDS
    }
    # "just the ones yielding over 5%", "only the audited ones" point at the previous
    # results: their field and flag words are conditions on them, not a subject.
    if set(words) & voc.FOLLOW_UP_POINTERS:
        fields |= {i for m in reading.mentions for i in range(m.start, m.end + 1)}
    # "and over the last week?": a window's words ("last") are its own, no subject.
    fields |= {i for w in reading.dated() for i in w.tokens}
    # "previous page" steps through pages: "previous" there asks no history.
    for step in _page_step_parts(reading):
        fields |= {t.index for t in reading.tokens if step.start <= t.start and t.end <= step.end}
    subject = any(
        any(not set(range(s, e + 1)) <= fields for s, e in spans)
        for cue, spans in reading.cues.items()
        if cue in SUBJECT_CUES
    )
    if subject or reading.entities.vault_ids:
        return None
    parts = _parts(reading, names)
    if not parts:
        return None
    # Only the parts' own words count as read: "TVL of Pendle" asks a protocol's TVL.
    covered: set[int] = set(reading.numbers.consumed)
    for p in parts:
        covered |= {t.index for t in reading.tokens if p.start <= t.start and t.end <= p.end}
    left = [w for i, w in enumerate(words) if i not in covered]
    if any(w not in voc.FOLLOW_UP_FILLER for w in left):
        return None
    return parts


def _parts(reading: Reading, names: NameKinds) -> list[Part]:
    sorts, in_sort = _sort_parts(reading)
    found = [
        *sorts,
        *_mention_parts(reading),
        *_page_step_parts(reading),
        *_number_parts(reading, in_sort),
        *_name_parts(reading, names),
    ]
    # A word read twice ("best DAI yields": a sort and an asset) is one part, the first.
    out: list[Part] = []
    for part in found:
        if not any(p.start < part.end and part.start < p.end for p in out):
            out.append(part)
    return out


def _span(reading: Reading, start: int, end: int) -> tuple[int, int, str]:
    """Tokens start..end as a character span of the question and its text."""
    a, b = reading.tokens[start].start, reading.tokens[end].end
    return a, b, reading.question[a:b]


def _sort_parts(reading: Reading) -> tuple[list[Part], set[int]]:
    """'sorted by tvl', 'highest TVL': the order asked for, and the tokens it covers."""
    words = reading.words
    families = [m for m in reading.mentions if m.kind == "family"]
    out: list[Part] = []
    covered: set[int] = set()
    for m in sorted(reading.mentions, key=lambda m: m.start):
        end = m.end
        if m.kind in ("by", "superlative"):
            low = 1 if m.kind == "by" else 0
            after = [f for f in families if low <= f.start - m.end <= 3]
            if not after:
                continue
            end = after[0].end
        elif m.kind != "sort":
            continue
        start = m.start
        if start and words[start - 1] in _SORT_VERBS:
            start -= 1
        covered |= set(range(start, end + 1))
        out.append(Part(("sort",), *_span(reading, start, end)))
    return out, covered


def _mention_parts(reading: Reading) -> list[Part]:
    """Chains ('on base', 'not on bsc'), flags ('audited') and enum values ('single-asset')."""
    words = reading.words
    out: list[Part] = []
    for m in reading.mentions:
        if m.kind not in ("chain", "flag", "enum"):
            continue
        negated = m.start in reading.negated
        start = m.start
        if m.kind == "chain" and start and words[start - 1] in voc.CHAIN_PREPOSITIONS:
            start -= 1
        while negated and start and words[start - 1] in _NEGATOR_WORDS:
            start -= 1
        a, b, said = _span(reading, start, m.end)
        if m.kind == "chain":
            if start == m.start:
                said = f"on {said}"  # so it reads as a chain wherever it is put
            out.append(Part(("chain", str(negated)), a, b, said, value=m.key))
        else:
            out.append(Part((m.kind, m.key), a, b, said))
    return out


def _number_parts(reading: Reading, in_sort: set[int]) -> list[Part]:
    """Conditions with the field they name, counts ('top 3') and look-back windows."""
    words = reading.words
    families = [m for m in reading.mentions if m.kind == "family" and m.start not in in_sort]
    out: list[Part] = []
    for cond in reading.numbers.conditions:
        near = [m for m in families if m.gap(cond.start, cond.end) <= 2]
        named = min(near, key=lambda m: m.gap(cond.start, cond.end), default=None)
        start, end = cond.start, cond.end
        if named is not None:
            start, end = min(start, named.start), max(end, named.end)
        key = ("condition", named.key if named else "")
        out.append(Part(key, *_span(reading, start, end), unit=cond.unit, side=cond.side))
    for _, start, end in reading.numbers.counts:
        if start and words[start - 1] in ("top", "first", "best"):
            start -= 1
        out.append(Part(("count",), *_span(reading, start, end)))
    # Each time expression with a length, as written with its lead ("over the last week").
    for w in reading.dated():
        out.append(Part(("window",), *_span(reading, w.start, w.end)))
    if reading.numbers.page is not None and reading.numbers.page_span is not None:
        page = str(reading.numbers.page)
        out.append(Part(("page",), *_span(reading, *reading.numbers.page_span), value=page))
    return out


def _page_step_parts(reading: Reading) -> list[Part]:
    """'next page', 'show me more', 'the previous ones': a page relative to the last one
    (its value is the step, "+1" or "-1"; `merge` makes it a page number)."""
    words, taken = reading.words, reading.numbers.consumed
    for i, word in enumerate(words):
        if i in taken:
            continue
        nxt = words[i + 1] if i + 1 < len(words) else ""
        step, end = 0, i
        if word == "next" and nxt.isdigit():
            step, end = 1, i + 1  # "next 10": the next page of results
        elif word == "next" and nxt in ("", *voc.PAGE_STEP_NOUNS):
            step, end = 1, i + (nxt != "")
        elif word in ("previous", "prev") and nxt in ("", *voc.PAGE_STEP_NOUNS):
            step, end = -1, i + (nxt != "")
        elif word == "more" and nxt in ("", "please", *voc.PAGE_STEP_NOUNS):
            step, end = 1, i + (nxt not in ("", "please"))
        if step:
            return [Part(("page",), *_span(reading, i, end), value=f"{step:+d}")]
    return []


def _name_parts(reading: Reading, names: NameKinds) -> list[Part]:
    """Protocols and assets, addresses and ENS names."""
    out: list[Part] = []
    for cand in candidates(reading, names.known):
        kind = names.kind(reading, cand.index, cand.text)
        out.append(Part((kind, str(cand.negated)), *_span(reading, cand.index, cand.index)))
    for pattern in (ADDRESS, ENS_NAME):
        for found in pattern.finditer(reading.question):
            out.append(Part(("owner",), found.start(), found.end(), found.group(0)))
    return out


def _replaces(new: Part, old: Part) -> bool:
    """Whether a part of the refinement takes the place of one of the previous question."""
    if new.key[0] != old.key[0]:
        return False
    if new.key[0] == "chain" and new.value == old.value:
        return True  # "not on ethereum" after "on ethereum", and the other way round
    if new.key[0] != "condition":
        return new.key == old.key
    if new.key[1] and old.key[1]:
        same_field = new.key[1] == old.key[1]
    else:
        same_field = new.unit == old.unit
    sides = {new.side, old.side}
    return same_field and (len(sides) == 1 or bool(sides & {"range", "eq"}))


@dataclass(frozen=True)
class NameKinds:
    """What the planner knows of names: the protocol slugs and whether a word is an asset."""

    slugs: Callable[[], list[str]]
    is_asset: Callable[[str], bool]

    def known(self, word: str) -> bool:
        """A known protocol or asset, so a lowercase word ("what about morpho?") is a name."""
        return self.is_asset(word) or bool(protocol_matches([word], 0, self.slugs())[0])

    def kind(self, reading: Reading, index: int, word: str) -> str:
        """Protocol or asset: the index's word if it has one, else the word's shape
        (ticker-shaped words are assets first, name-shaped ones protocols first)."""
        if self.is_asset(word):
            return "asset"
        if protocol_matches([t.text for t in reading.tokens], index, self.slugs())[0]:
            return "protocol"
        return "asset" if is_ticker_shaped(reading.tokens[index].text) else "protocol"
