// Albert's browser chat: threads over HTTP, one WebSocket for every thread.

import { Api } from "./api.js";
import { EVENT, safeTrack, startAnalytics } from "./analytics.js";
import { renderCards } from "./cards.js";
import { Conversation } from "./conversation.js";
import { HostLink, embedding } from "./embed.js";
import { drawPageIcons, icon } from "./icons.js";
import { appendLinkified, renderMarkdown } from "./markdown.js";
import { ServersPanel, serverChip } from "./servers.js";
import { ChatConnection } from "./socket.js";
import { store } from "./storage.js";

const THEME_KEY = "albert.theme";
const SIDEBAR_KEY = "albert.sidebar";
const THREAD_KEY = "albert.thread";
const PHONE = window.matchMedia("(max-width: 720px)");
const ENDED = new Set(["done", "cancelled", "error"]);
const CONN_LABELS = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  paused: "Disconnected",
};

// Set when the page is the chat embedded in a host product (/embed); null standalone.
const EMBED = embedding();

const $ = (id) => document.getElementById(id);
const el = (tag, className, text) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

const state = {
  api: null,
  conn: null,
  host: null, // HostLink of the embedded chat
  threads: [],
  currentId: null,
  convs: new Map(), // thread id -> Conversation
  outbox: new Map(), // message id -> chat frame not yet acknowledged
  openTools: new Set(),
  openGuidelines: new Set(), // ids of answers whose yield-versus-risk guidelines are unfolded
  renaming: null, // id of the thread whose title is being edited
  editing: null, // { threadId, turnId } of a sent question being edited
  search: null, // the shown search results ({ query, results }), null: the thread list
  loadSeq: new Map(), // thread id -> number of its latest load
  turnEnds: new Map(), // thread id -> done frames seen
  servers: null, // the MCP servers panel (servers.js)
};

