"""The planner's word lists and per-field synonym table: data only, no logic.

The lexicon (`lexicon.py`) is built from each offered tool's input schema (field names,
descriptions, enums, units); this module only adds what a schema cannot say: the other words
people use for a field ("mcap" for market cap, "IL" for impermanent loss), comparators,
number words, and which words are grammar rather than names. Keys of `FAMILY_SYNONYMS` are
field families: a schema field's name without its `min_`/`max_` prefix and unit suffix
(`min_market_cap_usd` → `market_cap`). A family no offered tool has is never bound to.

Kept as a Python module (not a JSON file) so that importing it reads no file: the worker's
memory snapshot forbids file reads at import.
"""

from __future__ import annotations

# --- fields ----------------------------------------------------------------------------

# Family → phrases that name it, besides the family's own words. Lowercase; a phrase is
# matched as whole tokens (the question is tokenised the same way), longest phrase first.
FAMILY_SYNONYMS: dict[str, tuple[str, ...]] = {
    "market_cap": (
        "market cap", "marketcap", "mcap", "market caps", "market capitalisation",
        "market capitalization", "valuation", "cap", "caps", "market value", "valued",
        "valued at", "worth", "value",
    ),
    "liquidity": (
        "liquidity", "liquid", "pool liquidity", "dex liquidity", "liquidity depth",
        "dex pool liquidity",
    ),
    "holders": (
        "holders", "holder", "holder count", "holder addresses", "holding addresses",
        "wallets holding it", "owners",
    ),
    "authenticity_score": (
        "authenticity", "authenticity score", "authenticity rating", "authentic",
        "legitimacy score", "genuineness",
    ),
    "vol_mcap_ratio": (
        "volume to market cap", "volume to market cap ratio", "volume/market cap",
        "volume / market cap", "vol / mcap", "vol/mcap", "volume to mcap", "volume/mcap",
        "turnover", "turnover ratio", "of market cap", "of its market cap", "of mcap",
        "of the market cap", "volume ratio", "vol mcap ratio", "volume-to-market-cap",
        "of their market cap", "of their mcap", "of its mcap", "of market capitalisation",
        "of market capitalization", "of their market capitalization", "times market cap",
        "times their market cap", "volume relative to market cap", "vol to mcap",
        # "twice their market cap", "half its mcap": a multiple of the token's own cap.
        "their market cap", "its market cap", "their mcap", "its mcap",
        "their market capitalization", "its market capitalization",
    ),
    "volume": (
        "volume", "trading volume", "24h volume", "daily volume", "vol", "traded volume",
    ),
    "price_change": (
        "price change", "price move", "change", "moved", "move", "performance",
    ),
    "rank": ("rank", "ranking", "ranked", "market cap rank", "token ranking", "token rank"),
    "apy": (
        "apy", "apr", "apys", "aprs", "yield", "yields", "yielding", "yielded", "return",
        "returns", "returning", "interest", "interest rate", "rate", "rates", "paying",
        "pays", "pay", "earning", "earns", "earn", "total apy", "annual yield",
        "annual percentage yield", "percentage yield", "rewards rate",
    ),
    "base_apy": (
        "base apy", "base yield", "base apr", "organic apy", "organic yield", "native yield",
        "base rate", "fee yield", "base return", "base returns",
    ),
    "reward_share": (
        "reward share", "reward apy share", "share of rewards", "rewards share",
        "reward-apy share", "share paid in rewards", "emissions share", "incentive share",
        "reward portion", "share from rewards", "rewards portion", "share of the apy from rewards",
        "share of yield from rewards", "reward apy", "rewards apy", "emissions", "rewards",
        "reward", "incentives", "reward tokens",
    ),
    "tvl": (
        "tvl", "total value locked", "value locked", "locked", "deposits", "deposited",
        "liquidity locked", "size", "aum", "assets under management",
    ),
    "security_score": (
        "security score", "security", "safety score", "security rating", "safety",
        "score",
    ),
    "audits": ("audits", "audit", "audit count", "known audits", "audit reports"),
    "protocol_age": (
        "protocol age", "age", "old", "older", "years old", "live", "running", "launched",
        "been around", "in operation", "track record",
    ),
    "value": ("value", "worth", "valued", "usd value", "dollar value", "size"),
    "updated": ("updated", "recently updated", "newest", "latest", "fresh", "update"),
}  # fmt: skip

# Direction words that name the price-change family and carry a sign.
PRICE_UP = (
    "up", "rose", "risen", "rise", "rising", "gained", "gain", "gains", "pumped", "pump",
    "rallied", "climbed", "jumped", "increased", "soared", "surged", "mooned", "green",
)  # fmt: skip
# Words before 'up'/'down' that make them a price move ("is up", "went down").
PRICE_VERBS = (
    "is",
    "are",
    "was",
    "were",
    "went",
    "gone",
    "been",
    "go",
    "moved",
    "trending",
    "tokens",
    "coins",
    "price",
    "prices",
    "been",
    "that",
    "which",
    "most",
    "biggest",
)
# Verbs that make 'up'/'down' part of another phrase ("make up", "break down").
PHRASAL_NOT_PRICE = (
    "make",
    "makes",
    "made",
    "making",
    "break",
    "breaks",
    "broken",
    "add",
    "adds",
    "sum",
    "sums",
    "set",
    "show",
    "pick",
    "narrow",
    "look",
    "split",
)
PRICE_DOWN = (
    "down", "fell", "fallen", "fall", "falling", "dropped", "drop", "drops", "lost", "lose",
    "dumped", "dump", "declined", "decline", "crashed", "crash", "tanked", "slid", "sank",
    "decreased", "plunged", "red", "bled",
)  # fmt: skip

