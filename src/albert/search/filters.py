"""Building Typesense 0.24 `filter_by` strings safely: the one builder of the project.

The worker's token search and the data server's vault tools both write their
filters here, so values are quoted and numbers rounded one way everywhere.

Rules this module encodes:
- String values made of letters, digits, `_`, `-` and `.` go in bare; anything else is
  wrapped in backticks, which 0.24 reads literally (commas, spaces, `&&`, brackets, colons).
  0.24 has no way to escape a backtick inside a backticked value, so such values are refused.
- Numbers are written positionally (never `1e-05`), rounded to `NUMBER_DECIMALS` places:
  Typesense stores floats in 32 bits, so finer digits carry no meaning.
- `&&` and `||` have equal precedence and are evaluated left to right, so every OR group
  is parenthesised by `any_of`, which also parenthesises an AND group inside it, and
  `all_of` parenthesises any clause containing `||`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal

NUMBER_DECIMALS = 8
_BARE = re.compile(r"[A-Za-z0-9_.\-]+")


class FilterValueError(ValueError):
    """A value that cannot be written into a Typesense 0.24 filter."""


def quote_value(value: str) -> str:
    """A string value for a filter: bare when safe, else backtick-quoted."""
    if _BARE.fullmatch(value):
        return value
    if "`" in value:
        raise FilterValueError(f"backticks cannot be used in a filter value: {value!r}")
    if not value:
        raise FilterValueError("empty filter value")
    return f"`{value}`"


def number(value: float | int) -> str:
    """A number as Typesense's filter parser reads it (plain positional digits)."""
    if isinstance(value, bool):
        raise FilterValueError("a boolean is not a number")
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise FilterValueError(f"not a finite number: {value!r}")
    rounded = round(value, NUMBER_DECIMALS)
    if rounded == 0:
        return "0"
    if rounded.is_integer():
        return str(int(rounded))
    text = format(Decimal(repr(rounded)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def equals(field: str, value: str | bool | int | float) -> str:
    """`field:=value` with the value formatted for its type."""
    if isinstance(value, bool):
        return f"{field}:={'true' if value else 'false'}"
    if isinstance(value, int | float):
        return f"{field}:={number(value)}"
    return f"{field}:={quote_value(value)}"


def one_of(field: str, values: Sequence[str]) -> str:
    """`field:=[a,b]`: the field equals any of the values (a single clause, no `||`)."""
    return f"{field}:={_value_list(field, values)}"


def none_of(field: str, values: Sequence[str]) -> str:
    """`field:!=[a,b]`: the field equals none of the values."""
    return f"{field}:!={_value_list(field, values)}"


def _value_list(field: str, values: Sequence[str]) -> str:
    if not values:
        raise FilterValueError(f"{field}: empty list of values")
    return f"[{','.join(quote_value(v) for v in values)}]"


def contains(field: str, value: str) -> str:
    """`field:value`: a token match on a string field (not an exact one)."""
    return f"{field}:{quote_value(value)}"


COMPARISONS = frozenset({">", ">=", "<", "<=", "="})


def compare(field: str, op: str, value: float | int) -> str:
    """`field:>=value` and the like; `op` is one of >, >=, <, <=, =."""
    if op not in COMPARISONS:
        raise FilterValueError(f"unsupported comparison {op!r}")
    return f"{field}:{op}{number(value)}"


def number_range(field: str, low: float | int | None, high: float | int | None) -> str | None:
    """`field:[a..b]`, `field:>=a` or `field:<=b`; None when both bounds are missing."""
    if low is not None and high is not None:
        return f"{field}:[{number(low)}..{number(high)}]"
    if low is not None:
        return f"{field}:>={number(low)}"
    if high is not None:
        return f"{field}:<={number(high)}"
    return None


def _grouped(clause: str, *operators: str) -> str:
    """The clause, parenthesised when it holds one of the operators and is not wrapped whole.

    Extra parentheses never change a filter's meaning, so an operator inside a quoted
    value only costs a pair of them.
    """
    needs = any(op in clause for op in operators) and not _is_wrapped(clause)
    return f"({clause})" if needs else clause


def _is_wrapped(clause: str) -> bool:
    if not (clause.startswith("(") and clause.endswith(")")):
        return False
    depth = 0
    in_tick = False
    for i, ch in enumerate(clause):
        if ch == "`":
            in_tick = not in_tick
        elif not in_tick and ch == "(":
            depth += 1
        elif not in_tick and ch == ")":
            depth -= 1
            if depth == 0 and i != len(clause) - 1:
                return False
    return True


def all_of(clauses: Iterable[str | None]) -> str | None:
    """Clauses joined with `&&` in the given order; OR groups parenthesised; None if empty."""
    parts = [_grouped(c, "||") for c in clauses if c]
    return " && ".join(parts) if parts else None


def any_of(clauses: Iterable[str | None]) -> str | None:
    """Clauses joined with `||` and parenthesised, so it composes under `&&`."""
    parts = [c for c in clauses if c]
    if not parts:
        return None
    if len(parts) == 1:
        return _grouped(parts[0], "||")
    # An AND group inside an OR needs its own parentheses: `a || b && c` is `(a || b) && c`.
    return "(" + " || ".join(_grouped(c, "&&", "||") for c in parts) + ")"