function randomId(prefix) {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// --- theme and layout --------------------------------------------------------------------

function currentTheme() {
  return document.documentElement.dataset.theme === "dark" ? "dark" : "light";
}

function toggleTheme() {
  const theme = currentTheme() === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = theme;
  store.set(THEME_KEY, theme);
  safeTrack(EVENT.THEME_TOGGLED, { theme });
}

function setSidebar(visible, { remember = true } = {}) {
  document.documentElement.dataset.sidebar = visible ? "open" : "closed";
  const button = $("toggle-sidebar");
  button.setAttribute("aria-expanded", String(visible));
  button.setAttribute("aria-label", visible ? "Hide conversations" : "Show conversations");
  $("scrim").hidden = !(visible && PHONE.matches);
  // On a phone the open list covers the chat: the keyboard stays in the list too.
  document.querySelector("main").inert = visible && PHONE.matches;
  if (remember && !PHONE.matches) store.set(SIDEBAR_KEY, visible ? "open" : "closed");
}

function sidebarVisible() {
  return document.documentElement.dataset.sidebar === "open";
}

function toggleSidebar() {
  const visible = !sidebarVisible();
  setSidebar(visible);
  safeTrack(EVENT.CONVERSATION_LIST_TOGGLED, { visible });
  // On a phone the list covers the chat: focus goes into it, and back to its button after.
  if (PHONE.matches) (visible ? $("new-thread") : $("toggle-sidebar")).focus();
}

/** A choice in the phone-width list (a thread, a new chat) closes it; focus, which was in
 * the list now hidden, goes back to its button rather than to the page. */
function closeListOnPhone() {
  if (!PHONE.matches) return;
  setSidebar(false, { remember: false });
  $("toggle-sidebar").focus();
}

/** The window crossed the phone width: the list follows, as if the page had loaded so. */
function onPhoneChange() {
  if (PHONE.matches) setSidebar(false, { remember: false });
  else setSidebar(store.get(SIDEBAR_KEY) !== "closed", { remember: false });
}

/** Say something to screen readers once (the polite live region under the conversation). */
function announce(text) {
  const box = $("announcer");
  box.textContent = "";
  // Set after a tick: the same text twice in a row is announced twice.
  if (text) setTimeout(() => (box.textContent = text), 30);
}

const DONE_ANNOUNCEMENTS = {
  done: "Albert's answer is complete.",
  cancelled: "The answer was stopped.",
  error: "The answer failed.",
};

function showBanner(text) {
  const banner = $("banner");
  banner.textContent = text;
  banner.hidden = !text;
}

/** One chip per MCP server (the vault data server above all): name and connection state. */
function renderMcpStatus(servers) {
  const box = $("mcp");
  box.replaceChildren();
  for (const server of servers) {
    const chip = document.createElement("span");
    chip.className = "mcp-server";
    chip.dataset.server = server.name;
    chip.dataset.state = server.state;
    // A button opening the servers panel on this server.
    chip.append(serverChip(server, (opener) => state.servers?.open({ focus: server.name, opener })));
    if (server.state === "needs_authorization") {
      chip.append(iconButton("mcp-authorize", "Authorize", `Authorize ${server.name}`, () => authorizeServer(server.name)));
    }
    box.append(chip);
  }
  box.hidden = servers.length === 0;
  state.servers?.update(servers);
}

/** Open the server's authorization page in a new tab; the status frame says when it is done. */
async function authorizeServer(name) {
  // Opened now, inside the click (a tab opened after an await is a blocked popup), and cut
  // off from this page before it goes anywhere: the authorization server gets no opener.
  const tab = window.open("", "_blank");
  if (tab) tab.opener = null;
  try {
    const { authorization_url: url } = await state.api.authorizeMcp(name);
    if (tab) tab.location.href = url;
    else window.location.assign(url);
  } catch (e) {
    if (tab) tab.close();
    showBanner(`Could not authorize ${name}: ${e.message}`);
  }
}

function setConnState(connState) {
  const badge = $("conn");
  badge.dataset.state = connState;
  $("conn-label").textContent = CONN_LABELS[connState] || connState;
  badge.title = CONN_LABELS[connState] || connState;
}

// --- threads -------------------------------------------------------------------------------

let threadsSeq = 0;

async function loadThreads() {
  // Only the newest request may set the list: an older answer can arrive later.
  const seq = ++threadsSeq;
  const page = await state.api.listThreads();
  if (seq !== threadsSeq) return;
  state.threads = page.threads;
  renderThreads();
}

function renderThreads() {
  // While a title is edited the list stays as it is (moving the input would blur it and
  // end the edit); finishing the edit renders the list again.
  if (state.renaming) return;
  if (state.search) return renderSearchResults();
  const list = $("thread-list");
  list.replaceChildren();
  // Pinned threads first; each group newest first, as the server lists them.
  const ordered = [...state.threads.filter((t) => t.pinned), ...state.threads.filter((t) => !t.pinned)];
  for (const thread of ordered) {
    const item = el("li", "thread");
    item.dataset.threadId = thread.id;
    item.dataset.pinned = String(Boolean(thread.pinned));
    if (thread.id === state.currentId) item.setAttribute("aria-current", "true");
    const open = el("button", "thread-open", thread.title);
    open.type = "button";
    open.title = thread.title;
    open.addEventListener("click", () => {
      if (thread.id !== state.currentId) safeTrack(EVENT.THREAD_SWITCHED, { new_thread: false });
      selectThread(thread.id);
      closeListOnPhone();
    });
    const rename = el("button", "icon-btn thread-rename");
    rename.append(icon("pencil"));
    rename.type = "button";
    rename.setAttribute("aria-label", `Rename ${thread.title}`);
    rename.addEventListener("click", () => startRename(item, thread));
    const remove = el("button", "icon-btn thread-delete");
    remove.append(icon("close"));
    remove.type = "button";
    remove.setAttribute("aria-label", `Delete ${thread.title}`);
    remove.addEventListener("click", () => deleteThread(thread));
    const pin = el("button", "icon-btn thread-pin");
    pin.append(icon("pin"));
    pin.type = "button";
    pin.setAttribute("aria-label", `${thread.pinned ? "Unpin" : "Pin"} ${thread.title}`);
    pin.setAttribute("aria-pressed", String(Boolean(thread.pinned)));
    pin.addEventListener("click", () => pinThread(thread, !thread.pinned));
    item.append(open, pin, rename, remove);
    list.append(item);
  }
  $("thread-empty").hidden = state.threads.length > 0;
  $("thread-empty").textContent = "No conversations yet.";
  const current = state.threads.find((t) => t.id === state.currentId);
  $("thread-title").textContent = current ? current.title : "New chat";
  $("export-menu").hidden = !current;
}

async function pinThread(thread, pinned) {
  try {
    const updated = await state.api.pinThread(thread.id, pinned);
    threadsSeq += 1;
    Object.assign(thread, updated);
    safeTrack(EVENT.CHAT_ACTION_USED, { action: pinned ? "pin" : "unpin" });
  } catch (e) {
    showBanner(`Could not ${pinned ? "pin" : "unpin"}: ${e.message}`);
  }
  renderThreads();
  $("thread-list").querySelector(`li[data-thread-id="${CSS.escape(thread.id)}"] .thread-pin`)?.focus();
}

// --- search -------------------------------------------------------------------------------

let searchSeq = 0;
let searchTimer = null;

function onSearchInput() {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(runSearch, 200);
}

async function runSearch() {
  const q = $("search").value.trim();
  const seq = ++searchSeq;
  if (!q) {
    state.search = null;
    renderThreads();
    return;
  }
  try {
    const found = await state.api.searchThreads(q);
    if (seq !== searchSeq) return;
    state.search = found;
    safeTrack(EVENT.CHAT_ACTION_USED, { action: "search" });
  } catch (e) {
    showBanner(`Search failed: ${e.message}`);
    return;
  }
  renderThreads();
}

function renderSearchResults() {
  const list = $("thread-list");
  list.replaceChildren();
  for (const hit of state.search.results) {
    const item = el("li", "thread search-hit");
    item.dataset.threadId = hit.thread.id;
    if (hit.thread.id === state.currentId) item.setAttribute("aria-current", "true");
    const open = el("button", "thread-open");
    open.type = "button";
    open.append(el("span", "hit-title", hit.thread.title));
    if (hit.snippet) open.append(el("span", "hit-snippet", hit.snippet));
    open.addEventListener("click", () => {
      selectThread(hit.thread.id);
      closeListOnPhone();
    });
    item.append(open);
    list.append(item);
  }
  const empty = $("thread-empty");
  empty.hidden = state.search.results.length > 0;
  empty.textContent = `Nothing found for “${state.search.query}”.`;
}

// --- export -------------------------------------------------------------------------------

async function exportCurrent(format) {
  const id = state.currentId;
  if (!id) return;
  $("export-menu").open = false;
  try {
    const blob = await state.api.exportThread(id, format);
    const link = el("a");
    link.href = URL.createObjectURL(blob);
    link.download = `albert-${id}.${format === "json" ? "json" : "md"}`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
    safeTrack(EVENT.CHAT_ACTION_USED, { action: format === "json" ? "export_json" : "export_markdown" });
  } catch (e) {
    showBanner(`Could not export: ${e.message}`);
  }
}

function startRename(item, thread) {
  const input = el("input", "thread-rename-input");
  input.value = thread.title;
  input.maxLength = 200;
  input.setAttribute("aria-label", "New title");
  item.replaceChildren(input);
  state.renaming = thread.id;
  input.focus();
  input.select();
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    state.renaming = null;
    const title = input.value.trim();
    if (save && title && title !== thread.title) {
      try {
        const updated = await state.api.renameThread(thread.id, title);
        threadsSeq += 1; // a list fetched before the rename must not bring the old title back
        const current = state.threads.find((t) => t.id === thread.id);
        if (current) Object.assign(current, updated);
      } catch (e) {
        showBanner(`Could not rename: ${e.message}`);
      }
    }
    renderThreads();
  };
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") finish(true);
    if (event.key === "Escape") finish(false);
  });
  input.addEventListener("blur", () => finish(true));
}

async function deleteThread(thread) {
  if (!window.confirm(`Delete “${thread.title}”? This cannot be undone.`)) return;
  try {
    await state.api.deleteThread(thread.id);
  } catch (e) {
    if (e.status !== 404) {
      showBanner(`Could not delete: ${e.message}`);
      return;
    }
  }
  threadsSeq += 1;
  state.threads = state.threads.filter((t) => t.id !== thread.id);
  state.convs.delete(thread.id);
  if (state.currentId === thread.id) {
    const next = state.threads[0];
    if (next) selectThread(next.id);
    else clearCurrent();
  }
  renderThreads();
}

