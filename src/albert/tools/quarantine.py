"""The gate every tool passes before the model sees it.

Model APIs refuse a whole request when one tool is malformed: a bad name, a schema
that is not valid JSON Schema, or two names that collide once a gateway sanitises
them. One broken remote tool must not break every turn, so such a tool is left
out alone, logged, and reported; the rest of its server keeps working.
"""

import functools
import json
import logging
import re
import weakref
from typing import Any, NamedTuple

from albert.tools.base import Tool

log = logging.getLogger(__name__)

# What OpenAI-compatible APIs (and Workers AI, Anthropic via gateways) accept.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class Rejection(NamedTuple):
    """A tool left out of the catalog, and why."""

    tool: str
    source: str
    reason: str


def sanitised(name: str) -> str:
    """The name as strict gateways fold it (case and dashes), for clash checks."""
    return name.lower().replace("-", "_")


def schema_problem(schema: Any) -> str | None:
    """Why a tool's input schema cannot be sent to a model, or None if it can."""
    try:
        key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        return "its input schema is not JSON"
    # Tools are vetted every turn; their schemas rarely change, so the verdict is cached.
    return _schema_problem(key)


@functools.lru_cache(maxsize=512)
def _schema_problem(schema_json: str) -> str | None:
    schema = json.loads(schema_json)
    if not isinstance(schema, dict):
        return "its input schema is not a JSON object"
    if schema.get("type", "object") != "object":
        return "its input schema must describe an object"
    try:
        # Imported here: only remote tools need it, and it is not on the cold path.
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for
    except ImportError:  # pragma: no cover - a runtime dependency, absent only when broken
        return None
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        return f"its input schema is not valid JSON Schema ({exc.message[:120]})"
    return None


def vet(tool: Tool, source: str, taken: dict[str, str]) -> Rejection | None:
    """Check one tool against the gate; `taken` maps sanitised names to tools already in."""
    name = tool.name
    if not NAME_PATTERN.match(name):
        reason = (
            f"its name is {len(name)} characters (64 at most)"
            if len(name) > 64
            else "its name has characters model APIs refuse (allowed: letters, digits, _ and -)"
        )
        return Rejection(tool=name[:80], source=source, reason=reason)
    folded = sanitised(name)
    if folded in taken and taken[folded] != name:
        return Rejection(
            tool=name, source=source, reason=f"its name clashes with {taken[folded]!r}"
        )
    problem = _tool_schema_problem(tool)
    if problem is not None:
        return Rejection(tool=name, source=source, reason=problem)
    return None


# A tool's schema does not change once it is built (see `albert.tools.base.described`),
# and every turn vets the turn's tools again: `schema_problem` encodes the schema as sorted
# JSON for its cache key (~1.5% of a chat turn's CPU), so its verdict is kept per tool.
_verdicts: weakref.WeakKeyDictionary[Any, tuple[str | None]] = weakref.WeakKeyDictionary()


# Each object builds its own read_tool_result tool (and its other tools), all over one
# schema dict per input model: the verdict on a schema object is kept for the process, so
# a tool object first seen is not encoded again. The entry holds the schema, so its
# identity cannot pass to another dict while it is kept; bounded (remote tools come and go).
_SHARED_VERDICTS = 512
_schema_verdicts: dict[int, tuple[Any, str | None]] = {}


def _verdict_of_schema(schema: Any) -> str | None:
    found = _schema_verdicts.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    verdict = schema_problem(schema)
    if type(schema) is dict:
        if len(_schema_verdicts) >= _SHARED_VERDICTS:
            _schema_verdicts.clear()
        _schema_verdicts[id(schema)] = (schema, verdict)
    return verdict


def _tool_schema_problem(tool: Tool) -> str | None:
    try:
        found = _verdicts.get(tool)
    except TypeError:  # a tool that cannot be weakly referenced is checked every time
        return schema_problem(tool.input_schema)
    if found is None:
        found = _verdicts[tool] = (_verdict_of_schema(tool.input_schema),)
    return found[0]
