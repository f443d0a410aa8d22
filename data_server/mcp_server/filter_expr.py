"""A tiny builder for Typesense `filter_by` expressions.

Typesense gives `&&` and `||` the same precedence and reads left to right, so
`a && b || c` means `(a && b) || c`. Every OR group is therefore rendered inside
parentheses, and so is every AND group nested in an OR; callers never concatenate
strings themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def quote(value: str) -> str:
    """A string value for filter_by, wrapped in backticks so commas and brackets stay literal."""
    if "`" in value:
        raise ValueError("filter values cannot contain backticks")
    return f"`{value}`"


def number(value: float | int) -> str:
    """A numeric literal without exponent notation (Typesense does not parse 1e+06)."""
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return f"{value:.10f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Clause:
    """One field condition, already rendered (`chain:=[`base`]`, `tvl_usd:>=1000`)."""

    text: str

    def render(self, *, nested: bool = False) -> str:
        """The clause itself; a single clause never needs parentheses."""
        return self.text


@dataclass(frozen=True)
class Group:
    """Clauses or groups joined by one operator."""

    op: str  # "&&" or "||"
    parts: tuple[Clause | Group, ...]

    def render(self, *, nested: bool = False) -> str:
        """Render; OR groups are always parenthesised, AND groups only when nested."""
        rendered = [p.render(nested=True) for p in self.parts]
        rendered = [r for r in rendered if r]
        if not rendered:
            return ""
        if len(rendered) == 1:
            return rendered[0]
        body = f" {self.op} ".join(rendered)
        if self.op == "||" or nested:
            return f"({body})"
        return body


Expr = Clause | Group


def all_of(parts: Iterable[Expr | None]) -> Group:
    """AND of the given parts (None entries are skipped)."""
    return Group("&&", tuple(p for p in parts if p is not None))


def any_of(parts: Iterable[Expr | None]) -> Group:
    """OR of the given parts (None entries are skipped)."""
    return Group("||", tuple(p for p in parts if p is not None))


def eq(field: str, value: str | bool) -> Clause:
    """Exact match on one value."""
    if isinstance(value, bool):
        return Clause(f"{field}:={'true' if value else 'false'}")
    return Clause(f"{field}:={quote(value)}")


def one_of(field: str, values: Sequence[str]) -> Clause:
    """Exact match on any of several values (`field:=[a,b]`)."""
    if not values:
        raise ValueError(f"{field}: empty value list")
    return Clause(f"{field}:=[{','.join(quote(v) for v in values)}]")


def none_of(field: str, values: Sequence[str]) -> Clause:
    """Excludes every listed value (`field:!=[a,b]`)."""
    if not values:
        raise ValueError(f"{field}: empty value list")
    return Clause(f"{field}:!=[{','.join(quote(v) for v in values)}]")


def contains(field: str, value: str) -> Clause:
    """Token match (not exact) on a string field."""
    return Clause(f"{field}:{quote(value)}")


def compare(field: str, op: str, value: float | int) -> Clause:
    """Numeric comparison; op is one of >, >=, <, <=, =."""
    if op not in {">", ">=", "<", "<=", "="}:
        raise ValueError(f"unsupported operator {op!r}")
    return Clause(f"{field}:{op}{number(value)}")


def render(expr: Expr) -> str:
    """The filter_by string of an expression ('' when it has no clauses)."""
    return expr.render()