async function newThread() {
  const thread = await state.api.createThread();
  threadsSeq += 1; // lists fetched before this do not have it
  state.threads.unshift(thread);
  state.convs.set(thread.id, new Conversation(thread.id));
  safeTrack(EVENT.THREAD_SWITCHED, { new_thread: true });
  await selectThread(thread.id, { fetch: false });
  return thread;
}

function clearCurrent() {
  state.currentId = null;
  store.remove(THREAD_KEY);
  renderConversation();
  renderThreads();
}

/** Show a thread: at once from memory, then fresh from the server. */
async function selectThread(id, { fetch = true } = {}) {
  state.currentId = id;
  store.set(THREAD_KEY, id);
  renderThreads();
  renderConversation();
  // Focus now, not after the load: by then the user may be typing elsewhere (a rename).
  // Phones skip it, since focusing would pop up the keyboard over the conversation.
  if (!PHONE.matches) $("input").focus();
  if (fetch) {
    await reloadThread(id);
    if (state.currentId === id) followUnfinishedTurn(id);
  }
}

/** Replace a thread's conversation with the server's copy, keeping unsent questions. */
async function reloadThread(id) {
  const seq = (state.loadSeq.get(id) || 0) + 1;
  state.loadSeq.set(id, seq);
  const endsBefore = state.turnEnds.get(id) || 0;
  let detail;
  try {
    detail = await state.api.getThread(id);
  } catch (e) {
    if (e.status === 404) {
      state.threads = state.threads.filter((t) => t.id !== id);
      state.convs.delete(id);
      if (state.currentId === id) clearCurrent();
      return;
    }
    showBanner(`Could not load this conversation: ${e.message}`);
    return;
  }
  // A newer load of this thread was started meanwhile: its answer is the one to show.
  if (state.loadSeq.get(id) !== seq) return;
  const fresh = Conversation.fromMessages(id, detail.messages);
  const old = state.convs.get(id);
  if (old) {
    for (const turn of old.turns.values()) {
      const stored = fresh.turns.get(turn.id);
      if (!stored && state.outbox.has(turn.id)) fresh.turns.set(turn.id, turn);
      // Seen ending live while the snapshot was read before that: the live copy is newer.
      if (stored && turn.seenStart && ENDED.has(turn.state) && !ENDED.has(stored.state)) {
        fresh.turns.set(turn.id, turn);
      }
      // A live turn keeps streaming into the fresh copy; what streamed before this load
      // is not in it, so its done frame reloads the thread once more (seenStart = false).
      if (stored && turn.state === "running" && stored.state !== "done") {
        stored.state = "running";
        stored.seenStart = false;
        stored.run = turn.run;
      }
    }
  }
  state.convs.set(id, fresh);
  const known = state.threads.find((t) => t.id === id);
  if (known) Object.assign(known, detail.thread);
  else state.threads.unshift(detail.thread);
  if (id === state.currentId) {
    renderThreads();
    renderConversation();
  }
  // A turn ended while this snapshot was on its way: read the thread once more.
  if ((state.turnEnds.get(id) || 0) !== endsBefore) reloadThread(id);
}

// --- conversation rendering ----------------------------------------------------------------

