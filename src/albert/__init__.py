"""Albert: the chat agent's core, runtime-agnostic (CPython and Pyodide alike)."""

import os

# pydantic looks for plugins when it builds its first model, by reading the metadata of
# every installed distribution (tens of ms of a cold start). The worker uses none; an
# explicit PYDANTIC_DISABLE_PLUGINS setting still wins.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