# Boolean families: phrases that turn a flag on, and words that negate a phrase just
# before it ("no IL", "without impermanent loss", "non-stablecoin").
FLAG_SYNONYMS: dict[str, tuple[str, ...]] = {
    "stablecoin": (
        "stablecoin", "stablecoins", "stable", "stables", "stable coin", "stable coins",
        "stablecoin-only", "usd-pegged", "pegged", "stablecoin only",
    ),
    "il_risk": (
        "il", "impermanent loss", "il risk", "il exposure", "impermanent-loss",
        "impermanent loss risk", "il-risk",
    ),
    "audited": ("audited", "with audits"),
    "include_inactive": ("inactive", "paused", "retired", "eol", "deprecated", "closed"),
    "include_outliers": ("outlier", "outliers", "absurd", "implausible"),
}  # fmt: skip
FLAG_OFF_WORDS: dict[str, tuple[str, ...]] = {
    "audited": ("unaudited", "un-audited"),
    "il_risk": ("il-free", "no-il"),
    "stablecoin": ("volatile",),
}
NEGATORS = (
    "no", "not", "non", "without", "excluding", "exclude", "except", "avoid", "avoiding",
    "free", "zero", "never", "ignore", "minus", "but not", "other than", "nothing",
    "excluded", "except for", "ignoring", "skip", "skipping", "leave out", "leaving out",
    "drop", "dropping", "apart from", "aside from", "besides", "rather than", "instead of",
    "anything but", "everything but", "anything except", "everything except", "neither",
    "anywhere but", "anywhere except", "everywhere but", "everywhere except",
    "any chain but", "any chain except", "any protocol but", "any protocol except",
    "nor", "none of", "steer clear of", "stay away from", "keep away from", "nothing on",
    "nothing from", "not interested in", "no longer", "outside of", "lacking", "lacks",
    "w/o",
)  # fmt: skip
# Auxiliary verbs that negate with "n't" or "nt" glued on, with or without the apostrophe
# ("hasn't", "hasnt", "isnt", "dont").
AUXILIARIES = frozenset(
    """is are was were has have had do does did should would could must need ai wo ca""".split()
)
# What joins the items of a negated list ("excluding morpho and euler", "not on X or Y",
# "without Morpho/Euler").
LIST_JOINERS = (",", "and", "or", "nor", "/", "&", "+", "plus")
# Words between a negator and what it negates ("not on base", "hasn't ever been hacked",
# "skip anything unaudited", "none of the aave stuff").
NEGATION_FILLERS = (
    "the", "a", "an", "any", "anything", "on", "in", "from", "of", "to", "by", "at", "via",
    "with", "been", "being", "be", "ever", "yet", "got", "getting", "get", "vaults", "pools",
    "protocols", "chains", "ones", "stuff", "things", "farms", "projects", "platforms",
    "using", "touching", "involving", "including", "into", "through", "anywhere",
    # "I don't want anything on polygon", "I dont trust Euler"
    "want", "like", "trust", "need", "touch", "use", "see", "care", "about", "for",
)  # fmt: skip

# Enum fields: value → phrases (besides the value's own words).
ENUM_SYNONYMS: dict[str, dict[str, tuple[str, ...]]] = {
    "exposure": {
        "single": ("single asset", "single-asset", "single sided", "single-sided", "one asset"),
        "multi": (
            "multi asset", "multi-asset", "lp", "lps", "lp positions", "liquidity pool",
            "liquidity pools", "pair", "pairs", "multi-sided", "two assets",
        ),
    },
    "risk_rating": {
        "low": ("low risk", "low-risk", "lowest risk", "risk low", "risk rating low"),
        "medium": (
            "medium risk", "medium-risk", "moderate risk", "mid risk", "risk medium",
            "risk rating medium", "moderate-risk",
        ),
        "high": ("high risk", "high-risk", "risk high", "risk rating high"),
        "very_high": (
            "very high risk", "very-high risk", "very risky", "extreme risk", "risk very high",
        ),
    },
    "kind": {
        "vault": ("vault positions", "vault", "vaults", "yield positions", "vault holdings"),
        "token": (
            "token balances", "token positions", "plain balances", "tokens", "token",
            "balances",
        ),
    },
}  # fmt: skip

# Words that ask for an order, with the direction they imply.
SUPERLATIVES_DESC = (
    "highest", "top", "best", "most", "largest", "biggest", "greatest", "max", "maximum",
    "juiciest", "richest", "leading", "strongest", "deepest",
)  # fmt: skip
SUPERLATIVES_ASC = ("lowest", "least", "smallest", "fewest", "minimum", "cheapest", "weakest")
SORT_BY_WORDS = ("by", "sorted by", "sort by", "ranked by", "rank by", "ordered by", "order by")
# Single words that are a sort on their own: word → (family, direction).
SORT_WORDS: dict[str, tuple[str, str]] = {
    "safest": ("security_score", "desc"),
    "most secure": ("security_score", "desc"),
    "riskiest": ("security_score", "asc"),
    "least safe": ("security_score", "asc"),
    "gainers": ("price_change", "desc"),
    "gainer": ("price_change", "desc"),
    "winners": ("price_change", "desc"),
    "pumpers": ("price_change", "desc"),
    "losers": ("price_change", "asc"),
    "loser": ("price_change", "asc"),
    "dumpers": ("price_change", "asc"),
    "most traded": ("volume", "desc"),
    "most liquid": ("liquidity", "desc"),
    "most held": ("holders", "desc"),
    "most popular": ("holders", "desc"),
    "highest-yielding": ("apy", "desc"),
    "best-yielding": ("apy", "desc"),
    "top-yielding": ("apy", "desc"),
    "best paying": ("apy", "desc"),
    "juiciest": ("apy", "desc"),
    "newest": ("updated", "desc"),
}
# The family a size word sorts by, per family the tool has (first one it has wins).
SIZE_FAMILIES = ("tvl", "rank", "market_cap", "value")
SIZE_WORDS = ("largest", "biggest", "major", "main", "big", "giant", "heaviest")

# Price-change windows: phrase → enum value (the enum's own values match too).
WINDOWS: dict[str, str] = {
    "1h": "1h", "hour": "1h", "last hour": "1h", "past hour": "1h", "60 minutes": "1h",
    "hourly": "1h", "an hour": "1h",
    "24h": "24h", "24 hours": "24h", "24hr": "24h", "24hrs": "24h", "day": "24h",
    "today": "24h", "daily": "24h", "past day": "24h", "last day": "24h", "one day": "24h",
    "1d": "24h",
    "7d": "7d", "week": "7d", "7 days": "7d", "seven days": "7d", "weekly": "7d",
    "this week": "7d", "past week": "7d", "last week": "7d", "1w": "7d",
}  # fmt: skip

# --- numbers ---------------------------------------------------------------------------

MIN_COMPARATORS = (
    "above", "over", "more than", "greater than", "higher than", "bigger than", "larger than",
    "exceeding", "exceeds", "exceed", "in excess of", "north of", "at least", "no less than",
    "not less than", "minimum", "minimum of", "min", "starting at", "upwards of", "beyond",
    "better than", "topping", "not below", "not under", ">", ">=", "≥", "greater or equal to",
    "a minimum of", "at minimum", "min.", "atleast", "more then", "over than", "older than",
    "longer than", "no younger than",
)  # fmt: skip
MAX_COMPARATORS = (
    "under", "below", "less than", "fewer than", "lower than", "smaller than", "at most",
    "no more than", "not more than", "maximum", "maximum of", "max", "up to", "within",
    "beneath", "south of", "capped at", "not above", "not over", "<", "<=", "≤",
    "a maximum of", "at maximum", "max.", "less then", "no higher than", "no greater than",
    "no bigger than", "not exceeding", "shy of", "younger than", "newer than",
)  # fmt: skip
# Comparators that exclude the bound itself (matters for integer fields).
STRICT_COMPARATORS = (
    "above", "over", "more than", "greater than", "higher than", "bigger than", "larger than",
    "exceeding", "exceeds", "exceed", "in excess of", "north of", "beyond", "better than",
    "under", "below", "less than", "fewer than", "lower than", "smaller than", "beneath",
    "south of", ">", "<", "upwards of", "topping", "more then", "less then", "shy of",
    "older than", "younger than", "newer than", "longer than",
)  # fmt: skip
MIN_AFTER = (
    "+", "or more", "or higher", "or above", "or greater", "and up", "and above", "plus",
    "minimum", "at least", "or better", "and over", "or over", "or bigger", "or larger",
)  # fmt: skip
MAX_AFTER = (
    "or less", "or lower", "or below", "or fewer", "at most", "max", "tops", "maximum",
    "or under", "or smaller", "and under", "and below",
)  # fmt: skip
RANGE_WORDS = ("between",)
RANGE_FROM = ("from",)
RANGE_JOIN = ("and", "to", "-", "–", "—", "through", "till", "until")