function formatDuration(ms) {
  if (ms === null || ms === undefined) return "";
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

function formatProgress(progress) {
  const count = progress.total ? `${progress.done}/${progress.total}` : `${progress.done}`;
  return progress.message ? `${count} ${progress.message}` : count;
}

const TOOL_STATUS = { running: "Running", ok: "Done", error: "Failed", declined: "Declined", waiting: "Waiting for you" };

/** What became of a tool call: running, ok, error, or declined / waiting (asked first). */
function toolOutcome(part) {
  const decision = part.confirm?.decision;
  if (decision === "declined" || decision === "timeout") return "declined";
  if (part.status === "running" && part.confirm && !decision) return "waiting";
  return part.status;
}

function renderTool(part) {
  const details = el("details", "tool");
  const outcome = toolOutcome(part);
  details.dataset.status = part.status;
  details.dataset.outcome = outcome;
  details.dataset.callId = part.callId;
  details.open = state.openTools.has(part.callId);
  details.addEventListener("toggle", () => {
    if (details.open) state.openTools.add(part.callId);
    else state.openTools.delete(part.callId);
  });
  const summary = el("summary");
  const label = TOOL_STATUS[outcome] || outcome;
  const status = el("span", "tool-status", label);
  const meta = el("span", "tool-meta");
  if (part.status === "running") {
    // Elapsed time ticks while it runs (tickRunningTools); progress as the server reports it.
    if (part.startedAt) {
      details.dataset.started = String(part.startedAt);
      meta.append(el("span", "tool-elapsed", formatElapsed(Date.now() - part.startedAt)));
    }
    if (part.progress) {
      const { done, total } = part.progress;
      if (total) {
        const bar = el("progress", "tool-progress");
        bar.max = total;
        bar.value = Math.min(done, total);
        bar.setAttribute("aria-label", `${part.name} progress`);
        meta.prepend(bar);
      }
      meta.append(el("span", "tool-progress-text", formatProgress(part.progress)));
    }
  } else {
    const took = formatDuration(part.durationMs);
    if (took) meta.append(el("span", "tool-took", took));
    if (part.truncated) meta.append(el("span", "tool-cut", "cut to fit"));
  }
  summary.append(
    el("span", "tool-name", part.name),
    el("span", "tool-server", part.server ? `on ${part.server}` : "built in"),
    status,
    meta,
  );
  const body = el("div", "tool-body");
  const args = el("pre", "tool-args", JSON.stringify(part.args || {}, null, 2));
  args.tabIndex = 0; // it may scroll: reachable by keyboard
  body.append(el("div", "label", "Arguments"), args);
  if (part.content !== undefined) {
    const result = el("pre", "tool-result");
    result.tabIndex = 0;
    appendLinkified(result, part.content);
    const heading = part.status === "error" ? "Error" : part.truncated ? "Result (cut to fit; the model saw this part)" : "Result";
    body.append(el("div", "label", heading), result);
  }
  details.append(summary, body);
  return details;
}

function formatElapsed(ms) {
  return `${Math.max(0, Math.floor(ms / 1000))} s`;
}

/** Once a second: the elapsed time of every running tool on screen. */
function tickRunningTools() {
  for (const details of document.querySelectorAll('details.tool[data-status="running"][data-started]')) {
    const span = details.querySelector(".tool-elapsed");
    if (span) span.textContent = formatElapsed(Date.now() - Number(details.dataset.started));
  }
}

// Characters that would not show as themselves (controls, bidi and zero-width marks,
// private use, line separators, spaces other than U+0020, and a space after two in a row
// within a value, which could push the rest out of sight): written as JSON escapes, as
// albert.chat.confirmations writes them (indentation follows a newline: never matched).
const HIDDEN_CHARS = /[\p{Cc}\p{Cf}\p{Co}\p{Cs}\p{Zl}\p{Zp}]|(?! )\p{Zs}|(?<=[^\n ] {2,}) /gu;

function escapeChar(ch) {
  const hex = (n) => `\\u${n.toString(16).padStart(4, "0")}`;
  const code = ch.codePointAt(0);
  if (code < 0x10000) return hex(code);
  const v = code - 0x10000;
  return hex(0xd800 + (v >> 10)) + hex(0xdc00 + (v & 0x3ff));
}

/** Arguments as JSON text that shows every character (a bare newline is the indentation's). */
function visibleJson(value) {
  return JSON.stringify(value ?? {}, null, 2).replace(HIDDEN_CHARS, (c) => (c === "\n" ? c : escapeChar(c)));
}

function confirmStatus(confirm, open) {
  switch (confirm.decision) {
    case "approved":
      return "You chose to run it.";
    case "declined":
      return "You chose not to run it. It was not run.";
    case "timeout":
      return confirm.timeoutSeconds
        ? `No answer within ${confirm.timeoutSeconds} s, so it was not run.`
        : "No answer in time, so it was not run.";
    default:
      if (!open) return "Not run: the answer ended before you chose.";
      if (confirm.sent !== null && confirm.sent !== undefined) return "Sending your answer…";
      return `Waiting for your answer (up to ${confirm.timeoutSeconds} s).`;
  }
}

/** The question before a destructive remote tool runs: what would run, where, with what. */
function renderConfirm(turn, part) {
  const confirm = part.confirm;
  const open = !confirm.decision && turn.state === "running";
  const card = el("section", "confirm");
  card.dataset.callId = part.callId;
  card.dataset.decision = confirm.decision || (open ? "pending" : "ended");
  card.setAttribute("role", "group");
  card.setAttribute("aria-label", `Run ${part.name} on ${confirm.server}?`);
  card.tabIndex = -1;
  card.dataset.confirmKey = `${part.callId}:card`;
  const title = el("p", "confirm-title");
  title.append("Run ", el("code", "confirm-tool", part.name), " on ", el("strong", "confirm-server", confirm.server), "?");
  const note = el(
    "p",
    "confirm-note",
    `The ${confirm.server} server marks this tool as destructive: it may change or delete data. It runs only if you say so.`,
  );
  const args = el("pre", "confirm-args", confirm.arguments ?? visibleJson(part.args));
  args.tabIndex = 0;
  card.append(title, note, el("div", "label", confirm.cut ? "Arguments (cut to fit)" : "Arguments"), args);
  const actions = el("div", "confirm-actions");
  const answered = confirm.sent !== null && confirm.sent !== undefined;
  for (const [label, approved, kind] of [["Run", true, "btn-danger"], ["Don't run", false, ""]]) {
    const button = el("button", `btn ${kind} confirm-${approved ? "run" : "skip"}`.trim(), label);
    button.type = "button";
    button.dataset.confirmKey = `${part.callId}:${approved}`;
    button.disabled = !open || answered;
    button.addEventListener("click", () => answerConfirm(turn, part, approved));
    actions.append(button);
  }
  const status = el("p", "confirm-status", confirmStatus(confirm, open));
  status.setAttribute("role", "status");
  card.append(actions, status);
  return card;
}

function answerConfirm(turn, part, approved) {
  const frame = { type: "confirm", thread_id: state.currentId, turn_id: turn.id, call_id: part.callId, approved };
  if (!state.conn.send(frame)) {
    showBanner("Not connected, so your answer was not sent. Try again once the connection is back.");
    return;
  }
  part.confirm.sent = approved;
  renderTurn(turn);
}

/** The answer's text as the model wrote it (markdown), every text part in order. */
function answerMarkdown(parts) {
  return parts.filter((p) => p.type === "text" && p.text).map((p) => p.text).join("\n\n");
}

async function copyText(text, what) {
  try {
    await navigator.clipboard.writeText(text);
    announce(`${what} copied.`);
    return true;
  } catch (e) {
    showBanner(`Could not copy: ${e.message}`);
    return false;
  }
}

/** A small button: `text` beside an optional SVG icon (`iconName`), `label` for its name. */
function iconButton(className, text, label, onClick, iconName = null) {
  const button = el("button", `btn btn-small ${className}`);
  if (iconName) {
    button.classList.add("with-icon");
    button.append(icon(iconName));
  }
  if (text) button.append(text);
  button.type = "button";
  button.setAttribute("aria-label", label);
  button.title = label;
  button.addEventListener("click", onClick);
  return button;
}

/** A rendered answer: every code block gets a copy button, every scrolling box focus. */
function renderAnswer(text) {
  const answer = el("div", "answer");
  // renderMarkdown sanitises marked's output (DOMPurify, a fixed set of tags).
  answer.innerHTML = renderMarkdown(text);
  for (const pre of answer.querySelectorAll("pre")) {
    const block = el("div", "code-block");
    pre.replaceWith(block);
    pre.tabIndex = 0;
    const copy = iconButton("code-copy", "Copy", "Copy code", async () => {
      if (await copyText(pre.textContent, "Code")) {
        copy.textContent = "Copied";
        setTimeout(() => (copy.textContent = "Copy"), 1500);
      }
      safeTrack(EVENT.CHAT_ACTION_USED, { action: "copy_code" });
    });
    block.append(pre, copy);
  }
  for (const box of answer.querySelectorAll(".table-scroll")) {
    box.tabIndex = 0;
    box.setAttribute("role", "region");
    box.setAttribute("aria-label", "Table");
  }
  return answer;
}

function renderActions(turn, shown) {
  // Not a div: `.answer:last-of-type` stays the last answer of a turn.
  const bar = el("footer", "msg-actions");
  bar.setAttribute("role", "toolbar");
  bar.setAttribute("aria-label", "Answer actions");
  const text = answerMarkdown(shown.parts);
  if (text) {
    bar.append(
      iconButton("copy-answer", "Copy", "Copy answer as Markdown", async (event) => {
        const button = event.currentTarget;
        if (await copyText(text, "Answer")) {
          button.textContent = "Copied";
          setTimeout(() => (button.textContent = "Copy"), 1500);
        }
        safeTrack(EVENT.CHAT_ACTION_USED, { action: "copy_answer" });
      }),
    );
  }
  if (turn.user && shown === turn) {
    bar.append(iconButton("regenerate needs-idle", "Regenerate", "Regenerate this answer", () => regenerate(turn), "refresh"));
  }
  const versions = (turn.versions || []).filter(Boolean);
  if (versions.length) {
    const count = versions.length + 1;
    const index = turn.showing === null || turn.showing === undefined ? count - 1 : turn.showing;
    const pager = el("span", "versions");
    const go = (to) => {
      turn.showing = to >= count - 1 ? null : to;
      safeTrack(EVENT.CHAT_ACTION_USED, { action: "show_version" });
      renderTurn(turn);
      $("turns").querySelector(`li[data-turn-id="${CSS.escape(turn.id)}"] .versions button:not(:disabled)`)?.focus();
    };
    const prev = iconButton("version-prev", "", "Previous answer", () => go(index - 1), "chevron-left");
    prev.disabled = index === 0;
    const next = iconButton("version-next", "", "Next answer", () => go(index + 1), "chevron-right");
    next.disabled = index === count - 1;
    const label = el("span", "version-label", `${index + 1} / ${count}`);
    label.setAttribute("aria-label", `Answer ${index + 1} of ${count}`);
    pager.append(prev, label, next);
    bar.append(pager);
  }
  if (shown === turn && turn.user) bar.append(renderFeedback(turn));
  return bar;
}

/** Thumbs up / down on an answer; choosing one offers an optional comment. */
function renderFeedback(turn) {
  const box = el("span", "feedback");
  const current = turn.feedback?.rating || null;
  for (const [rating, label] of [["up", "Good answer"], ["down", "Bad answer"]]) {
    const onClick = () => {
      const next = current === rating ? null : rating;
      sendFeedback(turn, next, null, { ask: next !== null });
    };
    const button = iconButton(`feedback-${rating}`, "", label, onClick, `thumb-${rating}`);
    button.setAttribute("aria-pressed", String(current === rating));
    box.append(button);
  }
  if (turn.feedbackOpen && current) {
    const form = el("form", "feedback-form");
    const input = el("input", "feedback-comment");
    input.maxLength = 2000;
    input.placeholder = current === "up" ? "What was good? (optional)" : "What was wrong? (optional)";
    input.setAttribute("aria-label", "Feedback comment");
    input.value = turn.feedback?.comment || "";
    const send = el("button", "btn btn-small feedback-send", "Send");
    send.type = "submit";
    form.append(input, send);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      sendFeedback(turn, current, input.value.trim(), { ask: false });
    });
    box.append(form);
  }
  if (turn.feedbackSaved) box.append(el("span", "feedback-thanks", "Thanks for the feedback."));
  return box;
}

