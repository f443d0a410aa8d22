// Result cards: each tool result with structured content is drawn as the one presentation of
// its kind (a vault table, a wallet's holdings and positions, a token card, a risk card, an
// address card, a market table, feed items, history charts), from the data, never by
// reading the tool's text. The model's (or the demo planner's) words stay above them.
//
// Safety: every value is written as a DOM text node or an attribute, never as markup;
// links are http(s) only (format.safeUrl), open in a new tab without opener or referrer.
// The data may come from a server we do not run, so each value is type-checked first
// (format.num/str/list/obj) and a card with the wrong shape is not drawn at all.

import { lineChart, priceBand, series } from "./charts.js";
import {
  amount,
  chainName,
  count,
  day,
  explorerUrl,
  isAddress,
  list,
  num,
  obj,
  pct,
  price,
  riskWords,
  safeUrl,
  shortAddress,
  sortWords,
  str,
  usd,
  usdExact,
  words,
} from "./format.js";

const DASH = "—";

// Tool name → card kind. Catalogue lookups (protocols, assets) are often a step towards
// another answer: they get a card only when nothing else in the turn has one.
const KINDS = {
  search_vaults: "vaults",
  top_yields: "vaults",
  vault_history: "history",
  analyze_yield: "yield",
  analyze_risk: "risk",
  wallet_portfolio: "wallet",
  wallet_positions: "wallet",
  wallet_top_positions: "wallet",
  search_protocols: "protocols",
  search_vault_assets: "assets",
  analyze_token: "token",
  analyze_address: "address",
  search_feed: "feed",
  search_tokens: "market",
};
const LOOKUPS = new Set(["protocols", "assets"]);

// What a result must hold to be drawn as its kind.
const SHAPES = {
  vaults: (s) => Array.isArray(s.vaults),
  history: (s) => Array.isArray(s.points),
  yield: (s) => obj(s.vault) !== null,
  risk: (s) => Array.isArray(s.factors) && obj(s.vault) !== null,
  wallet: (s) => Array.isArray(s.positions) && str(s.address) !== null,
  protocols: (s) => Array.isArray(s.protocols),
  assets: (s) => Array.isArray(s.tokens),
  token: (s) => obj(s.token) !== null && obj(s.token.identity) !== null,
  address: (s) => obj(s.address) !== null && str(s.address.address) !== null,
  feed: (s) => Array.isArray(s.hits) && s.hits.every((h) => obj(h?.item)),
  market: (s) => Array.isArray(s.hits) && num(s.found) !== null,
};

/** The card kind of a tool's structured result, or null when it has none. */
export function cardKind(name, structured) {
  const kind = KINDS[name];
  const data = obj(structured);
  if (!kind || !data) return null;
  try {
    return SHAPES[kind](data) ? kind : null;
  } catch (e) {
    return null;
  }
}

// --- building blocks ----------------------------------------------------------------------

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** A link when the URL is usable, else the text alone. */
function link(url, text, className = "") {
  const href = safeUrl(url);
  if (!href) return el("span", className, text);
  const a = el("a", className, text);
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  return a;
}

function copyButton(value, what) {
  const button = el("button", "btn btn-small copy-btn", "Copy");
  button.type = "button";
  button.setAttribute("aria-label", `Copy ${what} ${value}`);
  button.title = `Copy ${value}`;
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(value);
      button.textContent = "Copied";
      setTimeout(() => (button.textContent = "Copy"), 1500);
    } catch (e) {
      button.textContent = "Copy failed";
    }
  });
  return button;
}

/** A short address with a copy button and, where one exists, its explorer page. */
function addressChip(address, chain, what = "address") {
  const value = str(address);
  if (!value) return null;
  const box = el("span", "addr");
  const code = el("code", "addr-short", shortAddress(value));
  code.title = value;
  box.append(code, copyButton(value, what));
  const explorer = explorerUrl(chain, value);
  if (explorer) {
    const a = link(explorer, "Explorer", "addr-explorer");
    a.setAttribute("aria-label", `${what} ${shortAddress(value)} on the block explorer`);
    box.append(a);
  }
  return box;
}

function sub(...parts) {
  const line = el("span", "sub");
  const kept = parts.filter((p) => p !== null && p !== undefined && p !== "");
  kept.forEach((part, i) => {
    if (i) line.append(" · ");
    line.append(part);
  });
  return line;
}

function card(kind, title, subtitle) {
  const article = el("article", `card card-${kind}`);
  article.dataset.kind = kind;
  const head = el("header", "card-head");
  const h = el("h3", "card-title");
  if (typeof title === "string") h.textContent = title;
  else h.append(title);
  head.append(h);
  if (subtitle) head.append(typeof subtitle === "string" ? el("p", "card-sub", subtitle) : subtitle);
  article.append(head);
  return article;
}

/**
 * A table: `columns` [{label, num, cls}], `rows` arrays of cells (a Node or text). Wrapped in
 * a keyboard-reachable box that scrolls sideways when it must.
 */