MAGNITUDES: dict[str, float] = {
    "k": 1e3, "thousand": 1e3, "thousands": 1e3, "grand": 1e3,
    "m": 1e6, "mm": 1e6, "mn": 1e6, "mil": 1e6, "mill": 1e6, "million": 1e6, "millions": 1e6,
    "b": 1e9, "bn": 1e9, "billion": 1e9, "billions": 1e9,
    "t": 1e12, "tn": 1e12, "trillion": 1e12,
}  # fmt: skip
CURRENCY_WORDS = ("dollars", "dollar", "usd", "bucks", "usd worth")
PERCENT_WORDS = ("%", "percent", "per cent", "pct")
DURATION_DAYS: dict[str, float] = {
    "day": 1, "days": 1, "d": 1, "week": 7, "weeks": 7, "w": 7, "month": 30, "months": 30,
    "mo": 30, "year": 365, "years": 365, "yr": 365, "yrs": 365, "y": 365,
}  # fmt: skip
HOUR_WORDS = ("h", "hour", "hours", "hr", "hrs")

NUMBER_WORDS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "dozen": 12,
}  # fmt: skip
HUNDRED_WORDS = ("hundred", "hundreds")
FRACTIONS: dict[str, float] = {
    "half": 0.5, "a half": 0.5, "one half": 0.5, "a quarter": 0.25, "quarter": 0.25,
    "one quarter": 0.25, "a third": 1 / 3, "one third": 1 / 3, "two thirds": 2 / 3,
    "two-thirds": 2 / 3, "three quarters": 0.75, "three-quarters": 0.75, "a tenth": 0.1,
    "one tenth": 0.1, "a fifth": 0.2, "one fifth": 0.2, "majority": 0.5,
    # Multiples read the same way: "twice their market cap" is a ratio of 2.
    "twice": 2.0, "double": 2.0, "thrice": 3.0, "triple": 3.0,
}  # fmt: skip
# "a" counts as one before these ("a year old", "a million", "a hundred").
ONE_WORDS = ("a", "an", "one")

# Words before a number that make it a count of results, not a condition ("top 5").
COUNT_BEFORE = ("top", "first", "best", "largest", "biggest", "highest", "main", "leading")
COUNT_AFTER = (
    "largest", "biggest", "top", "best", "highest", "results", "vaults", "pools", "tokens",
    "coins", "positions", "holdings", "protocols", "items", "picks", "options", "farms",
    "lowest", "safest", "most",
)  # fmt: skip
PAGE_WORDS = ("page", "pg", "p.")
# A peg question names one token: its price and 24h range answer it, not a screen.
PEG_WORDS = frozenset({"peg", "pegged", "depeg", "depegged", "de-peg", "de-pegged", "depegging",
                       "unpegged", "parity"})  # fmt: skip
# "next page", "the next ones", "more results": a step through the previous answer's pages.
PAGE_STEP_NOUNS = ("page", "pages", "ones", "results", "result", "rows", "vaults", "tokens",
                   "pools")  # fmt: skip
# Words before "over N days" that make it a look-back window ("its history over 30 days").
WINDOW_LEADS = (
    "history", "trend", "trends", "chart", "performance", "evolution", "apy", "tvl", "change",
    "changes", "data", "series", "moves", "points", "returns", "yield", "performed", "changed",
    "evolved", "moved", "historical", "graph", "move", "yields", "apys", "rates", "rate",
    "did", "done", "doing",
)  # fmt: skip
# Words that make "over N years" an age ("protocols live for over 2 years").
AGE_WORDS = (
    "old", "older", "age", "aged", "live", "launched", "running", "around", "existed",
    "operating", "younger", "newer", "founded", "deployed",
)  # fmt: skip
# Look-back windows without a number ("over the last month"), in days.
DAY_WINDOWS: dict[str, int] = {
    "last month": 30, "past month": 30, "this month": 30, "a month": 30, "last week": 7,
    "past week": 7, "this week": 7, "a week": 7, "last year": 365, "past year": 365,
    "this year": 365, "a year": 365, "last quarter": 90, "past quarter": 90, "a quarter": 90,
    "ytd": 365, "last 24 hours": 1, "yesterday": 1,
}  # fmt: skip
# Spans named without a number ("last week", "a fortnight"), in days, for the history
# tool's window (`timeframes.py`).
NAMED_SPANS: dict[str, int] = {
    "last week": 7, "past week": 7, "this week": 7, "last month": 30, "past month": 30,
    "this month": 30, "last year": 365, "past year": 365, "this year": 365,
    "last quarter": 90, "past quarter": 90, "this quarter": 90, "fortnight": 14,
    "past few weeks": 21, "last few weeks": 21, "past few months": 90, "last few months": 90,
    "past few days": 7, "last few days": 7, "past couple of weeks": 14,
    "last couple of weeks": 14, "past couple weeks": 14, "last couple weeks": 14,
    "past couple of months": 60, "last couple of months": 60, "past couple months": 60,
    "last couple months": 60, "recent weeks": 21, "recent months": 90, "yesterday": 1,
    "last 24 hours": 1, "past 24 hours": 1, "past day": 1, "last day": 1,
    "all time": 365, "ytd": 0, "year to date": 0, "so far this year": 0,
    "since the start of the year": 0, "since the beginning of the year": 0,
    "since new year": 0,
}  # fmt: skip
# Words that introduce a named span ("over the last week", "during the past month").
SPAN_LEADS = (
    "over the", "in the", "for the", "within the", "during the", "across the", "over",
    "in", "for", "within", "during", "across",
)  # fmt: skip
# A span of 0 above runs from the first of January to today.
YEAR_TO_DATE = 0
# Words that start a window at a point in time ("since March", "from January 2026").
SINCE_WORDS = ("since", "from", "starting", "after")
MONTHS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11,
    "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