async function sendFeedback(turn, rating, comment, { ask }) {
  const threadId = state.currentId;
  try {
    const stored = await state.api.sendFeedback(threadId, turn.id, rating, comment);
    turn.feedback = stored.feedback;
    turn.feedbackOpen = ask;
    turn.feedbackSaved = !ask && rating !== null;
    if (rating) safeTrack(EVENT.FEEDBACK_GIVEN, { rating, with_comment: Boolean(comment) });
  } catch (e) {
    showBanner(`Could not save feedback: ${e.message}`);
    return;
  }
  if (state.currentId === threadId) {
    renderTurn(turn);
    if (ask) $("turns").querySelector(`li[data-turn-id="${CSS.escape(turn.id)}"] .feedback-comment`)?.focus();
  }
}

function renderTurnInto(item, turn) {
  item.replaceChildren();
  item.dataset.state = turn.state;
  // Streaming text is not read out piece by piece: the live region says when it is done.
  item.setAttribute("aria-busy", String(turn.state === "running" || turn.state === "pending"));
  if (turn.user) {
    const wrap = el("div", "msg-user-wrap");
    const bubble = el("div", "msg-user", turn.user.text);
    if (turn.user.pending) bubble.classList.add("pending");
    wrap.append(bubble);
    if (!turn.user.pending) {
      wrap.append(iconButton("edit-message needs-idle", "Edit", "Edit this message and resend", () => startEdit(turn), "pencil"));
    }
    item.append(wrap);
  }
  // An earlier answer the user flipped back to is shown as it was, read-only.
  const shown = turn.showing !== null && turn.showing !== undefined && turn.versions?.[turn.showing] ? turn.versions[turn.showing] : turn;
  item.dataset.version = shown === turn ? "current" : String(turn.showing + 1);
  const texts = shown.parts.filter((p) => p.type === "text");
  const lastText = texts[texts.length - 1];
  for (const part of shown.parts) {
    if (part.type === "tool") {
      item.append(renderTool(part));
      if (part.confirm && shown === turn) item.append(renderConfirm(turn, part));
    } else if (part.text) {
      const answer = renderAnswer(part.text);
      if (shown.state === "running" && part === lastText) answer.classList.add("typing");
      item.append(answer);
    }
  }
  if (shown.state === "running" && !lastText) item.append(el("div", "answer typing"));
  // The results as cards, under the answer's text (drawn from the data, not the text).
  const cards = renderCards(shown.parts, {
    guidelinesOpen: state.openGuidelines.has(shown.id),
    onGuidelinesToggle: (open) => (open ? state.openGuidelines.add(shown.id) : state.openGuidelines.delete(shown.id)),
  });
  if (cards) item.append(cards);
  if (shown.state === "cancelled") item.append(el("div", "turn-note", "Stopped."));
  const retryable = shown === turn && turn.user && (turn.error ? turn.error.retryable : ["unanswered", "partial"].includes(turn.state));
  if (shown.error || shown.state === "unanswered" || shown.state === "partial") {
    const box = el("div", "turn-error");
    box.setAttribute("role", "alert");
    if (shown.error) {
      box.append(el("span", "turn-error-message", shown.error.message));
      // The technical detail (and the code) folded under the plain words.
      const more = el("details", "turn-error-detail");
      more.append(el("summary", "", "Details"), el("code", "", [shown.error.code, shown.error.detail].filter(Boolean).join(": ")));
      box.append(more);
    } else {
      box.append(el("span", "", "This answer was interrupted."));
    }
    if (retryable) {
      const retry = el("button", "btn btn-small retry", "Retry");
      retry.type = "button";
      retry.addEventListener("click", () => retryTurn(turn));
      box.append(retry);
    }
    item.append(box);
  }
  if (!["running", "pending", "loading"].includes(turn.state) && (shown.parts.length || turn.versions?.length)) {
    item.append(renderActions(turn, shown));
  }
}