function table(label, columns, rows) {
  const box = el("div", "table-scroll card-table");
  box.tabIndex = 0;
  box.setAttribute("role", "region");
  box.setAttribute("aria-label", label);
  const t = el("table");
  const head = el("thead");
  const tr = el("tr");
  for (const c of columns) {
    const th = el("th", [c.num ? "num" : "", c.cls || ""].join(" ").trim() || null, c.label);
    th.scope = "col";
    tr.append(th);
  }
  head.append(tr);
  const body = el("tbody");
  for (const row of rows) {
    const r = el("tr");
    row.forEach((cell, i) => {
      const c = columns[i] || {};
      const td = el("td", [c.num ? "num" : "", c.cls || ""].join(" ").trim() || null);
      if (cell instanceof Node) td.append(cell);
      else td.textContent = cell === null || cell === undefined || cell === "" ? DASH : String(cell);
      r.append(td);
    });
    body.append(r);
  }
  t.append(head, body);
  box.append(t);
  return box;
}

function stats(items) {
  const box = el("dl", "stats");
  for (const [label, value, extra] of items) {
    if (value === null || value === undefined || value === "") continue;
    const item = el("div", "stat");
    const dd = el("dd", "stat-value");
    if (value instanceof Node) dd.append(value);
    else dd.textContent = String(value);
    if (extra) dd.append(el("span", "stat-extra", extra));
    item.append(el("dt", "stat-label", label), dd);
    box.append(item);
  }
  return box.childElementCount ? box : null;
}

function note(text, className = "card-note") {
  return text ? el("p", className, text) : null;
}

function bullets(items, className = "card-list") {
  const kept = items.filter(Boolean);
  if (!kept.length) return null;
  const ul = el("ul", className);
  for (const item of kept) {
    const li = el("li");
    if (item instanceof Node) li.append(item);
    else li.textContent = item;
    ul.append(li);
  }
  return ul;
}

function section(title, ...content) {
  const kept = content.filter(Boolean);
  if (!kept.length) return null;
  const box = el("section", "card-section");
  box.append(el("h4", "card-section-title", title), ...kept);
  return box;
}

function append(parent, ...children) {
  for (const child of children) if (child) parent.append(child);
  return parent;
}

function pctOrDash(value, options) {
  return num(value) === null ? DASH : pct(value, options);
}

function riskCell(rating, score) {
  const box = el("span", "risk");
  box.dataset.rating = str(rating) || "unrated";
  box.append(el("span", "risk-words", riskWords(rating)));
  if (num(score) !== null) box.append(el("span", "sub", `score ${Math.round(score)}/100`));
  return box;
}

function vaultName(vault) {
  const name = str(vault?.name) || "This vault";
  return link(vault?.url, name, "vault-link");
}

function vaultPlace(vault) {
  return sub(str(vault?.protocol), chainName(vault?.chain));
}

// --- vaults -------------------------------------------------------------------------------

function vaultsCard(s) {
  const vaults = list(s.vaults).filter(obj);
  const found = num(s.found) ?? vaults.length;
  const bits = [`${count(found)} ${found === 1 ? "vault matches" : "vaults match"}`];
  const order = sortWords(s.sort_by);
  if (order) bits.push(order);
  if (num(s.total_pages) > 1) bits.push(`page ${count(s.page)} of ${count(s.total_pages)}`);
  const article = card("vaults", "Vaults", bits.join(" · "));
  if (!vaults.length) {
    article.append(note(found ? "That page is past the last one." : "No vault matches these conditions."));
    return article;
  }
  const rows = vaults.map((v) => {
    const name = el("span", "name-cell");
    // One line under the name: where it is, and its contract on the explorer when known.
    const explorer = explorerUrl(v.chain, v.address);
    const place = sub(str(v.protocol), chainName(v.chain), explorer ? link(explorer, "Explorer", "addr-explorer") : null);
    name.append(vaultName(v), place);
    if (v.outlier) name.append(el("span", "badge badge-warn", "likely broken data"));
    return [name, pctOrDash(v.apy), pctOrDash(v.apy_base), pctOrDash(v.apy_reward), num(v.tvl_usd) === null ? DASH : usd(v.tvl_usd), riskCell(v.risk_rating, v.security_score)];
  });
  article.append(
    table("Vaults", [
      { label: "Vault", cls: "name" },
      { label: "APY", num: true, cls: "apy" },
      { label: "Base", num: true },
      { label: "Rewards", num: true },
      { label: "TVL", num: true },
      { label: "Risk" },
    ], rows),
  );
  if (s.only_outliers) {
    append(article, note("Only vaults usually left out of APY rankings match (flagged by their source as likely broken data, or with TVL unknown), so they are shown; none above 1,000% APY."));
  } else if (s.outliers_left_out) {
    append(article, note("Left out as likely broken data: APYs above 1,000%, vaults their source flags as outliers, and vaults whose TVL is unknown."));
  }
  if (num(s.total_pages) > num(s.page)) append(article, note("Ask for the next page to see more.", "card-hint"));
  return article;
}

// --- one vault: history, yield, risk ------------------------------------------------------

