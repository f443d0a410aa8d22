// Answers as GitHub-flavoured markdown (tables, fenced code, lists, links, strikethrough):
// marked parses, DOMPurify sanitises what marked made (both vendored in /vendor, pinned).
//
// Safety: raw HTML in the text is shown as text, never parsed; the sanitiser then keeps
// only a fixed set of tags and the attributes href/title/align, links only to http(s) and
// mailto (opened in a new tab, without a referrer), no images (a markdown image could
// carry data out in its URL). Headings start at h3: the page owns h1 and h2. Tables
// scroll sideways in a wrapper, numeric cells align right.

import { Marked } from "../vendor/marked/marked.js";
import DOMPurify from "../vendor/dompurify/dompurify.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escape text for use in HTML element content and double-quoted attributes. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const TRAILING = /[.,;:!?)\]]+$/;

const markdown = new Marked({ gfm: true, breaks: true, async: false });
markdown.use({
  renderer: {
    heading({ tokens, depth }) {
      const level = Math.min(6, depth + 2);
      return `<h${level}>${this.parser.parseInline(tokens)}</h${level}>\n`;
    },
    html({ text }) {
      return escapeHtml(text);
    },
    image({ text }) {
      return escapeHtml(text);
    },
  },
});

const ALLOWED_TAGS = [
  "p", "br", "strong", "em", "del", "s", "code", "pre", "blockquote", "hr",
  "ul", "ol", "li", "h3", "h4", "h5", "h6", "a",
  "table", "thead", "tbody", "tr", "th", "td",
];
const PURIFY = {
  ALLOWED_TAGS,
  ALLOWED_ATTR: ["href", "title", "align", "start"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
};
let hooked = false;

function purify(html) {
  if (!hooked) {
    DOMPurify.addHook("afterSanitizeAttributes", (node) => {
      if (node.tagName === "A" && node.hasAttribute("href")) {
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer");
      }
    });
    hooked = true;
  }
  return DOMPurify.sanitize(html, { ...PURIFY, ADD_ATTR: ["target", "rel"] });
}

// A cell that is a figure: amounts, percentages, "$1.2M", "4.5%", "-3", "12 bps".
const NUMERIC = /^[\s(]*[-+−]?[$€£¥]?\s?\d[\d,. ]*(?:[kKmMbB]|bn|%|bps|x|×)?\)?\s*$/;

function shapeTables(html) {
  if (!html.includes("<table")) return html;
  const box = document.createElement("template");
  box.innerHTML = html;
  for (const table of box.content.querySelectorAll("table")) {
    const wrap = document.createElement("div");
    wrap.className = "table-scroll";
    table.replaceWith(wrap);
    wrap.append(table);
    for (const cell of table.querySelectorAll("td")) {
      if (NUMERIC.test(cell.textContent)) cell.classList.add("num");
    }
  }
  return box.innerHTML;
}

/** Markdown to safe HTML. */
export function renderMarkdown(text) {
  const source = String(text ?? "").replace(/\r\n?/g, "\n");
  return shapeTables(purify(markdown.parse(source).trimEnd()));
}

/** Append text to an element, turning http(s) URLs into links (DOM nodes, no HTML parsing). */
export function appendLinkified(element, text) {
  const raw = String(text ?? "");
  const re = /\bhttps?:\/\/[^\s<>"'`]+/g;
  let last = 0;
  for (const match of raw.matchAll(re)) {
    let url = match[0];
    const tail = (url.match(TRAILING) || [""])[0];
    if (tail) url = url.slice(0, -tail.length);
    element.append(document.createTextNode(raw.slice(last, match.index)));
    const a = document.createElement("a");
    a.href = url;
    a.textContent = url;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    element.append(a);
    last = match.index + url.length;
  }
  element.append(document.createTextNode(raw.slice(last)));
}