function nearBottom() {
  const box = $("conversation");
  return box.scrollHeight - box.scrollTop - box.clientHeight < 120;
}

function scrollToBottom() {
  const box = $("conversation");
  box.scrollTop = box.scrollHeight;
}

function renderConversation() {
  const list = $("turns");
  list.replaceChildren();
  const conv = state.currentId ? state.convs.get(state.currentId) : null;
  const turns = conv ? [...conv.turns.values()] : [];
  for (const turn of turns) {
    const item = el("li", "turn");
    item.dataset.turnId = turn.id;
    renderTurnInto(item, turn);
    list.append(item);
  }
  $("empty").hidden = turns.length > 0;
  updateComposer();
  scrollToBottom();
}

function renderTurn(turn) {
  const stick = nearBottom();
  const list = $("turns");
  let item = [...list.children].find((li) => li.dataset.turnId === turn.id);
  if (!item) {
    item = el("li", "turn");
    item.dataset.turnId = turn.id;
    list.append(item);
  }
  // A keyboard user on a confirm button keeps their place when the turn is drawn again.
  const focusKey = document.activeElement?.dataset?.confirmKey;
  renderTurnInto(item, turn);
  if (focusKey) restoreConfirmFocus(item, focusKey);
  $("empty").hidden = true;
  updateComposer();
  if (stick) scrollToBottom();
}

function restoreConfirmFocus(item, key) {
  const target = [...item.querySelectorAll("[data-confirm-key]")].find((e) => e.dataset.confirmKey === key);
  if (!target) return;
  if (!target.disabled) target.focus();
  else target.closest(".confirm")?.focus(); // answered: the card, with its status, holds focus
}

function updateComposer() {
  const conv = state.currentId ? state.convs.get(state.currentId) : null;
  const running = Boolean(conv && conv.runningTurn);
  $("stop").hidden = !running;
  $("send").disabled = Boolean(conv && conv.busy);
  // Edit and regenerate wait until the thread is idle (hidden by CSS meanwhile).
  $("turns").dataset.busy = String(Boolean(conv && conv.busy));
}

// --- chat ------------------------------------------------------------------------------------

function dispatch(frame) {
  state.outbox.set(frame.message_id, frame);
  state.conn.send(frame);
}

async function sendMessage(text, { replaces = null } = {}) {
  showBanner("");
  if (!state.currentId) {
    try {
      await newThread();
    } catch (e) {
      showBanner(`Could not start a conversation: ${e.message}`);
      return;
    }
  }
  const threadId = state.currentId;
  const conv = state.convs.get(threadId) || new Conversation(threadId);
  state.convs.set(threadId, conv);
  const messageId = randomId("m_");
  if (replaces) {
    // Edit and resend replaces: the edited question and what followed it are gone.
    conv.removeFrom(replaces);
    renderConversation();
  }
  const turn = conv.addPending(messageId, text);
  turn.replaces = replaces;
  renderTurn(turn);
  scrollToBottom();
  safeTrack(EVENT.MESSAGE_SUBMITTED, { chars: text.length, retry: false });
  dispatch(chatFrame(threadId, turn));
}

function chatFrame(threadId, turn) {
  const frame = { type: "chat", thread_id: threadId, message_id: turn.id, text: turn.user.text };
  if (turn.replaces) frame.replaces = turn.replaces;
  return frame;
}

/** Send the same message id again: the server retries the failed turn, never stores it twice. */
function retryTurn(turn) {
  const threadId = state.currentId;
  const conv = state.convs.get(threadId);
  if (!conv || !turn.user) return;
  conv.addPending(turn.id, turn.user.text);
  renderTurn(turn);
  safeTrack(EVENT.MESSAGE_SUBMITTED, { chars: turn.user.text.length, retry: true });
  dispatch(chatFrame(threadId, turn));
}

/** Answer the last question again; the answer on screen is kept as a previous version. */
function regenerate(turn) {
  const threadId = state.currentId;
  const conv = state.convs.get(threadId);
  if (!conv || conv.busy || conv.lastTurn !== turn) return;
  if (!state.conn.send({ type: "regenerate", thread_id: threadId, turn_id: turn.id })) {
    showBanner("Not connected, so nothing was sent. Try again once the connection is back.");
    return;
  }
  conv.keepAsVersion(turn);
  safeTrack(EVENT.CHAT_ACTION_USED, { action: "regenerate" });
  renderTurn(turn);
}

/** Put a sent question back into the composer; sending it replaces it and what followed. */
function startEdit(turn) {
  const conv = state.convs.get(state.currentId);
  if (!conv || conv.busy || !turn.user) return;
  state.editing = { threadId: state.currentId, turnId: turn.id };
  const input = $("input");
  input.value = turn.user.text;
  input.dispatchEvent(new Event("input"));
  $("editing").hidden = false;
  $("send").textContent = "Resend";
  input.focus();
  input.setSelectionRange(input.value.length, input.value.length);
}

function endEdit() {
  state.editing = null;
  $("editing").hidden = true;
  $("send").textContent = "Send";
}

function stopTurn() {
  if (state.currentId) state.conn.send({ type: "cancel", thread_id: state.currentId });
}

let threadRefresh = null;
function refreshThreadsSoon() {
  clearTimeout(threadRefresh);
  threadRefresh = setTimeout(() => loadThreads().catch(() => {}), 150);
}