function vaultHead(kind, title, vault) {
  const heading = el("span");
  heading.append(`${title}: `, vaultName(vault));
  const line = vaultPlace(vault);
  const address = isAddress(vault?.address) ? addressChip(vault.address, vault.chain, "vault address") : null;
  if (address) line.append(" · ", address);
  const article = card(kind, heading, line);
  return article;
}

function historyCard(s) {
  const vault = obj(s.vault);
  const article = vaultHead("history", "History", vault);
  const summary = obj(s.summary);
  const apy = series(s.points, "apy");
  const tvl = series(s.points, "tvl_usd");
  const name = str(vault?.name) || "this vault";
  if (summary) {
    const tvlChange = num(summary.tvl_change_pct);
    append(
      article,
      stats([
        ["APY", num(summary.apy_last) === null ? null : pct(summary.apy_last), num(summary.apy_first) === null ? null : ` from ${pct(summary.apy_first)}`],
        ["Mean APY", num(summary.apy_mean) === null ? null : pct(summary.apy_mean)],
        ["APY range", num(summary.apy_min) === null ? null : `${pct(summary.apy_min)} – ${pct(summary.apy_max)}`],
        ["TVL", num(summary.tvl_last_usd) === null ? null : usd(summary.tvl_last_usd), tvlChange === null ? null : ` ${pct(tvlChange, { signed: true, digits: 1 })}`],
      ]),
    );
  }
  const apyChart = lineChart({ title: "APY", what: `APY of ${name}`, points: apy, format: (v) => pct(v), className: "chart-apy" });
  const tvlChart = lineChart({ title: "TVL", what: `TVL of ${name}`, points: tvl, format: (v) => usd(v), className: "chart-tvl" });
  if (apyChart || tvlChart) {
    append(article, append(el("div", "charts"), apyChart, tvlChart));
  } else if (apy.length === 1) {
    append(article, note(`Only one day of history is on record: APY ${pct(apy[0].v)} on ${day(apy[0].t)}.`));
  } else {
    append(article, note(`No history is on record for the last ${count(s.days)} days.`));
  }
  if (summary && str(summary.first_day)) {
    append(article, note(`${count(summary.points)} daily points, ${summary.first_day} to ${summary.last_day} (UTC).`, "card-foot"));
  }
  return article;
}

const SUSTAINABILITY = {
  organic: "Mostly earned from fees or interest",
  mixed: "Part fees or interest, part reward tokens",
  reward_driven: "Mostly paid in reward tokens",
  unknown: "Where it comes from is not known",
};

function splitBar(baseShare, rewardShare) {
  const base = num(baseShare);
  const reward = num(rewardShare);
  if (base === null || reward === null) return null;
  const bar = el("div", "split");
  bar.setAttribute("role", "img");
  bar.setAttribute("aria-label", `${Math.round(base)}% base yield, ${Math.round(reward)}% rewards`);
  const b = el("span", "split-base");
  b.style.width = `${Math.max(0, Math.min(100, base))}%`;
  const r = el("span", "split-reward");
  r.style.width = `${Math.max(0, Math.min(100, reward))}%`;
  bar.append(b, r);
  return bar;
}

function yieldCard(s) {
  const vault = obj(s.vault);
  const article = vaultHead("yield", "Yield", vault);
  const band = str(s.apy_band_label);
  append(
    article,
    stats([
      ["APY", num(vault?.apy) === null ? null : pct(vault.apy), band ? ` ${band}` : null],
      ["Base", num(vault?.apy_base) === null ? null : pct(vault.apy_base)],
      ["Rewards", num(vault?.apy_reward) === null ? null : pct(vault.apy_reward)],
      ["TVL", num(vault?.tvl_usd) === null ? null : usd(vault.tvl_usd)],
      ["Risk", riskWords(vault?.risk_rating), num(vault?.security_score) === null ? null : ` score ${Math.round(vault.security_score)}/100`],
    ]),
  );
  const base = num(s.base_share_pct);
  const reward = num(s.reward_share_pct);
  const source = section(
    "Where the yield comes from",
    note(
      `${SUSTAINABILITY[s.sustainability] || SUSTAINABILITY.unknown}` +
        (base !== null && reward !== null ? `: ${Math.round(base)}% base, ${Math.round(reward)}% rewards.` : "."),
    ),
    splitBar(base, reward),
  );
  append(article, source);
  if (typeof s.sustainable === "boolean") {
    const because = list(s.sustainable_because).filter(str);
    append(article, section("Likely to hold?", note(`${s.sustainable ? "Likely" : "Not likely"}${because.length ? `: ${because.join("; ")}.` : "."}`)));
  }
  const history = obj(s.history);
  const peers = obj(s.peers);
  const facts = [];
  if (history && num(history.apy_mean) !== null) {
    facts.push(`Over ${count(history.points)} daily points (${history.first_day} to ${history.last_day}): mean APY ${pct(history.apy_mean)}, range ${pct(history.apy_min)} – ${pct(history.apy_max)}.`);
  }
  if (peers && num(peers.peers) > 0 && num(peers.percentile) !== null) {
    facts.push(`Higher than ${pct(peers.percentile, { digits: 0 })} of ${count(peers.peers)} similar vaults on ${chainName(vault?.chain)} (their median APY ${pct(peers.median_apy)}).`);
  }
  append(article, section("Compared", bullets(facts)));
  append(article, section("Worth knowing", bullets(list(s.notes).filter(str))));
  return article;
}

