// Charts of the result cards, drawn as SVG from numbers (never from markup): each is one
// `role="img"` element whose `aria-label` says what is plotted and what it shows, so a
// screen reader gets the reading a sighted user gets from the line. Colours come from the
// theme's CSS variables (light and dark alike); the axis labels are HTML beside the SVG,
// so they keep their size however narrow the chart is drawn.

import { day, num } from "./format.js";

const SVG_NS = "http://www.w3.org/2000/svg";
const WIDTH = 300;
const HEIGHT = 100;

function svgEl(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

function htmlEl(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function plotSvg(label, className) {
  const svg = svgEl("svg", {
    class: `chart-svg ${className}`,
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    preserveAspectRatio: "none",
    role: "img",
    "aria-label": label,
    focusable: "false",
  });
  const title = svgEl("title");
  title.textContent = label;
  svg.append(title);
  return svg;
}

/** The points of a series with a number each, oldest first: [{t, v}] (t in unix seconds). */
export function series(points, key) {
  const out = [];
  for (const p of Array.isArray(points) ? points : []) {
    const t = num(p?.timestamp);
    const v = num(p?.[key]);
    if (t !== null && v !== null) out.push({ t, v });
  }
  return out.sort((a, b) => a.t - b.t);
}

/**
 * A line over time: `points` [{t, v}] (two at least), `format` writes a value for people,
 * `what` names the series ("APY of USDT (Syrup USDT)"). Returns a <figure>, or null.
 */
export function lineChart({ title, what, points, format, className = "" }) {
  if (!Array.isArray(points) || points.length < 2) return null;
  const values = points.map((p) => p.v);
  const low = Math.min(...values);
  const high = Math.max(...values);
  const first = points[0];
  const last = points[points.length - 1];
  const label =
    `${what}, ${points.length} daily points from ${day(first.t)} to ${day(last.t)}: ` +
    `${format(first.v)} at the start, ${format(last.v)} at the end, ` +
    `lowest ${format(low)}, highest ${format(high)}.`;
  const span = high - low || Math.abs(high) || 1;
  const top = high + span * 0.08;
  const bottom = low - span * 0.08;
  const t0 = first.t;
  const tSpan = last.t - first.t || 1;
  const x = (t) => ((t - t0) / tSpan) * WIDTH;
  const y = (v) => HEIGHT - ((v - bottom) / (top - bottom)) * HEIGHT;
  const svg = plotSvg(label, className);
  for (const frac of [0.25, 0.5, 0.75]) {
    svg.append(svgEl("line", { class: "chart-grid", x1: 0, x2: WIDTH, y1: HEIGHT * frac, y2: HEIGHT * frac, "vector-effect": "non-scaling-stroke" }));
  }
  const coords = points.map((p) => `${x(p.t).toFixed(2)},${y(p.v).toFixed(2)}`);
  svg.append(
    svgEl("path", { class: "chart-area", d: `M0,${HEIGHT} L${coords.join(" L")} L${WIDTH},${HEIGHT} Z` }),
    svgEl("polyline", { class: "chart-line", points: coords.join(" "), fill: "none", "vector-effect": "non-scaling-stroke" }),
  );
  const figure = htmlEl("figure", `chart ${className}`.trim());
  figure.append(htmlEl("figcaption", "chart-title", title));
  const body = htmlEl("div", "chart-body");
  const axis = htmlEl("div", "chart-y");
  axis.setAttribute("aria-hidden", "true");
  axis.append(htmlEl("span", "", format(high)), htmlEl("span", "", format(low)));
  body.append(axis, svg);
  const dates = htmlEl("div", "chart-x");
  dates.setAttribute("aria-hidden", "true");
  dates.append(htmlEl("span", "", day(first.t)), htmlEl("span", "", day(last.t)));
  figure.append(body, dates);
  return figure;
}

function bandSvg(label, from, to, at, scale) {
  const svg = plotSvg(label, "chart-band-svg");
  svg.setAttribute("viewBox", `0 0 ${WIDTH} 30`);
  svg.append(svgEl("line", { class: "band-track", x1: 0, x2: WIDTH, y1: 15, y2: 15, "vector-effect": "non-scaling-stroke" }));
  const a = scale(from);
  const b = scale(to);
  svg.append(svgEl("rect", { class: "band-range", x: Math.min(a, b), y: 8, width: Math.max(2, Math.abs(b - a)), height: 14, rx: 3 }));
  if (at !== null) {
    const m = Math.min(WIDTH - 1.5, Math.max(1.5, scale(at)));
    svg.append(svgEl("rect", { class: "band-marker", x: m - 1.5, y: 2, width: 3, height: 26 }));
  }
  return svg;
}

function bandRow(title, svg) {
  const row = htmlEl("div", "band-row");
  const caption = htmlEl("div", "band-label", title);
  caption.setAttribute("aria-hidden", "true");
  row.append(caption, svg);
  return row;
}

/**
 * A token's price against its 24-hour range and its all-time range (the latter on a log
 * scale: an all-time range spans orders of magnitude), one labelled SVG each. `format`
 * writes a price. Returns a <figure>, or null when neither range is known.
 */
export function priceBand({ name, price, low24, high24, atl, ath, format }) {
  const day24 = low24 !== null && high24 !== null && high24 >= low24;
  const allTime = atl !== null && ath !== null && ath > 0 && atl > 0 && ath >= atl;
  if (!day24 && !allTime) return null;
  const now = price !== null ? `${format(price)} now, ` : "";
  const figure = htmlEl("figure", "chart chart-band");
  figure.append(htmlEl("figcaption", "chart-title", "Price band"));
  if (day24) {
    // A little room either side, so a price at the edge of its range stays visible.
    const pad = (high24 - low24) * 0.15 || Math.abs(high24) * 0.01 || 1;
    const lo = Math.min(low24, price ?? low24) - pad;
    const hi = Math.max(high24, price ?? high24) + pad;
    const label = `Price of ${name} in the last 24 hours: ${now}between ${format(low24)} and ${format(high24)}.`;
    const svg = bandSvg(label, low24, high24, price, (v) => ((v - lo) / (hi - lo)) * WIDTH);
    figure.append(bandRow(`Last 24 hours: ${format(low24)} – ${format(high24)}`, svg));
  }
  if (allTime) {
    const lo = Math.log10(atl) - 0.1;
    const hi = Math.log10(ath) + 0.1;
    const scale = (v) => ((Math.log10(Math.max(v, atl / 10)) - lo) / (hi - lo)) * WIDTH;
    const label = `Price of ${name} against its all-time range, on a log scale: ${now}between ${format(atl)} and ${format(ath)}.`;
    const svg = bandSvg(label, atl, ath, price, scale);
    figure.append(bandRow(`All time: ${format(atl)} – ${format(ath)} (log scale)`, svg));
  }
  return figure;
}
