// Figures, names and links for the result cards, read defensively: structured content comes
// from tools (some on servers we do not run), so every value is checked for its type here
// and a value of the wrong type reads as unknown. Nothing here touches the DOM.

/** A finite number, or null. */
export function num(value) {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** A non-empty string, or null. */
export function str(value) {
  return typeof value === "string" && value.trim() ? value : null;
}

/** An array (empty for anything else). */
export function list(value) {
  return Array.isArray(value) ? value : [];
}

/** A plain object, or null. */
export function obj(value) {
  return value && typeof value === "object" && !Array.isArray(value) ? value : null;
}

const GROUPED = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2, minimumFractionDigits: 2 });

/** Dollars and cents, as a wallet reads them: $26,624.00. */
export function usdExact(value) {
  const v = num(value);
  if (v === null) return "unknown";
  return `${v < 0 ? "-" : ""}$${GROUPED.format(Math.abs(v))}`;
}

/** Dollars for a reader: $3.36B, $617.45M, $87,270, $12.50, $0.00000799. */
export function usd(value) {
  const v = num(value);
  if (v === null) return "unknown";
  const sign = v < 0 ? "-" : "";
  const a = Math.abs(v);
  for (const [bound, suffix] of [[1e12, "T"], [1e9, "B"], [1e6, "M"]]) {
    if (a >= bound) return `${sign}$${(a / bound).toFixed(2)}${suffix}`;
  }
  if (a >= 1000) return `${sign}$${Math.round(a).toLocaleString("en-US")}`;
  if (a >= 1 || a === 0) return `${sign}$${a.toFixed(2)}`;
  return `${sign}$${smallNumber(a)}`;
}

/** A price to four significant digits, cents at least, never in exponent notation:
 * $0.9951, $1.001, $59,482.00, $0.000007780 (a peg or a band is read from these). */
export function price(value) {
  const v = num(value);
  if (v === null) return "unknown";
  const a = Math.abs(v);
  if (a === 0) return "$0.00";
  const decimals = Math.min(20, Math.max(2, 3 - Math.floor(Math.log10(a))));
  const text = a.toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
  return `${v < 0 ? "-" : ""}$${text}`;
}

function smallNumber(a) {
  if (a === 0) return "0";
  const decimals = Math.min(20, Math.max(2, -Math.floor(Math.log10(a)) + 3));
  return a.toFixed(decimals).replace(/0+$/, "").replace(/\.$/, "");
}

/** A percentage: 4.90%; signed when asked: +3.54%, −0.47%. */
export function pct(value, { digits = 2, signed = false } = {}) {
  const v = num(value);
  if (v === null) return "unknown";
  const text = `${Math.abs(v).toFixed(digits)}%`;
  if (!signed) return v < 0 ? `-${text}` : text;
  return v > 0 ? `+${text}` : v < 0 ? `−${text}` : text;
}

/** A token amount: 12,500.5, 2.718282, 420.69T. */
export function amount(value) {
  const v = num(value);
  if (v === null) return "unknown";
  const a = Math.abs(v);
  for (const [bound, suffix] of [[1e12, "T"], [1e9, "B"], [1e6, "M"]]) {
    if (a >= bound) return `${(v / bound).toFixed(2)}${suffix}`;
  }
  if (a > 0 && a < 0.000001) return smallNumber(v);
  return v.toLocaleString("en-US", { maximumFractionDigits: 6 });
}

/** A whole count with grouping: 1,234. */
export function count(value) {
  const v = num(value);
  return v === null ? "unknown" : Math.round(v).toLocaleString("en-US");
}

/** A day (YYYY-MM-DD) from unix seconds or an ISO date-time. */
export function day(value) {
  if (typeof value === "number" && Number.isFinite(value)) {
    return new Date(value * 1000).toISOString().slice(0, 10);
  }
  const s = str(value);
  return s && /^\d{4}-\d{2}-\d{2}/.test(s) ? s.slice(0, 10) : null;
}

