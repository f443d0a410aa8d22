"""Feed search: BM25 relevance over title, body and mentioned tokens, newest first on ties.

Scoring is BM25F-style. Each item is one document whose fields count with a
weight (a word in the title counts TITLE_WEIGHT times, a mentioned token symbol
TOKEN_WEIGHT times, the body once). For each query term t:

    idf(t)   = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))      N items, n_t containing t
    tf(t, d) = sum over fields of weight * count of t in the field
    score   += idf(t) * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(d) / avg_len))

where len(d) is the weighted length. A query term that is the symbol of a token
mentioned anywhere in the feed counts SYMBOL_QUERY_BOOST times: a question
about an asset is about that asset first, not about the generic words around it.
Words are folded to a crude singular (trailing "s" dropped) on both sides.

The saturation (K1) keeps one word repeated ten times from beating an item that
mentions the query once in its title, and B keeps long bodies from winning by
sheer size. Items scoring zero are left out; equal scores are ordered by
published time, newest first.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from datetime import UTC, datetime

from albert.tools.platform_client import FeedHit, FeedItem, FeedSearchResult
from data_server.platform.data import parse_time

K1 = 1.2
B = 0.75
TITLE_WEIGHT = 2.0
BODY_WEIGHT = 1.0
TOKEN_WEIGHT = 3.0
SYMBOL_QUERY_BOOST = 2.0

_WORD = re.compile(r"[a-z0-9]+")
# Question words carry no topic; without this list "what is the market saying
# about aave" would match every item containing "the".
STOPWORDS = frozenset(
    "a an and are about as at be by did do does for from has have how i in is it its me "
    "of on or saying say says tell the their there this to was what whats when where "
    "which who why will with you".split()
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def terms(text: str) -> list[str]:
    """Lower-case alphanumeric words without stopwords, crudely singular."""
    return [_fold(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def _fold(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


class FeedIndex:
    """An in-memory BM25 index over feed items."""

    def __init__(self, items: list[FeedItem]) -> None:
        self._items = items
        self._tf: list[Counter[str]] = []
        self._len: list[float] = []
        self._df: Counter[str] = Counter()
        for item in items:
            tf: Counter[str] = Counter()
            for word in terms(item.title):
                tf[word] += TITLE_WEIGHT
            for word in terms(item.body or ""):
                tf[word] += BODY_WEIGHT
            for symbol in item.tokens:
                for word in terms(symbol):
                    tf[word] += TOKEN_WEIGHT
            self._tf.append(tf)
            self._len.append(sum(tf.values()))
            self._df.update(tf.keys())
        self._avg_len = (sum(self._len) / len(self._len)) if self._len else 1.0
        self._symbols = {w for item in items for symbol in item.tokens for w in terms(symbol)}

    def search(self, query: str, *, token: str | None = None, limit: int = 10) -> FeedSearchResult:
        """Items matching query (and mentioning token, when given), best first."""
        query_terms = list(dict.fromkeys(terms(query)))
        wanted = token.strip().upper() if token else None
        n = len(self._items)
        scored: list[tuple[float, datetime, FeedItem]] = []
        for i, item in enumerate(self._items):
            if wanted and not self._mentions(i, item, wanted):
                continue
            score = 0.0
            tf = self._tf[i]
            norm = K1 * (1 - B + B * self._len[i] / self._avg_len)
            for t in query_terms:
                f = tf.get(t, 0.0)
                if not f:
                    continue
                df = self._df[t]
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                boost = SYMBOL_QUERY_BOOST if t in self._symbols else 1.0
                score += boost * idf * f * (K1 + 1) / (f + norm)
            if score > 0 or (wanted and not query_terms):
                scored.append((score, parse_time(item.published_at) or _EPOCH, item))
        scored.sort(key=lambda s: (s[0], s[1]), reverse=True)
        hits = [FeedHit(item=item, score=round(score, 4)) for score, _, item in scored[:limit]]
        return FeedSearchResult(query=query, token=wanted, total_matches=len(scored), hits=hits)

    def _mentions(self, i: int, item: FeedItem, symbol: str) -> bool:
        if symbol in (t.upper() for t in item.tokens):
            return True
        return self._tf[i].get(symbol.lower(), 0.0) > 0
