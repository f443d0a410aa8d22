// The page's icons as inline SVG: every glyph draws the same on every machine, also where
// no emoji or symbol font is installed (Debian's Chromium ships none). Strokes use
// currentColor, so an icon follows its button's colour in both themes.

const SVG = "http://www.w3.org/2000/svg";

// 24×24 outlines: each entry is a list of path data drawn with a 2 px round stroke.
const PATHS = {
  menu: ["M4 6h16", "M4 12h16", "M4 18h16"],
  plus: ["M12 5v14", "M5 12h14"],
  close: ["M6 6l12 12", "M18 6L6 18"],
  download: ["M12 4v11", "M7 10l5 5 5-5", "M5 20h14"],
  pin: ["M9 4h6", "M10 4v6l-3 4h10l-3-4V4", "M12 14v6"],
  pencil: ["M4 20l1-4L16 5l3 3L8 19z", "M14 7l3 3"],
  copy: ["M9 9h10v10H9z", "M15 9V5H5v10h4"],
  refresh: ["M20 12a8 8 0 1 1-2.34-5.66", "M20 4v5h-5"],
  "chevron-left": ["M15 6l-6 6 6 6"],
  "chevron-right": ["M9 6l6 6-6 6"],
  "thumb-up": ["M7 11v9H4v-9z", "M7 11l4-7c1.6 0 2.6 1.2 2.2 2.8L12.6 10h5.6c1.2 0 2 1 1.8 2.2l-1.2 6.1c-.2 1-1 1.7-2 1.7H7"],
  "thumb-down": ["M17 13V4h3v9z", "M17 13l-4 7c-1.6 0-2.6-1.2-2.2-2.8l.6-3.2H5.8c-1.2 0-2-1-1.8-2.2l1.2-6.1C5.4 4.7 6.2 4 7.2 4H17"],
  sun: ["M12 8a4 4 0 1 0 0 8 4 4 0 1 0 0-8z", "M12 2v2", "M12 20v2", "M2 12h2", "M20 12h2",
    "M4.9 4.9l1.4 1.4", "M17.7 17.7l1.4 1.4", "M4.9 19.1l1.4-1.4", "M17.7 6.3l1.4-1.4"],
  moon: ["M20 14.5A8 8 0 0 1 9.5 4a8 8 0 1 0 10.5 10.5z"],
  servers: ["M4.5 4h15A1.5 1.5 0 0 1 21 5.5v3a1.5 1.5 0 0 1-1.5 1.5h-15A1.5 1.5 0 0 1 3 8.5v-3A1.5 1.5 0 0 1 4.5 4z",
    "M4.5 14h15a1.5 1.5 0 0 1 1.5 1.5v3a1.5 1.5 0 0 1-1.5 1.5h-15A1.5 1.5 0 0 1 3 18.5v-3A1.5 1.5 0 0 1 4.5 14z",
    "M7 7h.01", "M7 17h.01"],
};

/** The names `icon()` draws. */
export const ICON_NAMES = Object.freeze(Object.keys(PATHS));

function draw(svg, name) {
  const paths = PATHS[name];
  if (!paths) throw new Error(`no icon named ${name}`);
  for (const d of paths) {
    const path = document.createElementNS(SVG, "path");
    path.setAttribute("d", d);
    svg.append(path);
  }
}

/** An SVG icon, hidden from screen readers: the control around it carries the label. */
export function icon(name, className = "") {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.setAttribute("class", `icon icon-${name} ${className}`.trim());
  draw(svg, name);
  return svg;
}

/** Draw the page's own icons: each empty `<svg data-icon="name">` of index.html (sized by
 * its class from the first paint) gets its outline from the one table above. */
export function drawPageIcons(root = document) {
  for (const svg of root.querySelectorAll("svg[data-icon]:empty")) draw(svg, svg.dataset.icon);
}