const ASSESSMENTS = { good: "Good", neutral: "Neutral", concern: "Concern", unknown: "Unknown" };
const FACTOR_VALUES = { yes: "Yes", no: "No", single: "One asset", multi: "Several assets", unknown: "Unknown" };

/** A factor's reading in words: a chain by its name, yes/no and exposure spelled out. */
function factorValue(f) {
  const value = str(f.value) || "";
  if (f.factor === "chain") return chainName(value);
  return FACTOR_VALUES[value.toLowerCase()] || value;
}

function riskCard(s) {
  const vault = obj(s.vault);
  const article = vaultHead("risk", "Risk", vault);
  const score = num(s.security_score);
  const block = el("div", "score");
  block.dataset.rating = str(s.risk_rating) || "unrated";
  block.append(el("span", "score-value", score === null ? "Unscored" : `${Math.round(score)}/100`), el("span", "score-words", riskWords(s.risk_rating)));
  block.append(
    el(
      "p",
      "score-meaning",
      "The security score runs from 0 (worst) to 100 (best), built from audits, protocol age, TVL, past exploits, the chain and impermanent-loss exposure. A higher score lowers smart-contract risk but never removes it.",
    ),
  );
  article.append(block);
  const factors = list(s.factors).filter(obj).map((f) => {
    const item = el("div", "factor");
    const assessment = str(f.assessment) || "unknown";
    item.dataset.assessment = assessment;
    const head = el("div", "factor-head");
    head.append(el("span", "factor-name", str(f.label) || words(f.factor)), el("span", "factor-value", factorValue(f)), el("span", "badge factor-assessment", ASSESSMENTS[assessment] || words(assessment)));
    item.append(head);
    if (str(f.note)) item.append(el("span", "sub", f.note));
    return item;
  });
  append(article, section("Factors", bullets(factors, "factors")));
  const parts = list(s.score_parts).filter(obj).filter((p) => num(p.points) !== null && num(p.out_of) > 0);
  if (parts.length) {
    const rows = parts.map((p) => {
      const meter = el("meter", "part-meter");
      meter.min = 0;
      meter.max = p.out_of;
      meter.value = p.points;
      meter.setAttribute("aria-label", `${str(p.label) || words(p.component)}: ${p.points.toFixed(1)} of ${p.out_of}`);
      return [str(p.label) || words(p.component), meter, `${p.points.toFixed(1)} of ${Math.round(p.out_of)}`];
    });
    const penalties = obj(s.breakdown?.penalties) || {};
    const lost = Object.values(penalties).filter((v) => num(v) !== null).reduce((a, b) => a + b, 0);
    append(
      article,
      section(
        "How the score adds up",
        table("Score parts", [{ label: "Part" }, { label: "Points", cls: "meter-cell" }, { label: "", num: true }], rows),
        lost ? note(`Minus ${lost.toFixed(0)} points for risk flags from the data source.`) : null,
      ),
    );
  }
  return article;
}

// --- wallets ------------------------------------------------------------------------------

