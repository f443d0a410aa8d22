// A small, safe markdown renderer for answers.
//
// Safety rule: the input is HTML-escaped FIRST; only then are a fixed set of tags
// added (strong, em, code, pre, ul/ol/li, h3-h6, p, br, a). Link targets must be
// http(s) URLs and get rel="noopener noreferrer" target="_blank". Nothing from the
// input can become a tag or an attribute of its own.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escape text for use in HTML element content and double-quoted attributes. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

// Works on already-escaped text, so `&amp;` may appear inside a URL; quotes are escaped
// (&quot; &#39;) and stop a URL, as do spaces and the escaped angle brackets.
const URL_RE = /\bhttps?:\/\/(?:(?!&quot;|&#39;|&lt;|&gt;)[^\s<>"'`])+/g;
const TRAILING = /[.,;:!?)\]]+$/;

function link(url, label) {
  return `<a href="${url}" target="_blank" rel="noopener noreferrer">${label}</a>`;
}

/** Inline markup on one escaped line: code spans, links, bare URLs, bold, italics. */
function inline(escaped) {
  const slots = [];
  const keep = (html) => {
    slots.push(html);
    return `\u0000${slots.length - 1}\u0000`;
  };
  let s = escaped.replace(/\u0000/g, "");
  s = s.replace(/`([^`]+)`/g, (_, code) => keep(`<code>${code}</code>`));
  s = s.replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g, (whole, label, url) =>
    /&quot;|&#39;/.test(url) ? whole : keep(link(url, label)),
  );
  s = s.replace(URL_RE, (match) => {
    const tail = (match.match(TRAILING) || [""])[0];
    const url = tail ? match.slice(0, -tail.length) : match;
    return keep(link(url, url)) + tail;
  });
  s = s.replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>");
  // Underscores inside words (snake_case, __dunder__ names) are never emphasis.
  s = s.replace(/(^|[^\w])__([^_\n]+)__(?!\w)/g, "$1<strong>$2</strong>");
  s = s.replace(/(^|[^*\w])\*([^*\s][^*\n]*?)\*(?!\w)/g, "$1<em>$2</em>");
  s = s.replace(/(^|[^_\w])_([^_\s][^_\n]*?)_(?!\w)/g, "$1<em>$2</em>");
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => slots[Number(i)]);
}

function renderBlocks(escapedText) {
  const out = [];
  let para = [];
  let list = null; // { tag, items }
  const flushPara = () => {
    if (para.length) out.push(`<p>${para.map(inline).join("<br>")}</p>`);
    para = [];
  };
  const flushList = () => {
    if (list) {
      out.push(`<${list.tag}>${list.items.map((i) => `<li>${inline(i)}</li>`).join("")}</${list.tag}>`);
    }
    list = null;
  };
  for (const line of escapedText.split("\n")) {
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    const bullet = line.match(/^\s*[-*+]\s+(.*)$/);
    const numbered = line.match(/^\s*\d{1,3}[.)]\s+(.*)$/);
    if (!line.trim()) {
      flushPara();
      flushList();
    } else if (heading) {
      flushPara();
      flushList();
      // Headings in answers start at h3: the page owns h1/h2.
      const level = Math.min(6, heading[1].length + 2);
      out.push(`<h${level}>${inline(heading[2])}</h${level}>`);
    } else if (bullet || numbered) {
      flushPara();
      const tag = bullet ? "ul" : "ol";
      if (!list || list.tag !== tag) {
        flushList();
        list = { tag, items: [] };
      }
      list.items.push((bullet || numbered)[1]);
    } else if (list && /^\s{2,}\S/.test(line)) {
      list.items[list.items.length - 1] += " " + line.trim();
    } else {
      flushList();
      para.push(line);
    }
  }
  flushPara();
  flushList();
  return out.join("");
}

/** Markdown to safe HTML. */
export function renderMarkdown(text) {
  const source = String(text ?? "").replace(/\r\n?/g, "\n");
  const parts = source.split(/^```[^\n]*\n?/m);
  // Even parts are prose, odd parts are fenced code (an unclosed fence runs to the end,
  // which is what a streaming answer looks like mid-block).
  return parts
    .map((part, i) =>
      i % 2 === 1
        ? `<pre><code>${escapeHtml(part.replace(/\n$/, ""))}</code></pre>`
        : renderBlocks(escapeHtml(part)),
    )
    .join("");
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
