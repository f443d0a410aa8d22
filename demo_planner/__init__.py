"""The offline demo planner: a deterministic, rule-based stand-in for a model.

Modules, in the order a question passes through them:

- `vocabulary` — the synonym table and word lists (data only);
- `text` — tokens and fixed-shape entities (addresses, ENS names, vault ids);
- `numbers` — amounts, percentages, ranges, comparators, counts, windows;
- `lexicon` — what each offered tool's schema can take, and the phrases naming it;
- `reading` — one question read once against those phrases;
- `names` — assets, protocols and chains checked against the indexed sets;
- `binding` — conditions bound to the nearest field mention of a tool;
- `tickers` — token tickers and feed topics as the question writes them;
- `followups` — a refinement ("and on base?") merged into the previous question;
- `plans` — routes and the lookup → main → follow steps;
- `rendering` — the labelled answer built from tool results;
- `client` — the `DemoPlanner` model client.
"""

from demo_planner.client import DemoPlanner
from demo_planner.rendering import LABEL

__all__ = ["LABEL", "DemoPlanner"]