# Words that ask which way something moved: the history tool's trend, said in words.
TREND_PHRASES = (
    "up or down", "down or up", "going up", "going down", "rising or falling", "rising",
    "falling", "increasing", "decreasing", "increasing or decreasing", "trend", "trending",
    "trends", "direction", "improving", "getting better", "getting worse", "declining",
    "climbing", "holding up", "holding steady", "stable or", "trajectory", "moving", "move",
    "moved", "changed", "evolved", "shifted", "drifting", "creeping up", "dropping off",
    "higher or lower", "better or worse",
)  # fmt: skip
# Words that ask about the recent past without saying how long ("lately", "over time").
SOFT_WINDOWS = ("lately", "recently", "these days", "over time", "of late", "historically")
# Words before a duration that make it a look-back window, not a condition.
WINDOW_BEFORE = (
    "last",
    "past",
    "previous",
    "recent",
    "over the last",
    "over the past",
    "in the last",
    "in the past",
    "for the last",
    "for the past",
    "within the last",
)

# --- parts of a question ------------------------------------------------------------

# Words that open a clause of its own after "and", "but" or a sentence end (`clauses.py`).
CLAUSE_OPENERS = frozenset(
    """what what's whats how how's hows which where where's wheres who who's whos when why
    show give tell list find check compare analyze analyse get pull any anything""".split()
)
# Words that may follow an auxiliary as its subject ("and is it audited", "is there").
CLAUSE_SUBJECTS = frozenset("it its they them this that these those there i we you the".split())
# Words that end a clause, for finding where one starts ("…, and is it audited?").
CLAUSE_BREAK_WORDS = frozenset({",", ";", ":", "?", "!", ".", "and", "but", "or", "also"})
# Nouns that make a part about vaults: a later part with no subject of its own asks about
# the same vaults ("USDC vaults on base, how has the APY moved?").
VAULT_SUBJECT_NOUNS = frozenset(
    "vault vaults pool pools farm farms yield yields apy apr apys aprs strategy strategies".split()
)
# Nouns that give a part a subject of its own ("and the top gainers?").
LIST_SUBJECT_NOUNS = frozenset(
    "tokens coins stablecoins protocols gainers losers movers memecoins alts".split()
)
# A first part opening with these sets the scene for the next ("I have 50k USDC, where
# should I put it?"): one question, not two.
SCENE_OPENERS = frozenset("i i'm im i've ive my we we're we've got".split())

# --- what the platform cannot do -----------------------------------------------------

# Verbs that ask for a transaction when used as a request ("swap 1 ETH to USDC").
TRADE_VERBS = frozenset(
    """swap buy sell bridge send transfer convert exchange withdraw short long leverage trade
    execute ape dca stake deposit lend unstake claim harvest move shift""".split()
)
# Of those, the ones a vault search stands in for ("stake my ETH for me").
YIELD_ACTIONS = frozenset("stake deposit lend".split())
# Words after a trading verb that make it a noun ("swap fees", "buy pressure").
TRADE_NOUN_AFTER = frozenset(
    """fees fee pressure volume volumes wall walls signal signals side rate rates route
    routes count counts order orders activity tax taxes history data""".split()
)
# Words before a verb that make it a request to act ("can you buy", "I want to bridge").
REQUEST_LEADS = (
    "can you", "could you", "would you", "will you", "please", "pls", "help me",
    "i want to", "i'd like to", "id like to", "i wanna", "i need to", "how do i",
    "how can i", "let's", "lets", "go ahead and", "i want you to", "can u", "could u",
    "want to", "wanna",
)  # fmt: skip
# Of those, the ones that hand the action to the assistant: "how do I stake ETH" asks
# where, "can you stake my ETH" asks it done.
DELEGATION_LEADS = (
    "can you", "could you", "would you", "will you", "please", "pls", "help me",
    "go ahead and", "i want you to", "can u", "could u", "let's", "lets",
)  # fmt: skip
FORECAST_WORDS = frozenset(
    """predict predicts predicted prediction predictions forecast forecasts forecasting
    projection projections prognosis""".split()
)
# Moves a future tense asks about ("will ETH hit 10k", "is SOL going to pump").
FUTURE_MOVES = frozenset(
    """hit reach pump dump moon crash recover rise fall drop flip double triple 10x 100x
    2x up down higher lower rally break surpass exceed last stay hold survive dip tank
    climb increase decrease continue go worth price priced trade trading cost depeg depegs
    lose collapse fail""".split()
)
# What it costs to move funds: gas by another name ("fees to send ETH").
NETWORK_FEE_PHRASES = (
    "transaction fee", "transaction fees", "tx fee", "tx fees", "network fee",
    "network fees", "fee to send", "fees to send", "cost to send", "fees to transfer",
    "fee to transfer", "cost to transfer", "cost of sending", "sending fees", "gas cost",
    "gas costs",
)  # fmt: skip
ALERT_PHRASES = (
    "alert me", "notify me", "remind me", "ping me", "let me know when", "tell me when",
    "set an alert", "set alert", "set up an alert", "price alert", "notification",
    "notifications", "watch it for me", "keep an eye on", "email me", "text me",
)  # fmt: skip
GAP_REPLIES: dict[str, str] = {
    "trade": (
        "I can't make transactions: no swaps, trades, transfers, bridges or orders. I only "
        "read data, so nothing moves through me."
    ),
    "deposit": (
        "I can't deposit, stake or lend for you: I only read data. These are vaults you "
        "could use yourself:"
    ),
    "forecast": (
        "I can't predict prices or yields: no tool here sees the future, and I won't guess. "
        "This is where things stand now:"
    ),
    "gas": "I have no gas price data: none of my tools reads gas or network fees.",
    "alert": "I can't set alerts or watch anything for you: I only answer when you ask.",
    "advice": "Whether to buy or sell is your call; this is what the data says:",
}
# Other things no tool covers, with the plain answer.
OTHER_GAPS: dict[str, str] = {
    "nft floor": "I have no NFT data: floor prices and collections are not in my tools.",
    "floor price": "I have no NFT data: floor prices and collections are not in my tools.",
    "order book": "I have no order book data: my tools read token snapshots, not exchanges.",
    "funding rate": "I have no derivatives data: funding rates and open interest are not in "
    "my tools.",
    "funding rates": "I have no derivatives data: funding rates and open interest are not in "
    "my tools.",
    "liquidation price": "I can't work out liquidation prices: my tools read no loan positions.",
    "taxes": "I can't help with taxes: my tools read market and on-chain data only.",
    "tax": "I can't help with taxes: my tools read market and on-chain data only.",
}

# --- small talk ---------------------------------------------------------------------