function walletCard(s) {
  const positions = list(s.positions).filter(obj);
  const holdings = positions.filter((p) => p.kind !== "vault");
  const vaults = positions.filter((p) => p.kind === "vault");
  const chains = list(s.chains_read).filter(str);
  const title = el("span");
  title.append(str(s.ens_name) ? `Wallet ${s.ens_name}` : "Wallet");
  const line = sub(addressChip(s.address, chains.includes("ethereum") || !chains.length ? "ethereum" : chains[0], "wallet address"));
  const article = card("wallet", title, line);
  const known = positions.reduce((sum, p) => sum + (num(p.value_usd) ?? 0), 0);
  const total = num(s.total_value_usd) ?? known;
  const unpriced = positions.filter((p) => num(p.value_usd) === null).length;
  append(
    article,
    stats([
      ["Known value", usdExact(total), num(s.total_positions) !== null ? ` of all ${count(s.total_positions)} positions` : null],
      ["Vault APY", num(s.weighted_vault_apy) === null ? null : pct(s.weighted_vault_apy), num(s.weighted_vault_apy) === null ? null : " weighted by value"],
      ["Positions", count(num(s.total_positions) ?? positions.length)],
      ["Without a USD value", unpriced ? count(unpriced) : null],
    ]),
  );
  if (!positions.length) {
    append(article, note("This wallet holds none of the listed tokens and no position in a known vault."));
  }
  if (holdings.length) {
    const rows = holdings.map((p) => {
      const token = el("span", "name-cell");
      token.append(el("strong", "", str(p.symbol) || "?"));
      const native = p.kind === "native";
      token.append(sub(native ? null : str(p.name), chainName(p.chain), native ? "native balance" : null));
      if (!native && isAddress(p.contract)) token.append(addressChip(p.contract, p.chain, `${str(p.symbol) || "token"} contract`));
      for (const n of list(p.notes).filter(str)) token.append(el("span", "sub sub-note", n));
      return [token, amount(p.balance), num(p.value_usd) === null ? "unknown" : usdExact(p.value_usd), num(p.share_of_wallet_pct) === null ? DASH : pct(p.share_of_wallet_pct)];
    });
    append(article, section("Holdings", table("Holdings", [{ label: "Token", cls: "name" }, { label: "Amount", num: true }, { label: "Value", num: true }, { label: "Share", num: true }], rows)));
  }
  if (vaults.length) {
    const rows = vaults.map((p) => {
      const name = el("span", "name-cell");
      name.append(link(p.vault_url, str(p.name) || "Vault", "vault-link"), sub(str(p.protocol), chainName(p.chain)));
      // What the shares are worth in the vault's asset, under its name: the figures that
      // follow (value, APY) then fit a phone's width.
      const holds = num(p.underlying_amount) === null ? null : `holds ${amount(p.underlying_amount)} ${str(p.symbol) || ""}`.trim();
      name.append(sub(holds, num(p.balance) === null ? null : `${amount(p.balance)} shares`));
      if (isAddress(p.contract)) name.append(addressChip(p.contract, p.chain, "vault address"));
      for (const n of list(p.notes).filter(str)) name.append(el("span", "sub sub-note", n));
      return [name, num(p.value_usd) === null ? "unknown" : usdExact(p.value_usd), pctOrDash(p.apy), num(p.share_of_wallet_pct) === null ? DASH : pct(p.share_of_wallet_pct), riskCell(p.risk_rating, p.security_score)];
    });
    append(
      article,
      section(
        "Vault positions",
        table("Vault positions", [{ label: "Vault", cls: "name" }, { label: "Value", num: true }, { label: "APY", num: true, cls: "apy" }, { label: "Share", num: true }, { label: "Risk" }], rows),
      ),
    );
  }
  if (unpriced) append(article, note(`${count(unpriced)} ${unpriced === 1 ? "position has" : "positions have"} no USD value on record; the known value leaves ${unpriced === 1 ? "it" : "them"} out.`));
  const problems = [
    ...list(s.chain_errors).filter(obj).map((e) => `Could not read ${chainName(e.chain)}: ${str(e.error) || "no answer"}.`),
    ...list(s.unreadable).filter(obj).map((u) => `Could not read the holding in ${str(u.name) || "a contract"} on ${chainName(u.chain)}: ${str(u.reason) || "the call failed"}.`),
  ];
  append(article, bullets(problems, "card-list card-problems"));
  const blocks = Object.entries(obj(s.blocks) || {}).filter(([, n]) => num(n) !== null);
  if (blocks.length) append(article, note(`Read on ${blocks.map(([c, n]) => `${chainName(c)} at block ${count(n)}`).join(", ")}.`, "card-foot"));
  return article;
}

// --- catalogue lookups --------------------------------------------------------------------

function protocolsCard(s) {
  const protocols = list(s.protocols).filter(obj);
  const article = card("protocols", "Protocols", `${count(protocols.length)} ${protocols.length === 1 ? "protocol" : "protocols"}, largest TVL first`);
  if (!protocols.length) return append(article, note("No protocol matches."));
  const rows = protocols.map((p) => {
    const name = el("span", "name-cell");
    name.append(el("strong", "", str(p.protocol) || "?"), sub(list(p.chains).filter(str).map(chainName).join(", ")));
    return [name, count(p.vaults), usd(p.total_tvl_usd), pctOrDash(p.median_apy), pctOrDash(p.max_apy)];
  });
  return append(article, table("Protocols", [{ label: "Protocol", cls: "name" }, { label: "Vaults", num: true }, { label: "TVL", num: true }, { label: "Median APY", num: true }, { label: "Top APY", num: true }], rows));
}

function assetsCard(s) {
  const tokens = list(s.tokens).filter(obj);
  const article = card("assets", "Tokens held by vaults", `${count(tokens.length)} found`);
  if (!tokens.length) return append(article, note("No vault holds a token of that name."));
  const rows = tokens.map((t) => {
    const name = el("span", "name-cell");
    name.append(el("strong", "", str(t.symbol) || "?"), sub(chainName(t.chain), t.stablecoin ? "stablecoin" : null));
    const addresses = list(t.addresses).filter(isAddress);
    // One contract for the symbol on this chain: its explorer page; several: none is picked.
    if (addresses.length === 1) name.append(addressChip(addresses[0], t.chain, `${str(t.symbol) || "token"} contract`));
    return [name, count(t.vaults), usd(t.total_tvl_usd), pctOrDash(t.max_apy)];
  });
  return append(article, table("Tokens held by vaults", [{ label: "Token", cls: "name" }, { label: "Vaults", num: true }, { label: "TVL", num: true }, { label: "Top APY", num: true }], rows));
}

// --- tokens and markets -------------------------------------------------------------------

const SEVERITY = { info: "Note", low: "Low", moderate: "Moderate", high: "High", critical: "Critical" };

