// Runs before first paint (a classic script in <head>, not a module): no white flash on
// a dark reload, no sliding list on a phone. A file, not inline: the page's
// Content-Security-Policy allows no inline script.
try {
  const saved = localStorage.getItem("albert.theme");
  const dark = window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches;
  document.documentElement.dataset.theme = saved || (dark ? "dark" : "light");
  const phone = matchMedia("(max-width: 720px)").matches;
  const list = localStorage.getItem("albert.sidebar");
  document.documentElement.dataset.sidebar = phone || list === "closed" ? "closed" : "open";
} catch (e) {}