SOCIAL_PHRASES: dict[str, tuple[str, ...]] = {
    "thanks": (
        "thanks", "thank you", "thank u", "thankyou", "thx", "ty", "tysm", "tyvm", "cheers",
        "appreciate it", "appreciated", "much appreciated", "appreciate that", "legend",
        "you're a legend", "youre a legend", "you rock", "you're the best", "youre the best",
        "great job", "nice one", "good job", "well done", "awesome", "amazing", "brilliant",
        "perfect", "excellent", "wonderful", "fantastic", "superb", "lovely", "helpful",
        "very helpful", "super helpful", "useful", "that helps", "that helped", "great",
        "nice", "cool", "sweet", "neat", "good stuff", "great stuff", "top notch", "kudos",
        "props", "bless", "ta", "merci", "gracias", "danke", "goat", "the goat", "based",
        "love it", "love this", "love you", "big thanks", "many thanks", "thanks a lot",
        "obliged", "much obliged", "nice work", "good work", "great work", "spot on",
        "thanks a bunch", "thanks so much", "thank you so much", "grateful", "good bot",
    ),
    "greeting": (
        "hi", "hello", "hey", "hey there", "hi there", "hello there", "yo", "sup", "gm",
        "good morning", "good afternoon", "good evening", "morning", "evening", "howdy",
        "hiya", "greetings", "what's up", "whats up", "wassup", "gm gm", "hola", "hallo",
    ),
    "farewell": (
        "bye", "goodbye", "good bye", "bye bye", "see you", "see ya", "cya", "later",
        "laters", "gn", "good night", "goodnight", "catch you later", "talk later", "ttyl",
        "have a good one", "take care", "peace", "i'm off", "im off", "that's all",
        "thats all", "that's it", "thats it", "all good", "nothing else",
    ),
    "identity": (
        "who are you", "what are you", "what can you do", "what do you do",
        "what can i ask", "what can i ask you", "how do you work", "are you a bot",
        "are you human", "are you an ai", "are you ai", "what is albert", "who is albert",
        "what's albert", "whats albert", "help", "what are your features", "capabilities",
        "what do you know", "who built you", "who made you", "who created you", "who are u",
        "who r u", "who built this", "who made this",
    ),
    "wellbeing": (
        "how are you", "how are you doing", "how's it going", "hows it going", "how you doing",
        "how r u", "how are u", "you good", "you ok", "you okay", "how's your day",
    ),
    "agree": (
        "ok", "okay", "k", "kk", "sure", "alright", "all right", "got it", "gotcha",
        "understood", "noted", "makes sense", "fair enough", "sounds good", "fine", "right",
        "yes", "yep", "yeah", "yup", "no worries", "np", "lol", "lmao", "haha", "hahaha",
        "rofl", "nice nice", "ah", "oh", "i see", "interesting", "wow", "wow ok", "hmm",
        "makes sense thanks",
    ),
}  # fmt: skip
# Words a social message may carry around what it says ("cheers mate", "thanks so much!").
SOCIAL_FILLER = frozenset(
    """a so much very really mate man bro fren frens friend buddy dude guys all again for
    that this the it was is that's thats just and too as always lot lots tons bunch albert
    bot you u ur your oh well anyway then again now team sir please pls lol haha ton tons
    heaps loads bunch""".split()
)

# --- exploits ------------------------------------------------------------------------

# Words of hacks and exploits ("has Euler been hacked?"); "hacker" and "exploiter" name an
# actor (an address question), not an event.
HACK_WORDS = frozenset(
    """hack hacked hacks hacking exploit exploited exploits rekt drained drain breach
    breached breaches attacked attack attacks compromised stolen rugged rugpull rugpulled
    rugpulls incident incidents""".split()
)
HACK_PHRASES = frozenset({"rug pull", "rug pulled", "lost funds", "been hit", "got hit"})
# The word a feed search uses for each ("drained" → "hack").
HACK_WORDS_BASE = {
    "hacked": "hack", "hacks": "hack", "hacking": "hack", "exploited": "exploit",
    "exploits": "exploit", "rekt": "hack", "drained": "hack", "drain": "hack",
    "breached": "breach", "breaches": "breach", "attacked": "attack", "attacks": "attack",
    "compromised": "hack", "stolen": "hack", "rugged": "rug", "rugpulled": "rug",
    "rugpull": "rug", "rugpulls": "rug", "incidents": "incident",
}  # fmt: skip

# --- comparisons and addresses ---------------------------------------------------------

# Words that ask between the sides a question names ("better on Arbitrum or Base?").
COMPARE_WORDS = frozenset(
    """or vs vs. versus compare compared comparing comparison better worse which against
    difference beat beats""".split()
)
# The risk-analysis factor a flag asked of one vault answers ("is it audited?").
ASKED_FACTORS = {"audited": "audit", "il_risk": "impermanent"}
# Words that weigh one side's yield against another's ("better for stablecoins: base or
# arbitrum?" asks where they earn more, not for a token list).
VALUE_WORDS = frozenset("better worse more higher lower pays pay earn earns best".split())
# Words that make an address question about a token ("what's 0x… trading at?"): the token
# index is asked first, the address check after it only if no token is on record there.
TOKEN_ADDRESS_WORDS = frozenset(
    """token tokens coin contract erc20 erc-20 price priced trading trade traded mcap cap
    liquidity holders chart supply ticker symbol fdv volume pump pumping dump ath""".split()
)
# Words that ask about one asset's vaults only (an LP pool is another question).
MULTI_ASSET_WORDS = frozenset(
    "lp lps pair pairs pool-pair multi multi-asset liquidity-pool amm".split()
)

# --- amounts and risk appetite ----------------------------------------------------------

# Words of holding or placing money around an amount ("I have 50k", "park $10k").
HOLDING_WORDS = (
    "have", "got", "hold", "holding", "own", "owning", "sitting", "deposit", "depositing",
    "put", "putting", "invest", "investing", "park", "parking", "allocate", "allocating",
    "stake", "staking", "lend", "lending", "deploy", "deploying", "spare", "idle", "my",
    "i've", "ive", "bag", "place", "placing", "move", "moving", "earn", "grow", "with",
)  # fmt: skip
# Words that put an amount to work rather than price it.
PLACEMENT_WORDS = frozenset(
    """where earn earning earns yield yields apy apr put park deploy invest investing stake
    staking lend lending deposit grow work place vault vaults pool pools farm safe get make
    best return returns interest passive somewhere need needs looking""".split()
)
# Dollar stablecoins: an amount in one of these is an amount in dollars, near enough to
# weigh against a TVL.
DOLLAR_STABLECOINS = frozenset(
    """USDC USDT DAI USDE USDS PYUSD FDUSD TUSD GHO CRVUSD FRAX LUSD USD0 USDBC RLUSD SUSD
    USDC.E DOLA MIM BUSD USDM USDX""".split()
)
# Words that say an amount is in stablecoins ("$250k in stables").
STABLE_WORDS = frozenset({"stables", "stablecoins", "stablecoin", "stable", "stable coins"})
# Tickers people write in lowercase after an amount ("10 eth", "5k usdc").
COMMON_TICKERS = frozenset(
    """usdc usdt dai eth weth btc wbtc sol steth wsteth usde susde cbbtc cbeth reth arb op
    matic pol avax bnb link uni aave crv""".split()
)
# Words that make a risk word part of an appetite ("nothing sketchy", "not too risky").
RISKY_WORDS = frozenset(
    """sketchy shady dodgy risky degen crazy wild scammy sus ponzi ponzis rug rugs rugpull
    rugpulls shitcoin shitcoins junk exotic experimental fishy suspicious dangerous
    speculative gambling""".split()
)
# Phrases that ask for little risk, and for any risk, as a level of the risk-rating field.
SAFE_APPETITE = (
    "somewhere safe", "something safe", "keep it safe", "play it safe", "playing it safe",
    "safe place", "safe spot", "safe option", "safe options", "safe bet", "safe bets",
    "safe yield", "safe yields", "safe vault", "safe vaults", "safe pool", "safe pools",
    "safe way", "safe stablecoin", "safe stablecoins", "conservative", "conservatively",
    "capital preservation", "preserve capital", "can't afford to lose", "cant afford to lose",
    "don't want to lose", "dont want to lose", "sleep at night", "risk free", "risk-free",
    "no risk", "blue chip", "blue-chip", "low-risk", "low risk", "safely", "safe and",
    "safe,", "risk averse", "risk-averse", "what's safe", "whats safe", "anything safe",
    "what is safe", "safe enough", "safe ones",
)  # fmt: skip
BOLD_APPETITE = (
    "degen", "aggressive", "aggressively", "yolo", "high risk is fine", "risk is fine",
    "don't care about risk", "dont care about risk", "whatever the risk", "max risk",
    "high risk tolerance", "risk on",
)  # fmt: skip