function tokenCard(s) {
  const a = s.token;
  const ident = obj(a.identity);
  const name = `${str(ident.name) || "Token"} (${str(ident.symbol) || "?"})`;
  const line = sub(chainName(ident.chain), isAddress(ident.address) ? addressChip(ident.address, ident.chain, "token contract") : null, safeUrl(s.page_url) ? link(s.page_url, "Token page", "token-page") : null);
  const article = card("token", name, line);
  const m = obj(a.market) || {};
  const supply = obj(a.supply) || {};
  const change = num(m.price_change_24h_pct);
  let supplyText = null;
  if (num(supply.circulating) !== null) {
    const cap = num(supply.max) ?? num(supply.total);
    supplyText = cap ? `${amount(supply.circulating)} of ${amount(cap)}` : amount(supply.circulating);
  }
  append(
    article,
    stats([
      ["Price", num(m.price_usd) === null ? null : price(m.price_usd), change === null ? null : ` ${pct(change, { signed: true })} in 24h`],
      ["Market cap", num(m.market_cap_usd) === null ? null : usd(m.market_cap_usd), num(m.market_cap_rank) ? ` rank #${m.market_cap_rank}` : null],
      ["Fully diluted", num(m.fully_diluted_valuation_usd) === null ? null : usd(m.fully_diluted_valuation_usd)],
      ["24h volume", num(m.volume_24h_usd) === null ? null : usd(m.volume_24h_usd)],
      ["Circulating supply", supplyText, num(supply.circulating_share_pct) === null ? null : ` ${pct(supply.circulating_share_pct, { digits: 1 })}`],
    ]),
  );
  append(
    article,
    priceBand({
      name,
      price: num(m.price_usd),
      low24: num(m.low_24h_usd),
      high24: num(m.high_24h_usd),
      atl: num(m.atl_usd),
      ath: num(m.ath_usd),
      format: price,
    }),
  );
  const extremes = [];
  if (num(m.ath_usd) !== null) extremes.push(`All-time high ${price(m.ath_usd)} on ${day(m.ath_date) || "an unknown day"}${num(m.ath_change_pct) === null ? "" : ` (${pct(m.ath_change_pct, { signed: true, digits: 1 })} since)`}.`);
  if (num(m.atl_usd) !== null) extremes.push(`All-time low ${price(m.atl_usd)} on ${day(m.atl_date) || "an unknown day"}.`);
  append(article, bullets(extremes));
  const liquidity = obj(a.liquidity) || {};
  const pairs = list(liquidity.pairs).filter(obj).slice(0, 3);
  append(
    article,
    section(
      "Liquidity",
      pairs.length
        ? bullets(pairs.map((p) => {
            const li = el("span");
            li.append(link(p.url, `${str(p.dex) || "DEX"} ${str(p.base_symbol) || "?"}/${str(p.quote_symbol) || "?"}`), `: liquidity ${usd(p.liquidity_usd)}, 24h volume ${usd(p.volume_24h_usd)}`);
            return li;
          }))
        : note(str(liquidity.note)),
    ),
  );
  const risk = obj(a.risk) || {};
  const notes = list(risk.notes).filter(obj).map((n) => {
    const li = el("span", "risk-note");
    li.dataset.severity = str(n.severity) || "info";
    li.append(el("span", "badge", SEVERITY[n.severity] || words(n.severity)), ` ${words(n.category)}: ${str(n.finding) || ""}`);
    return li;
  });
  append(article, section(`Risk read: ${risk.level === "unknown" || !str(risk.level) ? "unknown" : `${words(risk.level).toLowerCase()}`}`, bullets(notes)));
  const others = list(s.other_matches).filter((o) => obj(o?.identity)).map((o) => `${str(o.identity.name) || "?"} (${chainName(o.identity.chain) || "chain unknown"})`);
  if (others.length) append(article, note(`Other tokens with this symbol: ${others.join("; ")}.`));
  const asOf = str(m.as_of);
  const foot = [];
  if (asOf) foot.push(`Data as of ${asOf.slice(0, 16).replace("T", " ")} UTC.`);
  const sources = list(a.sources).filter(str);
  if (sources.length) foot.push(`Sources: ${sources.join("; ")}.`);
  append(article, note(foot.join(" "), "card-foot"));
  return article;
}

// The ranked figure's column when the table does not show it already.
const FIGURES = {
  price_change_1h: ["1h", (h) => pctOrDash(h.price_change_1h, { signed: true })],
  price_change_7d: ["7d", (h) => pctOrDash(h.price_change_7d, { signed: true })],
  liquidity: ["Liquidity", (h) => (num(h.liquidity) === null ? DASH : usd(h.liquidity))],
  vol_mcap_ratio: ["Volume / cap", (h) => (num(h.vol_mcap_ratio) === null ? DASH : h.vol_mcap_ratio.toFixed(3))],
  authenticity_score: ["Authenticity", (h) => (num(h.authenticity_score) === null ? DASH : `${h.authenticity_score}/100`)],
  holders: ["Holders", (h) => (num(h.holders) === null ? DASH : count(h.holders))],
};

