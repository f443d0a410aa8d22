"""`python -m data_server.tokens --url URL --api-key KEY [--collection tokens]`: seed the index."""

from __future__ import annotations

import argparse
import asyncio
import os

from albert.search.typesense_client import TypesenseClient, TypesenseError
from data_server.tokens.schema import TOKENS_COLLECTION
from data_server.tokens.seed import seed_tokens


async def _run(url: str, api_key: str, collection: str) -> int:
    async with TypesenseClient(url, api_key) as client:
        try:
            result = await seed_tokens(client, collection)
        except TypesenseError as exc:
            print(f"seeding failed: {exc}")
            return 1
    print(
        f"{result.collection}: {result.imported.ok} documents upserted, "
        f"{result.num_documents} in the collection"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Create the tokens collection if missing and upsert the seed documents."""
    parser = argparse.ArgumentParser(prog="python -m data_server.tokens")
    parser.add_argument("--url", default=os.environ.get("TYPESENSE_URL", "http://127.0.0.1:8108"))
    parser.add_argument("--api-key", default=os.environ.get("TYPESENSE_API_KEY", "albert-dev-key"))
    parser.add_argument("--collection", default=TOKENS_COLLECTION)
    args = parser.parse_args(argv)
    return asyncio.run(_run(args.url, args.api_key, args.collection))


if __name__ == "__main__":
    raise SystemExit(main())