# --- yield-versus-risk guideline --------------------------------------------------------

# Band bounds of the product's yield-versus-risk guideline (DESIGN.md; the data server
# attaches the worded guideline to every rated result, which is what the answer quotes).
# (lower inclusive, upper, label). Exactly 40 % is still "high".
GUIDELINE_BANDS: tuple[tuple[float, float, str], ...] = (
    (0.0, 5.0, "below 5% — may not justify the risk"),
    (5.0, 10.0, "5–10% — conservative"),
    (10.0, 20.0, "10–20% — medium"),
    (20.0, 40.0, "20–40% — high"),
    (40.0, 1000.0, "above 40% — extreme"),
)
# Words that make a quoted APY a question about whether it is worth it.
JUDGEMENT_WORDS = (
    "worth", "worth it", "good", "bad", "safe", "unsafe", "sustainable", "legit", "realistic",
    "reasonable", "normal", "decent", "suspicious", "scam", "trust", "trustworthy", "risky",
    "too good", "too high", "fair", "healthy", "sane", "believable", "okay", "ok", "sound",
    "should i", "is it", "would you", "red flag", "dangerous", "sketchy", "reliable",
    "typical", "high for", "overpriced", "attractive", "compare", "stack up", "rate", "risk",
    "risks", "tell me about", "what does", "mean", "enough", "justify", "justified",
)  # fmt: skip

# --- intents ---------------------------------------------------------------------------

VAULT_WORDS = (
    "vault", "vaults", "pool", "pools", "farm", "farms", "farming", "yield", "yields",
    "apy", "apr", "staking", "stake", "lending", "lend", "earn", "earning", "tvl",
    "total value locked", "protocol", "protocols", "strategy", "strategies", "defi",
    "deposit", "deposits", "liquidity pool", "liquidity pools", "lp", "lps", "savings",
    "interest", "passive income", "yielding", "autocompounding", "auto-compounding", "park",
    "parking", "idle",
)  # fmt: skip
TOKEN_LIST_WORDS = (
    "tokens", "coins", "stablecoins", "gainers", "losers", "movers", "memecoins", "memes",
    "altcoins", "alts", "cryptos", "cryptocurrencies", "assets", "tickers", "projects",
    "stables", "winners", "pumpers", "dumpers",
)  # fmt: skip
PROTOCOL_WORDS = ("protocol", "protocols", "platform", "platforms", "dapp", "dapps", "project")
FEED_WORDS = (
    "saying", "says", "said", "sentiment", "news", "headline", "headlines", "feed",
    "narrative", "narratives", "buzz", "talk", "talking", "rumor", "rumors", "rumour",
    "rumours", "latest on", "happening", "mood", "hype", "chatter", "gossip", "announcement",
    "announcements", "reports", "reported", "hearing", "opinion", "opinions", "think about",
    "press", "articles", "article", "story", "stories", "tweets", "twitter", "social",
)  # fmt: skip
WALLET_WORDS = (
    "portfolio", "holdings", "holding", "holds", "hold", "positions", "position", "balance",
    "balances", "worth", "net worth", "assets", "invested", "bag", "bags", "allocation",
    "allocations",
)  # fmt: skip
WALLET_TOP_WORDS = (
    "top", "biggest", "largest", "main", "major", "by value", "by size", "by usd value",
    "most valuable", "heaviest", "sorted by value", "ranked by value", "ordered by value",
    "largest first", "by worth", "concentrated", "concentration",
)  # fmt: skip
WALLET_LIST_WORDS = ("list", "all", "every", "each", "positions", "show all", "itemise", "itemize")

# Questions about a protocol itself ("tell me about Aave", "how is Curve doing").
PROTOCOL_TALK_WORDS = (
    "tell me about", "what is", "what's", "who is", "overview", "info on", "about", "how is",
    "how's", "explain", "describe", "summary of", "stats", "statistics", "details on",
)  # fmt: skip

# Vault-id questions: which analysis.
HISTORY_WORDS = (
    "history", "historical", "over time", "trend", "trends", "chart", "past", "evolution",
    "evolved", "changed", "timeline", "time series", "daily", "track", "tracked", "graph",
    "last", "previous", "was", "been", "performed", "performance", "lately", "recently",
)  # fmt: skip
RISK_WORDS = (
    "risk", "risks", "risky", "safe", "safety", "security", "score", "audit", "audits",
    "audited", "dangerous", "secure", "trust", "rating", "rated", "exploit", "hack",
)  # fmt: skip
YIELD_SOURCE_WORDS = (
    "come from", "comes from", "coming from", "source", "sources", "made of",
    "organic", "sustainable", "sustainability", "explain", "decompose", "driven",
    "where does", "yield analysis", "analyze the yield", "analyse the yield",
    "yield breakdown", "apy breakdown", "yield made of", "made up of",
    "break down the rewards", "break down the yield", "break down the apy",
    "break down its rewards", "break down its yield", "break down its apy",
    "rewards breakdown", "reward breakdown", "breakdown of the rewards",
    "breakdown of its rewards", "breakdown of the yield", "breakdown of the apy",
    "rewards broken down", "split between", "base versus rewards",
    "base vs rewards", "how much is rewards", "how much of it is rewards", "reward split",
    "rewards split", "reward tokens", "paid in", "is rewards", "are rewards",
    "from rewards", "is incentives", "from incentives", "is emissions", "from emissions",
)  # fmt: skip
# Words that refer to one vault picked from a search ("the best USDC vault").
SINGULAR_PICK = (
    "the", "its", "that", "this", "which", "top", "best", "highest", "largest", "biggest",
    "safest", "riskiest", "first", "#1", "number one", "leading", "lowest", "smallest",
)  # fmt: skip
VAULT_NOUNS_SINGULAR = ("vault", "pool", "farm", "one", "strategy", "market", "option", "pick")
# Analysis asked of a result picked from a search (a plan's second step).
FOLLOW_TOKEN_WORDS = (
    "analyze",
    "analyse",
    "analysis",
    "tell me about",
    "deep dive",
    "rundown",
    "details",
    "detail",
    "risk",
    "risky",
    "safe",
    "dig into",
    "look into",
)