/** A slug or key in words: "very_high" → "Very high", "aave-v3" stays as it is. */
export function words(value) {
  const s = str(value);
  if (!s) return "";
  const spaced = s.replace(/_/g, " ").trim();
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

const CHAIN_NAMES = {
  ethereum: "Ethereum",
  base: "Base",
  arbitrum: "Arbitrum",
  optimism: "Optimism",
  polygon: "Polygon",
  bsc: "BNB Chain",
  avalanche: "Avalanche",
  gnosis: "Gnosis",
  linea: "Linea",
  scroll: "Scroll",
  zksync: "zkSync",
  sonic: "Sonic",
  mantle: "Mantle",
  solana: "Solana",
  tron: "Tron",
  bitcoin: "Bitcoin",
};

/** A chain slug as people write it. */
export function chainName(value) {
  const s = str(value);
  if (!s) return "";
  return CHAIN_NAMES[s.toLowerCase()] || words(s.replace(/-/g, " "));
}

const RISK_WORDS = { low: "Low risk", medium: "Medium risk", high: "High risk", very_high: "Very high risk" };

/** A risk rating in words ("very_high" → "Very high risk"); unrated when there is none. */
export function riskWords(value) {
  const s = str(value);
  if (!s) return "Unrated";
  return RISK_WORDS[s.toLowerCase()] || `${words(s)} risk`;
}

const SORT_WORDS = {
  apy: "APY",
  apy_base: "base APY",
  apy_reward: "reward APY",
  tvl_usd: "TVL",
  security_score: "security score",
  reward_share: "share paid in rewards",
  updated_at: "last update",
  rank: "market-cap rank",
  marketcap: "market cap",
  liquidity: "DEX liquidity",
  volume_24h: "24-hour volume",
  vol_mcap_ratio: "volume to market cap",
  authenticity_score: "authenticity score",
  holders: "holder count",
  price_change_1h: "1-hour price change",
  price_change_24h: "24-hour price change",
  price_change_7d: "7-day price change",
};

/** An index order in words: "apy:desc,tvl_usd:desc" → "highest APY first". */
export function sortWords(sortBy) {
  const s = str(sortBy);
  if (!s) return "";
  const [field, direction] = s.split(",")[0].split(":");
  if (field === "_text_match") return "closest match first";
  if (field === "rank") return direction === "desc" ? "lowest-ranked first" : "largest first (by market-cap rank)";
  const what = SORT_WORDS[field] || words(field).toLowerCase();
  return `${direction === "asc" ? "lowest" : "highest"} ${what} first`;
}

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BASE58 = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
// EIP-7528's stand-in for a chain's native asset: not a contract to look up.
const NATIVE_PLACEHOLDER = "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";

/** True for an address an explorer can show (EVM or Solana), not the native placeholder. */
export function isAddress(value) {
  const s = str(value);
  return Boolean(s && ((EVM_ADDRESS.test(s) && s.toLowerCase() !== NATIVE_PLACEHOLDER) || BASE58.test(s)));
}

/** 0x2571…c533: the head and tail of an address (the whole value goes to the copy button). */
export function shortAddress(value) {
  const s = str(value) || "";
  return s.length > 14 ? `${s.slice(0, 6)}…${s.slice(-4)}` : s;
}

// Public block explorers, one per chain: an address there is the same address everywhere.
const EXPLORERS = {
  ethereum: "https://etherscan.io",
  base: "https://basescan.org",
  arbitrum: "https://arbiscan.io",
  optimism: "https://optimistic.etherscan.io",
  polygon: "https://polygonscan.com",
  bsc: "https://bscscan.com",
  avalanche: "https://snowtrace.io",
  gnosis: "https://gnosisscan.io",
  linea: "https://lineascan.build",
  scroll: "https://scrollscan.com",
  zksync: "https://era.zksync.network",
  sonic: "https://sonicscan.org",
  mantle: "https://mantlescan.xyz",
};

/** The explorer page of an address on a chain, or null (unknown chain, not an address). */
export function explorerUrl(chain, address) {
  const s = str(address);
  if (!s || !isAddress(s)) return null;
  const c = (str(chain) || "ethereum").toLowerCase();
  if (BASE58.test(s)) return c === "solana" ? `https://solscan.io/account/${s}` : null;
  const base = EXPLORERS[c];
  return base ? `${base}/address/${s}` : null;
}

// Values a link carries when it was built from a field that was missing.
const BROKEN = new Set(["undefined", "null", "none", "nan"]);

/** A link a card may show: http(s) only, and not visibly broken; else null. */
export function safeUrl(value) {
  const s = str(value);
  if (!s) return null;
  let url;
  try {
    url = new URL(s);
  } catch (e) {
    return null;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return null;
  for (const v of url.searchParams.values()) if (BROKEN.has(v.toLowerCase())) return null;
  if (/\/(undefined|null)(\/|$)/i.test(url.pathname)) return null;
  return url.href;
}
