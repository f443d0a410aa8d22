"""The small list of plain ERC-20 tokens the wallet tools check besides the indexed vaults."""

from __future__ import annotations

from pydantic import BaseModel, Field


class TokenInfo(BaseModel):
    """One ERC-20 token on one chain (or a chain's native asset, see `NATIVE_ASSETS`)."""

    chain: str
    address: str = Field(description="EIP-55 checksummed contract address")
    symbol: str
    name: str
    decimals: int = Field(ge=0, le=36)
    usd_price: float | None = Field(
        None, description="Only for USD stablecoins (1.0); other tokens are left unpriced"
    )


def _t(chain: str, address: str, symbol: str, name: str, decimals: int, usd: float | None = None):
    return TokenInfo(
        chain=chain, address=address, symbol=symbol, name=name, decimals=decimals, usd_price=usd
    )


DEFAULT_TOKENS: tuple[TokenInfo, ...] = (
    _t("ethereum", "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", "USDC", "USD Coin", 6, 1.0),
    _t("ethereum", "0xdAC17F958D2ee523a2206206994597C13D831ec7", "USDT", "Tether USD", 6, 1.0),
    _t("ethereum", "0x6B175474E89094C44Da98b954EedeAC495271d0F", "DAI", "Dai Stablecoin", 18, 1.0),
    _t("ethereum", "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2", "WETH", "Wrapped Ether", 18),
    _t("ethereum", "0x2260FAC5E5542a773Aa44fBCfeDf7C193bc2C599", "WBTC", "Wrapped BTC", 8),
    _t("base", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "USDC", "USD Coin", 6, 1.0),
    _t("base", "0x4200000000000000000000000000000000000006", "WETH", "Wrapped Ether", 18),
    _t("arbitrum", "0xaf88d065e77c8cC2239327C5EDb3A432268e5831", "USDC", "USD Coin", 6, 1.0),
    _t("arbitrum", "0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9", "USDT", "Tether USD", 6, 1.0),
    _t("arbitrum", "0x82aF49447D8a07e3bd95BD0d56f35241523fBab1", "WETH", "Wrapped Ether", 18),
)


def tokens_for_chain(chain: str, tokens: tuple[TokenInfo, ...] = DEFAULT_TOKENS) -> list[TokenInfo]:
    """The listed tokens on one chain."""
    return [t for t in tokens if t.chain == chain]


# EIP-7528's placeholder address for a chain's native asset: a holding without a contract
# still gets a string in `contract`, and it is one no real contract can have.
NATIVE_ADDRESS = "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE"

# The asset each chain pays gas in, by the slugs of `chain_ids.CHAIN_IDS`; all use 18
# decimals. Polygon's has been POL since the MATIC migration of September 2024. xDAI is the
# bridged DAI, a USD stablecoin, so it is priced like DAI; the others have no price source.
# A chain missing here has its native balance left unread rather than guessed.
NATIVE_ASSETS: dict[str, TokenInfo] = {
    t.chain: t
    for t in (
        _t("ethereum", NATIVE_ADDRESS, "ETH", "Ether", 18),
        _t("optimism", NATIVE_ADDRESS, "ETH", "Ether", 18),
        _t("bsc", NATIVE_ADDRESS, "BNB", "BNB", 18),
        _t("gnosis", NATIVE_ADDRESS, "XDAI", "xDAI", 18, 1.0),
        _t("polygon", NATIVE_ADDRESS, "POL", "POL", 18),
        _t("base", NATIVE_ADDRESS, "ETH", "Ether", 18),
        _t("arbitrum", NATIVE_ADDRESS, "ETH", "Ether", 18),
        _t("avalanche", NATIVE_ADDRESS, "AVAX", "Avalanche", 18),
    )
}


def native_asset(chain: str) -> TokenInfo | None:
    """The native asset of a chain, or None where it is not known."""
    return NATIVE_ASSETS.get(chain)