# --- names -----------------------------------------------------------------------------

CHAIN_NAMES: dict[str, str] = {
    "ethereum": "ethereum", "ethereum mainnet": "ethereum", "eth mainnet": "ethereum",
    "mainnet": "ethereum", "arbitrum": "arbitrum", "arbitrum one": "arbitrum",
    "base": "base", "optimism": "optimism", "op mainnet": "optimism", "polygon": "polygon",
    "polygon pos": "polygon", "bsc": "bsc", "bnb chain": "bsc", "bnb smart chain": "bsc",
    "binance smart chain": "bsc", "avalanche": "avalanche", "avalanche c-chain": "avalanche",
    "solana": "solana", "gnosis": "gnosis", "gnosis chain": "gnosis", "fantom": "fantom",
    "sonic": "sonic", "linea": "linea", "scroll": "scroll", "zksync": "zksync",
    "zksync era": "zksync", "mantle": "mantle", "blast": "blast", "mode": "mode",
    "celo": "celo", "moonbeam": "moonbeam", "kava": "kava", "metis": "metis",
    "fraxtal": "fraxtal", "manta": "manta", "berachain": "berachain", "sei": "sei",
    "unichain": "unichain", "cronos": "cronos", "aurora": "aurora", "opbnb": "opbnb",
    "polygon zkevm": "polygon-zkevm", "hyperliquid": "hyperliquid", "aptos": "aptos",
    "sui": "sui", "tron": "tron", "near": "near", "ton": "ton", "starknet": "starknet",
    "bitcoin": "bitcoin", "cardano": "cardano", "xdai": "gnosis",
}  # fmt: skip
# Short chain names that are also tickers: a chain only after "on"/"in"/… ("on arb").
CHAIN_SHORT: dict[str, str] = {
    "eth": "ethereum", "arb": "arbitrum", "op": "optimism", "matic": "polygon",
    "pol": "polygon", "bnb": "bsc", "avax": "avalanche", "sol": "solana", "btc": "bitcoin",
    "ftm": "fantom", "era": "zksync", "bera": "berachain", "binance": "bsc",
}  # fmt: skip
# Chain names that are also everyday words: a chain only after a chain preposition.
CHAIN_AMBIGUOUS = ("base", "mode", "blast", "scroll", "near", "ton", "sei", "aurora", "manta")
CHAIN_PREPOSITIONS = ("on", "in", "across", "via", "using", "over", "chain", "network", "onto")

# A lowercase word is read as a possible name only if it is already known or sits where
# names go: before one of these nouns ("curve pools") or after one of these words ("on aave").
NAME_SLOT_NEXT = (
    "vault", "vaults", "pool", "pools", "farm", "farms", "yield", "yields", "apy", "apr",
    "apys", "market", "markets", "lending", "staking", "strategy", "strategies", "protocol",
    "v1", "v2", "v3", "v4", "finance", "dex", "deposits", "tvl", "lp", "lps", "savings",
    "stablecoin", "stable", "rewards", "incentives", "emissions", "restaking", "loans",
    # "has euler been hacked", "was bybit exploited", "is morpho audited": a subject.
    "been", "ever", "hacked", "exploited", "drained", "rekt", "rugged", "audited",
    # "what does steth pay", "what can wsteth earn", "Euler got hacked", "aave is audited?"
    "pay", "pays", "paying", "earn", "earns", "earning", "yielding", "offer", "offers",
    "got", "get", "was", "has", "is",
)  # fmt: skip
NAME_SLOT_PREV = (
    "on", "via", "from", "for", "of", "in", "at", "with", "using", "holding", "through",
    "into", "against", "vs", "versus", "hold", "holds", "containing", "including", "like",
    "than", "is", "about",
)  # fmt: skip

# Everyday names of assets, for questions that do not use the ticker.
ASSET_NAMES: dict[str, str] = {
    "bitcoin": "BTC", "ether": "ETH", "ethereum": "ETH", "chainlink": "LINK",
    "uniswap": "UNI", "dogecoin": "DOGE", "shiba inu": "SHIB", "tether": "USDT",
    "solana": "SOL", "wrapped bitcoin": "WBTC", "wrapped ether": "WETH",
    "usd coin": "USDC", "dai": "DAI", "lido staked ether": "STETH", "staked ether": "STETH",
    "cardano": "ADA", "ripple": "XRP", "polkadot": "DOT", "avalanche": "AVAX",
    "pepe": "PEPE", "maker": "MKR", "aave token": "AAVE", "arbitrum token": "ARB",
}  # fmt: skip

# Upper-case words that are not tickers.
NOT_TICKERS = frozenset(
    """WHAT IS THE A AN TOKEN COIN ABOUT TELL ME OF ON WHO HOW DOES DO IT AND FOR TO IN PRICE
    ANALYSE ANALYZE ANALYSIS RISKY SAFE SHOW FIND GIVE ANY MARKET I APY APR TVL USD DEX ATH
    ATL FDV AI SEC CEO NFT EVM ERC DAO OK ETF DEFI UTC CEX KYC FYI PLS TLDR VS MY OR IL LP
    LPS ROI PNL YTD AMM CDP RWA LST LRT TPS GAS TX ID URL API FAQ ASAP IMO IMHO USA US EU
    UK Q1 Q2 Q3 Q4 ENS NO YES ALL TOP BEST NEW HIGH LOW RISK MAX MIN""".split()
)