function marketCard(s) {
  const hits = list(s.hits).filter(obj);
  const found = num(s.found) ?? hits.length;
  const search = obj(s.search) || {};
  const bits = [`${count(found)} found`];
  const order = sortWords(search.sort_by);
  if (order) bits.push(order);
  if (num(s.total_pages) > 1) bits.push(`page ${count(s.page)} of ${count(s.total_pages)}`);
  const article = card("market", "Tokens", bits.join(" · "));
  const snapshot = obj(s.snapshot);
  const dates = list(s.data_dates).filter(str);
  let asOf = null;
  if (snapshot && str(snapshot.date)) {
    asOf = `Data as of ${snapshot.date}: ranked by ${str(snapshot.figure) || "the figure asked for"} among tokens with market data of that day only.`;
    if (num(snapshot.left_out) > 0) asOf += ` ${count(snapshot.left_out)} matching ${snapshot.left_out === 1 ? "token" : "tokens"} with older data left out.`;
  } else if (dates.length === 1) {
    asOf = `Data as of ${dates[0]}.`;
  } else if (dates.length > 1) {
    asOf = `Market data from ${dates.length} different days (${dates.join(", ")}): each row says its day.`;
  }
  append(article, note(asOf, "card-asof"));
  if (!hits.length) return append(article, note(found ? "That page is past the last one." : "No tokens match."));
  const sortField = str(search.sort_by)?.split(",")[0].split(":")[0];
  const extra = FIGURES[sortField];
  const perRowDate = !snapshot && dates.length > 1;
  const columns = [{ label: "Token", cls: "name" }, { label: "Price", num: true }, { label: "24h", num: true }, { label: "Market cap", num: true }, { label: "24h volume", num: true }];
  if (extra) columns.push({ label: extra[0], num: true });
  if (perRowDate) columns.push({ label: "Data of", num: true });
  const rows = hits.map((h) => {
    const token = el("span", "name-cell");
    token.append(link(h.deep_link, `${str(h.name) || "?"} (${str(h.symbol) || "?"})`, "token-link"));
    const rank = num(h.rank);
    token.append(sub(chainName(h.chain), rank ? `rank #${rank}` : "unranked", h.stablecoin ? "stablecoin" : null));
    if (isAddress(h.address)) token.append(addressChip(h.address, h.chain, "token contract"));
    const row = [token, num(h.price_usd) === null ? DASH : price(h.price_usd), pctOrDash(h.price_change_24h, { signed: true }), num(h.marketcap) === null ? DASH : usd(h.marketcap), num(h.volume_24h) === null ? DASH : usd(h.volume_24h)];
    if (extra) row.push(extra[1](h));
    if (perRowDate) row.push(day(h.as_of) || DASH);
    return row;
  });
  append(article, table("Tokens", columns, rows));
  if (num(s.next_page)) append(article, note("Ask for the next page to see more.", "card-hint"));
  return article;
}

// --- addresses and the feed ---------------------------------------------------------------

const ADDRESS_RISK = {
  none_known: "No known risk",
  low: "Low risk",
  moderate: "Moderate risk",
  high: "High risk",
  critical: "Critical risk",
  unknown: "Risk unknown",
};

function addressCard(s) {
  const a = s.address;
  const labels = list(a.labels).filter(str);
  const title = str(a.entity) || labels[0] || "Address";
  const article = card("address", title, sub(addressChip(a.address, "ethereum", "address")));
  const level = str(a.risk_level) || "unknown";
  const badge = el("p", "address-risk");
  badge.dataset.level = level;
  badge.append(el("strong", "", ADDRESS_RISK[level] || words(level)));
  if (str(a.summary)) badge.append(` — ${a.summary}`);
  article.append(badge);
  if (labels.length) append(article, bullets(labels, "chips"));
  const details = [];
  if (str(a.category)) details.push(words(a.category));
  if (typeof a.is_contract === "boolean") details.push(a.is_contract ? "contract" : "wallet (externally owned)");
  if (str(a.first_seen)) details.push(`first seen ${a.first_seen}`);
  if (str(a.last_seen)) details.push(`last seen ${a.last_seen}`);
  append(article, note(details.join(" · ")));
  const token = obj(a.token);
  if (token && str(token.name)) append(article, note(`Token contract of ${token.name} (${str(token.symbol) || "?"}).`));
  const flags = list(a.risk_flags).filter(obj).map((f) => {
    const li = el("span", "risk-note");
    li.dataset.severity = str(f.severity) || "info";
    li.append(el("span", "badge", SEVERITY[f.severity] || words(f.severity)), ` ${str(f.reason) || ""}`, el("span", "sub", `Source: ${str(f.source) || "unknown"}`));
    return li;
  });
  append(article, section("Why", bullets(flags)));
  const facts = list(a.facts).filter(obj).map((f) => {
    const li = el("span");
    li.append(str(f.text) || "", el("span", "sub", `Source: ${str(f.source) || "unknown"}`));
    return li;
  });
  append(article, section("On record", bullets(facts)));
  const activity = Object.entries(obj(a.activity_counts) || {}).filter(([, v]) => num(v) !== null);
  if (activity.length) append(article, note(`Activity: ${activity.map(([k, v]) => `${words(k).toLowerCase()} ${count(v)}`).join(", ")}.`));
  const held = list(a.tokens_held).filter(obj).map((h) => `${amount(h.amount)} ${str(h.symbol) || ""} (as of ${day(h.as_of) || "an unknown day"})`);
  if (held.length) append(article, section("Tokens held", bullets(held)));
  const missing = list(a.not_on_record).filter(str);
  if (missing.length) append(article, note(`Not on record: ${missing.join(", ")}.`));
  append(article, note(str(a.scope) ? `Covers ${a.scope}.` : null, "card-foot"));
  return article;
}

