"""Token market facts shared by the token index and the token analysis service.

One recorded row per coin and one deployments table, so that the same token shows the same
figures, date and contracts wherever it is asked about (see fixtures/README.md).
"""

from data_server.market.snapshot import (
    CoinListing,
    MarketRow,
    MarketSnapshot,
    load_market_snapshot,
)

__all__ = ["CoinListing", "MarketRow", "MarketSnapshot", "load_market_snapshot"]