# Grammar and everyday words: never a name candidate, even when the index holds a token
# with that symbol ("IS", "FOR", "T", "UP" are all vault asset symbols).
STOPWORDS = frozenset(
    """a about above across after again against all almost along already also although always
    am among an and another any anybody anyone anything anywhere are aren't around as ask at
    away back be because been before being below best better between big bigger biggest both
    but by can can't cannot could couldn't currently did didn't do does doesn't doing done
    don't down during each either else enough especially even ever every everything exactly
    few find first for from full further get gets getting give given go goes going good got
    great had has hasn't have haven't having he her here hers high higher highest him his how
    however i i'd i'll i'm i've if in into is isn't it it's its itself just keep kind know
    large larger largest last least less let like likely list little look looking lot lots low
    lower lowest made main make many may maybe me might mine more most much must my myself near
    need needs never new next nice no none nor not nothing now of off often ok okay old on once
    one only or other others otherwise our ours out over own per perhaps please plus pretty
    quite rather really right same see seem seems several shall she should show shown since so
    some something somewhere still such sure take than that that's the their theirs them then
    there there's these they thing things think this those though through thus to today too top
    toward towards under until up upon us use used using very via want wants was wasn't way we
    well were weren't what what's whatever when where where's whether which while who who's
    whole whom whose why will with within without would wouldn't yes yet you you'd you'll your
    yours yourself
    able actually add all-time any appreciate around assume available average bag ballpark
    basically beginner beginners bit buy buying call called care chance check cheap choose
    compare comparison currently current deal decent deep direction do done else ever explain
    expect fine gimme guide happy hear help here hey hi hello hope idea interested investing
    investment invest jump keen kindly know lately least let's likely love mind money moment
    need nowadays number offer options option overall park pick picks place play playing plan
    point possible prefer probably put question quick rank rather real recommend
    recommendation recommendations reliable right safe say search seeing sell selling send
    set should show sort sorted stay stuff suggest suggestions sure thanks thank tell think
    thoughts time try trying type want way ways week whats worth would wondering year yield
    yields yielding return returns returning earn earning earns option choice choices
    vault vaults pool pools farm farms farming strategy strategies protocol protocols platform
    platforms market markets defi crypto onchain on-chain chain chains network networks token
    tokens coin coins asset assets currency currencies place places opportunity opportunities
    apy apr tvl rate rates risk risks risky safer safest secure security score rating ratings
    staking stake lending lend borrow borrowing deposit deposits liquidity position positions
    portfolio wallet address holdings balance balances value worth usd dollars dollar price
    prices total history historical chart trend trends analysis analyze analyse analyzing
    breakdown source sources details detail info information data stats statistics summary
    give show list find get fetch pull display tell me us ones one those these them top
    lowest highest biggest largest smallest most least more less over under above below
    between around about approx approximately roughly nearly almost currently now today
    tomorrow yesterday daily weekly monthly yearly annual annually per month months week
    weeks day days hour hours minute minutes year years ago since recent recently latest
    new newest old older oldest young younger fresh
    good great bad best worst better worse nice cool solid strong weak decent fair high low
    huge tiny small big large juicy juiciest attractive interesting popular famous well-known
    known unknown legit legitimate real fake scam sketchy sus sustainable reasonable normal
    typical realistic crazy insane wild ridiculous absurd
    someone something somebody anyone people person guy guys folks team friend i'm im
    also plus such like just really very super quite pretty fairly so too much many
    which what who whom whose where when why how whats hows wheres
    rn pls plz thx ty btw imo tbh ngl lol
    farm farming farmed yield-bearing auto compounding compounder autocompounder
    base rewards reward incentives incentive emissions emission organic native fees fee
    exposure exposed impermanent loss il
    stable stables stablecoin stablecoins pegged peg
    condition conditions filter filters criteria
    it's that's there's here's
    worth it should would could might must can may will
    risk-adjusted adjusted net gross
    excluding exclude except avoid avoiding ignoring non un holding holds hold held offer offers
    offering offered come comes coming true false active inactive only someone somebody
    anybody legit thing sure real deal deals instead pay pays paying rather mostly generally
    usually currently available possible single multi asset lp lps pair pairs sided
    allocation allocations invested investing exposure""".split()
)

# Filler left out of a feed search topic.
FEED_FILLER = frozenset(
    """a about all an and any anything are around at be been buzz can chatter could crypto
    currently do does feed for from get give has have headlines headline hear how i in is it
    its latest market me mood my narrative narratives new news now of on or people please
    right rumor rumors rumour rumours saying says sentiment show talk talking tell that the
    there these this to today vs was week what whats what's when where which who why with
    you happening hype lately recent recently going there's""".split()
)
# Words left out of a protocol search query.
PROTOCOL_FILLER = frozenset(
    """protocol protocols defi vaults vault yields yield apy tvl total value locked much big
    size current platform platforms dapp dapps project projects how does have has what is the
    of about tell me on in for its it's and or info information overview stats show give""".split()
)

# Families that mark a question as about vaults or about tokens, used when the tools that
# would say so are not offered this turn (a vault question still gets "cannot check now").
VAULT_FAMILIES = (
    "apy", "tvl", "base_apy", "reward_share", "security_score", "audits", "protocol_age",
    "il_risk", "audited", "exposure", "risk_rating",
)  # fmt: skip
TOKEN_FAMILIES = (
    "market_cap", "liquidity", "holders", "authenticity_score", "vol_mcap_ratio",
    "price_change", "rank", "volume",
)  # fmt: skip

# A condition that names no field ("vaults over 10%", "tokens above $1B") is about the first
# of these families the chosen tool has, by the condition's unit.
UNIT_DEFAULTS: dict[str, tuple[str, ...]] = {
    "usd": ("tvl", "market_cap", "value"),
    "magnitude": ("tvl", "market_cap", "value", "holders"),
    "percent": ("apy", "price_change"),
    "days": ("protocol_age",),
}

# Words a follow-up may carry around its parts ("and on base?", "what about Morpho?", "sorted
# by tvl instead"). Anything else ("what is", "tokens", "why") makes the message its own
# question. Deliberately short: a word added here turns more messages into follow-ups.
FOLLOW_UP_FILLER = frozenset(
    """and also what about how same for on in with only just but instead then now ok okay
    please the by sorted sort order ordered show me of at to it that those these them one ones
    again rather if let's lets try switch change make too as well i want give list results
    result same thing do can you keep filter narrow down restrict having where whose
    , . ? ! ( ) : ;""".split()
)
# A message made of these words only ("thanks, that's helpful!", "ok great") thanks or
# agrees: it asks for nothing, so it gets a short reply, not the help text's examples.
ACKNOWLEDGEMENT_WORDS = frozenset(
    """thanks thank you thx ty cheers great cool nice perfect awesome excellent brilliant
    wonderful good ok okay got it that's thats that is was this very so much really
    helpful useful appreciated appreciate makes sense sounds fine""".split()
)
# One of them must be there: "that is" or "is it" alone thank nobody.
ACKNOWLEDGEMENT_CORE = frozenset(
    """thanks thank thx ty cheers great cool nice perfect awesome excellent brilliant
    wonderful good ok okay helpful useful appreciated appreciate sense fine got""".split()
)
# Field names that are also vault cue words but, in a follow-up, only name the field.
FOLLOW_UP_FIELD_WORDS = frozenset({"apy", "apr", "apys", "aprs", "tvl"})
# Words that point at the previous answer's results ("only the ones above 5%").
FOLLOW_UP_POINTERS = frozenset({"ones", "those", "them", "these"})