function onFrame(frame) {
  if (frame.type === "pong") return;
  if (frame.type === "mcp_status") {
    renderMcpStatus(frame.servers || []);
    return;
  }
  if (frame.type === "error" && !frame.thread_id) {
    showBanner(frame.message || frame.code);
    return;
  }
  if (frame.type === "ack") state.outbox.delete(frame.message_id);
  const conv = frame.thread_id ? state.convs.get(frame.thread_id) : null;
  if (frame.type === "resync" && !frame.running && conv) {
    // The turn we were following is not running any more (it ended while we were away):
    // stop waiting for it, and show what the server stored.
    const waiting = conv.runningTurn;
    if (waiting) {
      waiting.state = "partial";
      reloadThread(frame.thread_id);
    }
    return;
  }
  if (frame.type === "error" && frame.code === "nothing_running") {
    // A stop that reached the server after the turn had ended: its done frame says how.
    return;
  }
  if (frame.type === "error" && frame.code === "nothing_to_confirm") {
    // Answered elsewhere, timed out, or the turn ended first: the stored copy says how.
    showBanner("That question was already settled; nothing was sent.");
    if (conv) reloadThread(frame.thread_id);
    return;
  }
  const pending = [...state.outbox.values()].some((f) => f.thread_id === frame.thread_id);
  if (frame.type === "error" && frame.code === "unknown_thread" && conv && !pending) {
    // Resumed a thread that is gone (deleted in another tab): stop waiting for its turn.
    const waiting = conv.runningTurn;
    if (waiting) {
      waiting.state = "partial";
      if (frame.thread_id === state.currentId) renderTurn(waiting);
    }
    showBanner("This conversation no longer exists.");
    loadThreads().catch(() => {});
    return;
  }
  if (frame.type === "error" && !frame.turn_id) {
    // A refused message (busy, too large, unknown thread): it belongs to the question waiting for its ack.
    const waiting = [...state.outbox.values()].filter((f) => f.thread_id === frame.thread_id).pop();
    if (waiting && conv) {
      state.outbox.delete(waiting.message_id);
      conv.applyFrame({ ...frame, turn_id: waiting.message_id });
      if (frame.thread_id === state.currentId) renderTurn(conv.turn(waiting.message_id));
    } else {
      showBanner(frame.message || frame.code);
      // A refused regenerate: show what the server has.
      if (conv) reloadThread(frame.thread_id);
    }
    return;
  }
  if (!conv) return;
  const turn = conv.applyFrame(frame);
  const current = frame.thread_id === state.currentId;
  if (turn && current) renderTurn(turn);
  if (frame.type === "ack" && frame.duplicate) reloadThread(frame.thread_id);
  // Cut off by a restart: the stored copy holds what was written of it.
  if (frame.type === "turn_interrupted") reloadThread(frame.thread_id);
  if (current && frame.type === "start") announce("Albert is answering…");
  if (current && frame.type === "done" && turn) announce(DONE_ANNOUNCEMENTS[turn.state] || "");
  if (frame.type === "done") {
    state.turnEnds.set(frame.thread_id, (state.turnEnds.get(frame.thread_id) || 0) + 1);
    refreshThreadsSoon();
    // Joined mid-turn (another tab, or after a reconnect): the server's copy is complete.
    if (turn && (!turn.seenStart || !turn.user) && current) reloadThread(frame.thread_id);
  }
  if (current) updateComposer();
}

function onOpen(again) {
  for (const frame of state.outbox.values()) state.conn.send(frame);
  // The first thread may have loaded before this socket opened.
  if (!again && state.currentId) followUnfinishedTurn(state.currentId);
  // The MCP servers' state needs no request: a new socket's first frame carries it.
  if (again) {
    // Whatever happened while we were away is on the server: reload, de-duplicated by id.
    loadThreads().catch(() => {});
    const id = state.currentId;
    if (id) reloadThread(id).then(() => resumeRunningTurn(id));
  }
}

/** After a reconnect, ask for the running turn's frames again: they rebuild it in order,
 * and the live rest follows, so nothing streamed while we were away is lost or repeated. */
function resumeRunningTurn(id) {
  const turn = state.convs.get(id)?.runningTurn;
  if (!turn) return;
  state.conn.send({ type: "resume", thread_id: id, turn_id: turn.id, after_seq: 0 });
}

// --- the embedded chat: the host's sign-in ---------------------------------------------------

/** Show nothing of the session that was on screen. */
function clearView() {
  threadsSeq += 1; // a list fetched for the previous session must not show up
  state.threads = [];
  state.convs.clear();
  state.outbox.clear();
  state.openTools.clear();
  state.openGuidelines.clear();
  state.loadSeq.clear();
  state.turnEnds.clear();
  state.currentId = null;
  state.servers?.close();
  renderMcpStatus([]);
  renderThreads();
  renderConversation();
}

/** Another session took over (a user signed in or out): its threads, its socket. */
async function switchSession() {
  clearView();
  markSession();
  state.conn.restart();
  try {
    await loadThreads();
  } catch (e) {
    showBanner(`Could not load conversations: ${e.message}`);
  }
  const initial = state.threads[0];
  if (initial) await selectThread(initial.id);
}

function markSession() {
  const api = state.api;
  document.body.dataset.session = api.userRevoked ? "revoked" : api.userId ? "user" : "anonymous";
}

/** The user's sessions were revoked: the chat stops speaking as the user (no socket, none
 * of the user's threads on screen) and asks the host; it does not fall back to anonymous. */
function onUserRevoked() {
  state.conn?.stop();
  clearView();
  markSession();
  showBanner("You were signed out. Waiting for the host to sign you in again.");
  state.host?.sessionRevoked();
}

function startHostLink() {
  state.host = new HostLink(EMBED.hostOrigin, {
    signIn: async (jwt) => {
      const before = state.api.userId;
      const revoked = state.api.userRevoked;
      const result = await state.api.signIn(jwt);
      // A renewal for the same user keeps the chat as it is; the socket picks up the new
      // token when it next connects. After a revocation the view and socket start again.
      if (result.user_id !== before || revoked) {
        showBanner("");
        await switchSession();
      }
      return result;
    },
    signOut: async () => {
      try {
        await state.api.signOut();
      } finally {
        await switchSession();
      }
    },
  });
  state.host.start();
}