function feedCard(s) {
  const hits = list(s.hits).filter((h) => obj(h?.item));
  const total = num(s.total_matches) ?? hits.length;
  const article = card("feed", "What the market says", `${count(total)} matching ${total === 1 ? "item" : "items"}, most relevant first`);
  if (!hits.length) return append(article, note("Nothing in the feed matches."));
  const items = hits.map(({ item }) => {
    const box = el("div", "feed-item");
    box.append(link(item.url, str(item.title) || "Untitled", "feed-title"));
    const when = str(item.published_at) ? `${item.published_at.slice(0, 16).replace("T", " ")} UTC` : null;
    const meta = sub(str(item.source), when);
    if (item.provenance === "curated") meta.append(" · ", el("span", "badge", "background explainer, not news"));
    box.append(meta);
    const body = str(item.body);
    if (body) box.append(el("p", "feed-body", body.length > 240 ? `${body.slice(0, 240).replace(/\s+\S*$/, "")} …` : body));
    const tokens = list(item.tokens).filter(str);
    if (tokens.length) box.append(sub(`Mentions ${tokens.join(", ")}`));
    return box;
  });
  return append(article, bullets(items, "feed"));
}

// --- the guidelines, once per answer --------------------------------------------------------

const GUIDELINES = [
  "Below 5% APY: may not be worth the risk that comes with it.",
  "5–10%: conservative; typical of lending markets and stablecoin pools on mature protocols.",
  "10–20%: medium; expect reward emissions, leverage or volatile assets behind it.",
  "20–40%: high; usually emissions that can stop, impermanent loss or young protocols.",
  "Above 40%: extreme; treat it as speculative, whatever the risk rating says.",
  "A higher security score lowers smart-contract risk but never removes it.",
  "Yield paid in a protocol's own token lasts less than yield earned from fees or interest.",
];

function guidelines(open, onToggle) {
  const box = el("details", "guidelines");
  box.open = Boolean(open);
  box.append(el("summary", "", "How to weigh a yield against its risk"), bullets(GUIDELINES));
  if (onToggle) box.addEventListener("toggle", () => onToggle(box.open));
  return box;
}

function rated(kind, s) {
  if (kind === "risk" || kind === "yield") return true;
  if (kind === "vaults") return list(s.vaults).some((v) => str(v?.risk_rating));
  if (kind === "wallet") return list(s.positions).some((p) => str(p?.risk_rating));
  if (kind === "history") return Boolean(str(s.vault?.risk_rating));
  return false;
}

const RENDER = {
  vaults: vaultsCard,
  history: historyCard,
  yield: yieldCard,
  risk: riskCard,
  wallet: walletCard,
  protocols: protocolsCard,
  assets: assetsCard,
  token: tokenCard,
  address: addressCard,
  feed: feedCard,
  market: marketCard,
};

/**
 * The cards of a turn's tool parts ({type: "tool", name, status, structured}), in call
 * order, with the yield-versus-risk guidelines once (folded unless `guidelinesOpen`; a turn
 * is drawn again as it changes, so `onGuidelinesToggle` lets the page keep the reader's
 * choice) when a card rates a risk. Returns a <section>, or null when no part has a card.
 */
export function renderCards(parts, { guidelinesOpen = false, onGuidelinesToggle = null } = {}) {
  const found = [];
  for (const part of parts || []) {
    if (part.type !== "tool" || part.status !== "ok") continue;
    const kind = cardKind(part.name, part.structured);
    if (kind) found.push({ kind, data: part.structured, callId: part.callId });
  }
  const shown = found.some((f) => !LOOKUPS.has(f.kind)) ? found.filter((f) => !LOOKUPS.has(f.kind)) : found;
  if (!shown.length) return null;
  const box = el("section", "cards");
  box.setAttribute("aria-label", "Results");
  let weigh = false;
  for (const { kind, data, callId } of shown) {
    let node = null;
    try {
      node = RENDER[kind](data);
    } catch (e) {
      // A result of an unexpected shape is left to its tool chip, which shows its text.
      node = null;
    }
    if (!node) continue;
    node.dataset.callId = callId || "";
    box.append(node);
    weigh = weigh || rated(kind, data);
  }
  if (!box.childElementCount) return null;
  if (weigh) box.append(guidelines(guidelinesOpen, onGuidelinesToggle));
  return box;
}