/** A thread loaded with its last turn unended (stored so far, no ending yet) may still be
 * running, e.g. waiting for the user's answer to a question: follow it if it is. */
function followUnfinishedTurn(id) {
  const conv = state.convs.get(id);
  if (!conv || conv.runningTurn || !state.conn?.isOpen) return;
  const last = [...conv.turns.values()].pop();
  if (!last || !["partial", "unanswered"].includes(last.state) || state.outbox.has(last.id)) return;
  state.conn.send({ type: "resume", thread_id: id, turn_id: last.id, after_seq: 0 });
}

// --- start ---------------------------------------------------------------------------------

function bindUi() {
  drawPageIcons();
  setInterval(tickRunningTools, 1000);
  $("toggle-theme").addEventListener("click", toggleTheme);
  $("open-servers").addEventListener("click", () => state.servers.open({ opener: $("open-servers") }));
  $("toggle-sidebar").addEventListener("click", toggleSidebar);
  $("scrim").addEventListener("click", () => toggleSidebar());
  $("close-sidebar").addEventListener("click", () => toggleSidebar());
  PHONE.addEventListener("change", onPhoneChange);
  for (const button of document.querySelectorAll("#suggestions .suggestion")) {
    button.addEventListener("click", () => {
      $("input").value = button.textContent;
      safeTrack(EVENT.CHAT_ACTION_USED, { action: "suggestion" });
      $("composer").requestSubmit();
    });
  }
  $("new-thread").addEventListener("click", async () => {
    try {
      await newThread();
      closeListOnPhone();
    } catch (e) {
      showBanner(`Could not create a conversation: ${e.message}`);
    }
  });
  $("stop").addEventListener("click", stopTurn);
  $("search").addEventListener("input", onSearchInput);
  $("thread-search").addEventListener("submit", (event) => {
    event.preventDefault();
    runSearch();
  });
  $("export-md").addEventListener("click", () => exportCurrent("markdown"));
  $("export-json").addEventListener("click", () => exportCurrent("json"));
  $("banner").addEventListener("click", () => showBanner(""));
  const input = $("input");
  const grow = () => {
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight, 240)}px`;
  };
  input.addEventListener("input", grow);
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    } else if (event.key === "ArrowUp" && !input.value && !event.isComposing) {
      // Up in an empty box: edit the last question (as in most chat apps).
      const conv = state.currentId ? state.convs.get(state.currentId) : null;
      const last = conv ? [...conv.turns.values()].reverse().find((t) => t.user && !t.user.pending) : null;
      if (last && !conv.busy) {
        event.preventDefault();
        startEdit(last);
      }
    } else if (event.key === "Escape" && state.editing) {
      event.preventDefault(); // cancels the edit, does not stop an answer
      endEdit();
      input.value = "";
      grow();
    }
  });
  $("cancel-edit").addEventListener("click", () => {
    endEdit();
    input.value = "";
    grow();
    input.focus();
  });
  // Escape stops the running answer, wherever the focus is (a field's own Escape first).
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.defaultPrevented) return;
    if (event.target.closest?.(".thread")) return; // ends a rename
    if (state.servers?.isOpen) return; // closes the servers panel (its dialog's own Escape)
    if (PHONE.matches && sidebarVisible()) {
      event.preventDefault();
      toggleSidebar();
      return;
    }
    const conv = state.currentId ? state.convs.get(state.currentId) : null;
    if (conv?.runningTurn) {
      event.preventDefault();
      stopTurn();
    }
  });
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text || $("send").disabled) return;
    input.value = "";
    grow();
    const editing = state.editing?.threadId === state.currentId ? state.editing.turnId : null;
    endEdit();
    if (editing) safeTrack(EVENT.CHAT_ACTION_USED, { action: "edit" });
    sendMessage(text, { replaces: editing });
  });
}

/** One line on the empty screen: the demo planner or which model answers (text only). */
function showAnswerer() {
  state.api
    .answerer()
    .then((said) => {
      if (!said?.text) return;
      let note = document.getElementById("answerer");
      if (!note) {
        note = el("p", "answerer-note");
        note.id = "answerer";
        $("empty").append(note);
      }
      note.textContent = said.text;
    })
    .catch(() => {});
}

async function main() {
  bindUi();
  const savedSidebar = store.get(SIDEBAR_KEY);
  setSidebar(PHONE.matches ? false : savedSidebar !== "closed", { remember: false });
  setConnState("connecting");
  state.api = EMBED
    ? new Api({
        tenant: EMBED.tenant,
        // Not the standalone chat's session: that one belongs to the default tenant.
        storageKey: `albert.embed.${EMBED.tenant}.session`,
        onUserExpired: () => state.host?.sessionExpired(),
        onUserRevoked,
      })
    : new Api();
  state.servers = new ServersPanel({
    api: state.api,
    onAuthorize: authorizeServer,
    fallbackFocus: () => $("open-servers"),
  });
  await state.api.ensureSession();
  showAnswerer();
  startAnalytics(state.api);
  safeTrack(EVENT.SESSION_STARTED, { theme: currentTheme(), viewport_width: Math.round(window.innerWidth) });
  state.conn = new ChatConnection(() => state.api.socketUrl(), {
    onFrame,
    onState: setConnState,
    onOpen,
    // A socket that keeps failing may be refused for its token (a browser cannot see the
    // 401 of an upgrade): an HTTP call renews the session if that is the cause.
    onRepeatedFailure: () => state.api.listThreads().catch(() => {}),
    // Closed with 4003: the same path as a 401 `session_revoked`.
    onRevoked: () => state.api.revokeUser(),
    onEvicted: () =>
      showBanner("Albert is open in too many tabs, so this one was disconnected. Reload it to chat here."),
  });
  state.conn.start();
  try {
    await loadThreads();
  } catch (e) {
    showBanner(`Could not load conversations: ${e.message}`);
  }
  const saved = store.get(THREAD_KEY);
  const initial = state.threads.find((t) => t.id === saved) || state.threads[0];
  if (initial) await selectThread(initial.id);
  else renderConversation();
  if (EMBED) {
    markSession();
    startHostLink();
  }
  document.body.dataset.ready = "true";
}

main().catch((e) => showBanner(`Albert could not start: ${e.message}`));
