// The MCP servers panel: the client's servers (their configs joined with live status), each
// with its state in words, its last error, its tools, and Authorize / Reconnect now / Edit /
// Remove; and the form that adds or edits one. A modal <dialog>: focus stays inside while
// it is open, Escape closes it, and focus goes back to what opened it.
// Server-supplied text is only ever set as textContent.

import { icon } from "./icons.js";

const NAME_RE = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const HEADER_RE = /^[A-Za-z0-9-]{1,64}$/;
const NAME_RULE = "Use 1 to 32 characters: lower-case letters, digits, - and _, starting with a letter or digit.";
const KINDS = [
  ["", "Auto (guessed from its tools)"],
  ["vaults", "Vaults (DeFi vault and yield data)"],
  ["filesystem", "Filesystem"],
  ["generic", "Generic"],
];
// Where a field error of the server's answer is shown.
const FIELD_OF = { name: "name", url: "url", headers: "headers", keep_headers: "headers", kind: "kind" };
const FAILING = new Set(["reconnecting", "failed", "needs_authorization"]);

let uid = 0;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(className, text, onClick, label) {
  const node = el("button", `btn btn-small ${className}`, text);
  node.type = "button";
  if (label) node.setAttribute("aria-label", label);
  node.addEventListener("click", onClick);
  return node;
}


/** Seconds until the next try, counted down from when the status arrived. */
function secondsLeft(status) {
  if (status.next_retry_in_seconds == null) return null;
  const gone = (Date.now() - (status.receivedAt || Date.now())) / 1000;
  return Math.max(0, Math.ceil(status.next_retry_in_seconds - gone));
}

/** A server's state in words: "ready", "reconnecting — next try in 4 s", "unavailable", … */
export function stateInWords(status) {
  if (!status) return "connecting";
  const left = secondsLeft(status);
  const next = left == null ? "" : left > 0 ? ` — next try in ${left} s` : " — trying again now";
  switch (status.state) {
    case "connecting":
      return "connecting";
    case "ready":
      return status.tools === 1 ? "ready, 1 tool" : `ready, ${status.tools || 0} tools`;
    case "reconnecting":
      return `reconnecting${next}`;
    case "failed":
      return `unavailable${next}`;
    case "needs_authorization":
      return "needs authorization";
    case "disabled":
      return "off";
    default:
      return status.state;
  }
}

const CHIP_WORDS = {
  connecting: "connecting",
  ready: "ready",
  reconnecting: "reconnecting",
  failed: "unavailable",
  needs_authorization: "needs authorization",
  disabled: "off",
};

/** The header chip of one server: compact status, a button that opens the panel on it. */
export function serverChip(status, onOpen) {
  const chip = el("button", "mcp-chip");
  chip.type = "button";
  const words = CHIP_WORDS[status.state] || status.state;
  const dot = el("span", "conn-dot");
  dot.setAttribute("aria-hidden", "true");
  const label = el("span", "mcp-chip-label", `${status.name}: ${words}`);
  chip.append(dot, label);
  const failing = FAILING.has(status.state) ? ", not connected" : "";
  chip.setAttribute("aria-label", `${status.name}: ${words}${failing}. Show MCP servers`);
  chip.title = status.last_error ? `${status.name}: ${words} (${status.last_error})` : `${status.name}: ${words}`;
  chip.addEventListener("click", () => onOpen(chip));
  return chip;
}

export class ServersPanel {
  /**
   * @param {{api: import("./api.js").Api, onAuthorize: (name: string) => void,
   *          fallbackFocus: () => HTMLElement | null}} options
   * `onAuthorize`: begin a server's OAuth (opens its page in a tab, inside the click);
   * `fallbackFocus`: where focus goes on closing when the opener is gone.
   */
  constructor({ api, onAuthorize, fallbackFocus }) {
    this.api = api;
    this.onAuthorize = onAuthorize;
    this.fallbackFocus = fallbackFocus || (() => null);
    this.configs = [];
    this.statuses = new Map(); // name -> status with receivedAt
    this.opener = null;
    this.focusName = null;
    this.confirming = null; // name of the server whose removal waits for confirmation
    this.removing = null; // name of the server whose removal is on its way
    this.editing = null; // the view being edited; null: adding
    this.loadSeq = 0;
    this.timer = null;
    this.build();
  }

  // --- the dialog --------------------------------------------------------------------------

  build() {
    const dialog = el("dialog", "servers-dialog");
    dialog.id = "servers-dialog";
    dialog.setAttribute("aria-labelledby", "servers-title");
    const head = el("div", "servers-head");
    const title = el("h2", "servers-title", "MCP servers");
    title.id = "servers-title";
    const close = button("servers-close icon-btn", "", () => this.close(), "Close MCP servers");
    close.classList.remove("btn", "btn-small");
    close.append(icon("close"));
    head.append(title, close);
    const intro = el(
      "p",
      "servers-intro",
      "MCP servers give Albert more tools. Their state updates live; add your own below.",
    );
    this.message = el("p", "servers-message");
    this.message.setAttribute("role", "status");
    this.message.setAttribute("aria-live", "polite");
    this.listError = el("p", "servers-load-error");
    this.listError.setAttribute("role", "alert");
    this.listError.hidden = true;
    this.list = el("ul", "servers-list");
    this.list.setAttribute("aria-label", "Servers");
    this.addButton = button("btn-primary servers-add", "Add a server", () => this.showForm(null));
    this.form = this.buildForm();
    dialog.append(head, intro, this.message, this.listError, this.list, this.addButton, this.form);
    dialog.addEventListener("close", () => this.closed());
    // A click on the backdrop (outside the dialog's box) closes it too.
    dialog.addEventListener("click", (event) => {
      if (event.target === dialog) {
        const box = dialog.getBoundingClientRect();
        const inside =
          event.clientX >= box.left && event.clientX <= box.right && event.clientY >= box.top && event.clientY <= box.bottom;
        if (!inside) this.close();
      }
    });
    document.body.append(dialog);
    this.dialog = dialog;
  }

  get isOpen() {
    return this.dialog.open;
  }

  /** Open the panel (on one server when `focus` names it); `opener` gets focus back. */
  async open({ focus = null, opener = null } = {}) {
    this.opener = opener || document.activeElement;
    this.focusName = focus;
    if (!this.dialog.open) this.dialog.showModal();
    this.hideForm({ restoreFocus: false });
    this.timer = this.timer || setInterval(() => this.tick(), 1000);
    await this.load();
    const item = focus ? this.itemOf(focus) : null;
    if (item) {
      item.querySelector(".server-name").focus();
      item.scrollIntoView({ block: "nearest" });
    } else if (!this.dialog.contains(document.activeElement) || document.activeElement === this.dialog) {
      this.dialog.querySelector(".servers-close").focus();
    }
  }

  close() {
    if (this.dialog.open) this.dialog.close();
  }

  closed() {
    clearInterval(this.timer);
    this.timer = null;
    this.confirming = null;
    const target = this.opener && this.opener.isConnected ? this.opener : this.fallbackFocus();
    this.opener = null;
    if (target && typeof target.focus === "function") target.focus();
  }

  say(text) {
    this.message.textContent = "";
    if (text) setTimeout(() => (this.message.textContent = text), 30);
  }

  /** Live states from the chat socket's mcp_status frames. */
  update(statuses) {
    const now = Date.now();
    this.statuses = new Map(statuses.map((s) => [s.name, { ...s, receivedAt: now }]));
    if (this.dialog.open) this.render();
  }

  async load() {
    const seq = ++this.loadSeq;
    try {
      const [list, status] = await Promise.all([this.api.listMcpServers(), this.api.mcpStatus()]);
      if (seq !== this.loadSeq) return;
      this.configs = list.servers || [];
      this.update(status.servers || []);
      this.listError.hidden = true;
    } catch (e) {
      if (seq !== this.loadSeq) return;
      this.listError.textContent = `Could not load the servers: ${e.message}`;
      this.listError.hidden = false;
    }
    this.render();
  }

  itemOf(name) {
    return [...this.list.children].find((li) => li.dataset.server === name) || null;
  }

  tick() {
    for (const li of this.list.children) {
      const status = this.statuses.get(li.dataset.server);
      const words = li.querySelector(".server-state-words");
      if (status && words && status.next_retry_in_seconds != null) words.textContent = stateInWords(status);
    }
  }

  // --- the list ----------------------------------------------------------------------------

  render() {
    // Keep focus on the same control of the same server across a re-render.
    const active = document.activeElement;
    const activeItem = active && this.list.contains(active) ? active.closest("li.server-item") : null;
    const keep = activeItem ? { server: activeItem.dataset.server, action: active.dataset.action } : null;
    this.list.replaceChildren(...this.configs.map((view) => this.renderServer(view)));
    // An empty list says "none" only when it was loaded: not beside a failed load.
    if (this.configs.length === 0 && this.listError.hidden) {
      this.list.append(el("li", "servers-empty", "No MCP servers yet."));
    }
    if (keep) {
      const item = this.itemOf(keep.server);
      const again = item && (keep.action ? item.querySelector(`[data-action="${keep.action}"]`) : item.querySelector(".server-name"));
      if (again) again.focus();
      else if (item) item.querySelector(".server-name").focus();
      else this.addButton.focus();
    }
  }

  renderServer(view) {
    const status = this.statuses.get(view.name) || null;
    const state = status ? status.state : "connecting";
    const li = el("li", "server-item");
    li.dataset.server = view.name;
    li.dataset.state = state;
    if (view.name === this.focusName) li.dataset.focused = "true";
    const head = el("div", "server-item-head");
    const name = el("h3", "server-name", view.name);
    name.tabIndex = -1;
    const stateLine = el("p", "server-state");
    const dot = el("span", "conn-dot");
    dot.setAttribute("aria-hidden", "true");
    stateLine.append(dot, el("span", "server-state-words", stateInWords(status)));
    head.append(name, stateLine);
    li.append(head, el("p", "server-url", view.url));
    if (view.source === "default") {
      li.append(
        el(
          "p",
          "server-note",
          "Set up by this deployment's settings: read-only here, it cannot be edited or removed.",
        ),
      );
    }
    if (status && status.last_error && state !== "ready") {
      const error = el("p", "server-error");
      error.append(el("strong", null, "Last error: "), document.createTextNode(status.last_error));
      li.append(error);
    }
    li.append(...this.renderTools(status));
    li.append(this.renderActions(view, status));
    return li;
  }

  renderTools(status) {
    const parts = [];
    if (!status || status.state !== "ready") return parts;
    const names = status.tool_names || [];
    // "orig → offered": the offered name says what the model sees.
    const originals = new Map();
    for (const entry of status.renamed || []) {
      const at = entry.lastIndexOf(" → ");
      if (at > 0) originals.set(entry.slice(at + 3), entry.slice(0, at));
    }
    if (names.length) {
      const id = `server-tools-${++uid}`;
      const label = el("p", "server-tools-label", `Tools (${names.length})`);
      label.id = id;
      const list = el("ul", "server-tools");
      list.setAttribute("aria-labelledby", id);
      for (const offered of names) {
        const item = el("li", "server-tool");
        const original = originals.get(offered);
        if (original) {
          item.dataset.renamed = "true";
          item.append(el("code", null, original), document.createTextNode(", offered as "), el("code", null, offered));
        } else {
          item.append(el("code", null, offered));
        }
        list.append(item);
      }
      parts.push(label, list);
    }
    const left = status.quarantined || [];
    if (left.length) {
      const id = `server-left-${++uid}`;
      const label = el("p", "server-tools-label", `Left out (${left.length})`);
      label.id = id;
      const list = el("ul", "server-quarantined");
      list.setAttribute("aria-labelledby", id);
      for (const entry of left) {
        const at = entry.indexOf(": ");
        const item = el("li", "server-tool");
        if (at > 0) item.append(el("code", null, entry.slice(0, at)), document.createTextNode(`: ${entry.slice(at + 2)}`));
        else item.textContent = entry;
        list.append(item);
      }
      parts.push(label, list);
    }
    return parts;
  }

  renderActions(view, status) {
    const actions = el("div", "server-actions");
    if (this.confirming === view.name) {
      const id = `server-confirm-${++uid}`;
      const question = el("span", "server-confirm", `Remove ${view.name}? Its tools go away at once.`);
      question.id = id;
      const yes = button("btn-danger", "Remove", () => this.remove(view.name), `Yes, remove ${view.name}`);
      yes.dataset.action = "confirm-remove";
      const no = button("", "Keep", () => this.cancelRemove(view.name), `Keep ${view.name}`);
      no.dataset.action = "cancel-remove";
      actions.setAttribute("role", "group");
      actions.setAttribute("aria-labelledby", id);
      actions.append(question, yes, no);
      return actions;
    }
    actions.setAttribute("role", "group");
    actions.setAttribute("aria-label", `Actions for ${view.name}`);
    if (status && status.state === "needs_authorization") {
      const authorize = button("btn-primary", "Authorize", () => this.onAuthorize(view.name), `Authorize ${view.name}`);
      authorize.dataset.action = "authorize";
      actions.append(authorize);
    }
    if (view.enabled) {
      const again = button("", "Reconnect now", () => this.reconnect(view.name), `Reconnect now, ${view.name}`);
      again.dataset.action = "reconnect";
      actions.append(again);
    }
    if (view.source !== "default") {
      const edit = button("", "Edit", () => this.showForm(view), `Edit ${view.name}`);
      edit.dataset.action = "edit";
      const remove = button("", "Remove", () => this.askRemove(view.name), `Remove ${view.name}`);
      remove.dataset.action = "remove";
      actions.append(edit, remove);
    }
    return actions;
  }

  async reconnect(name) {
    try {
      const status = await this.api.reconnectMcp(name);
      if (status && status.name) this.statuses.set(name, { ...status, receivedAt: Date.now() });
      this.say(`Reconnecting ${name}.`);
      this.render();
    } catch (e) {
      this.say(`Could not reconnect ${name}: ${e.message}`);
    }
  }

  askRemove(name) {
    this.confirming = name;
    this.render();
    const no = this.itemOf(name)?.querySelector('[data-action="cancel-remove"]');
    if (no) no.focus();
  }

  cancelRemove(name) {
    this.confirming = null;
    this.render();
    const again = this.itemOf(name)?.querySelector('[data-action="remove"]');
    if (again) again.focus();
  }

  async remove(name) {
    // A second click while the first removal is on its way would be told "no such server".
    if (this.removing === name) return;
    this.removing = name;
    try {
      await this.api.deleteMcpServer(name);
      this.confirming = null;
      this.configs = this.configs.filter((c) => c.name !== name);
      // Its form goes too: saving it would add the server again.
      if (this.editing && this.editing.name === name) this.hideForm({ restoreFocus: false });
      this.addButton.focus();
      this.say(`Removed ${name}.`);
      await this.load();
    } catch (e) {
      this.confirming = null;
      this.render();
      this.say(`Could not remove ${name}: ${e.message}`);
    } finally {
      this.removing = null;
    }
  }

  // --- the form ----------------------------------------------------------------------------

  buildForm() {
    const form = el("form", "server-form");
    form.noValidate = true;
    form.hidden = true;
    form.setAttribute("aria-labelledby", "server-form-title");
    this.formTitle = el("h3", "server-form-title", "Add a server");
    this.formTitle.id = "server-form-title";
    this.formTitle.tabIndex = -1;

    const field = (key, labelText, input, hintText) => {
      const box = el("div", "server-field");
      box.dataset.field = key;
      input.id = `server-${key}`;
      const label = el("label", null, labelText);
      label.htmlFor = input.id;
      const error = el("p", "field-error");
      error.id = `server-${key}-error`;
      error.hidden = true;
      const described = [];
      box.append(label, input);
      if (hintText) {
        const hint = el("p", "field-hint", hintText);
        hint.id = `server-${key}-hint`;
        described.push(hint.id);
        box.append(hint);
      }
      described.push(error.id);
      input.setAttribute("aria-describedby", described.join(" "));
      box.append(error);
      return box;
    };

    this.nameInput = el("input");
    this.nameInput.name = "name";
    this.nameInput.autocomplete = "off";
    this.nameInput.maxLength = 32;
    this.nameInput.required = true;
    this.urlInput = el("input");
    this.urlInput.name = "url";
    this.urlInput.type = "url";
    this.urlInput.autocomplete = "off";
    this.urlInput.maxLength = 2000;
    this.urlInput.required = true;
    this.urlInput.placeholder = "https://example.com/mcp";
    this.kindSelect = el("select");
    this.kindSelect.name = "kind";
    for (const [value, text] of KINDS) {
      const option = el("option", null, text);
      option.value = value;
      this.kindSelect.append(option);
    }

    // On or off: an off server keeps its settings and is not connected.
    this.enabledInput = el("input");
    this.enabledInput.type = "checkbox";
    this.enabledInput.id = "server-enabled";
    this.enabledInput.name = "enabled";
    this.enabledInput.checked = true;
    const enabled = el("div", "server-field server-enabled");
    const enabledLabel = el("label", null, "Connect to this server");
    enabledLabel.htmlFor = this.enabledInput.id;
    enabled.append(this.enabledInput, enabledLabel);

    // Headers: name/value rows.
    const headers = el("fieldset", "server-field server-headers");
    headers.dataset.field = "headers";
    const legend = el("legend", null, "Headers (optional)");
    const headersHint = el(
      "p",
      "field-hint",
      "Sent with every request, e.g. an API key. Stored values are never shown again; leave one empty to keep it.",
    );
    headersHint.id = "server-headers-hint";
    this.headerRows = el("div", "header-rows");
    const addRow = button("server-add-header", "Add a header", () => this.addHeaderRow().querySelector("input").focus());
    this.headersError = el("p", "field-error");
    this.headersError.id = "server-headers-error";
    this.headersError.hidden = true;
    headers.setAttribute("aria-describedby", "server-headers-hint server-headers-error");
    headers.append(legend, headersHint, this.headerRows, addRow, this.headersError);

    this.formError = el("p", "form-error");
    this.formError.setAttribute("role", "alert");
    this.formError.hidden = true;
    const buttons = el("div", "server-form-buttons");
    this.saveButton = el("button", "btn btn-primary", "Add server");
    this.saveButton.type = "submit";
    const cancel = button("", "Cancel", () => this.hideForm());
    buttons.append(this.saveButton, cancel);
    form.append(
      this.formTitle,
      field("name", "Name", this.nameInput, "Lower-case letters, digits, - and _ (at most 32)."),
      field("url", "URL", this.urlInput, "The server's streamable HTTP endpoint."),
      headers,
      field("kind", "Kind", this.kindSelect, "What the server offers; Auto guesses it from its tool names."),
      enabled,
      this.formError,
      buttons,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit();
    });
    return form;
  }

  addHeaderRow(name = "", kept = false) {
    const row = el("div", "header-row");
    if (kept) row.dataset.kept = name;
    const nameInput = el("input", "header-name");
    nameInput.value = name;
    nameInput.maxLength = 64;
    nameInput.autocomplete = "off";
    nameInput.placeholder = "X-Api-Key";
    const valueInput = el("input", "header-value");
    valueInput.type = "password";
    valueInput.autocomplete = "off";
    valueInput.maxLength = 4000;
    valueInput.placeholder = kept ? "stored value kept" : "value";
    const remove = button("server-remove-header icon-btn", "", () => {
      const next = row.nextElementSibling || row.previousElementSibling;
      row.remove();
      this.numberHeaderRows();
      (next ? next.querySelector("input") : this.form.querySelector(".server-add-header")).focus();
    });
    remove.classList.remove("btn", "btn-small");
    remove.append(icon("close", "icon-small"));
    row.append(nameInput, valueInput, remove);
    this.headerRows.append(row);
    this.numberHeaderRows();
    return row;
  }

  /** Each row's fields are named by its place: "Header 1 name", "Remove header 1", … */
  numberHeaderRows() {
    [...this.headerRows.children].forEach((row, i) => {
      row.querySelector(".header-name").setAttribute("aria-label", `Header ${i + 1} name`);
      row.querySelector(".header-value").setAttribute("aria-label", `Header ${i + 1} value`);
      row.querySelector(".server-remove-header").setAttribute("aria-label", `Remove header ${i + 1}`);
    });
  }

  showForm(view) {
    this.editing = view;
    this.clearErrors();
    this.nameInput.value = view ? view.name : "";
    this.nameInput.readOnly = Boolean(view);
    this.urlInput.value = view ? view.url : "";
    this.kindSelect.value = view && view.kind ? view.kind : "";
    this.enabledInput.checked = view ? Boolean(view.enabled) : true;
    this.headerRows.replaceChildren();
    for (const header of view ? view.header_names : []) this.addHeaderRow(header, true);
    this.formTitle.textContent = view ? `Edit ${view.name}` : "Add a server";
    this.saveButton.textContent = view ? "Save changes" : "Add server";
    this.form.hidden = false;
    this.addButton.hidden = true;
    (view ? this.urlInput : this.nameInput).focus();
    this.form.scrollIntoView({ block: "nearest" });
  }

  hideForm({ restoreFocus = true } = {}) {
    const editing = this.editing;
    this.form.hidden = true;
    this.addButton.hidden = false;
    this.editing = null;
    if (!restoreFocus) return;
    const edit = editing ? this.itemOf(editing.name)?.querySelector('[data-action="edit"]') : null;
    (edit || this.addButton).focus();
  }

  clearErrors() {
    for (const box of this.form.querySelectorAll("[data-field]")) {
      const error = box.querySelector(".field-error");
      error.textContent = "";
      error.hidden = true;
      for (const input of box.querySelectorAll("input, select")) input.removeAttribute("aria-invalid");
    }
    this.formError.textContent = "";
    this.formError.hidden = true;
  }

  fieldError(key, message) {
    const box = this.form.querySelector(`[data-field="${key}"]`);
    if (!box) return null;
    const error = box.querySelector(".field-error");
    error.textContent = error.textContent ? `${error.textContent} ${message}` : message;
    error.hidden = false;
    const inputs = [...box.querySelectorAll("input, select")];
    for (const input of inputs) input.setAttribute("aria-invalid", "true");
    return inputs[0] || null;
  }

  /** The body to send, or null after marking what is wrong (the simple checks only). */
  collect() {
    const errors = [];
    const name = this.nameInput.value.trim();
    const url = this.urlInput.value.trim();
    if (!name) errors.push(["name", "Enter a name."]);
    else if (!NAME_RE.test(name)) errors.push(["name", NAME_RULE]);
    else if (!this.editing && this.configs.some((c) => c.name === name && c.source !== "default")) {
      // Adding under a stored name would replace that server, its headers with it.
      errors.push(["name", `There is a server named ${name} already: edit it, or choose another name.`]);
    }
    if (!url) errors.push(["url", "Enter the server's URL."]);
    else if (!/^https?:\/\/\S+$/i.test(url)) errors.push(["url", "Use an http:// or https:// URL."]);
    const headers = {};
    const keep = [];
    for (const row of this.headerRows.children) {
      const key = row.querySelector(".header-name").value.trim();
      const value = row.querySelector(".header-value").value;
      if (!key && !value) continue;
      if (!key) {
        errors.push(["headers", "Each header needs a name."]);
        continue;
      }
      if (!HEADER_RE.test(key)) {
        errors.push(["headers", `"${key}" is not a valid header name (letters, digits and -).`]);
        continue;
      }
      if (!value && row.dataset.kept && row.dataset.kept.toLowerCase() === key.toLowerCase()) keep.push(row.dataset.kept);
      else if (!value) errors.push(["headers", `Enter a value for ${key}.`]);
      else headers[key] = value;
    }
    if (errors.length) {
      this.showErrors(errors);
      return null;
    }
    const body = { name, url, headers, enabled: this.enabledInput.checked };
    if (this.kindSelect.value) body.kind = this.kindSelect.value;
    if (keep.length) body.keep_headers = keep;
    if (this.editing) {
      // What the form does not show stays as it is.
      if (this.editing.secret_ref) {
        body.secret_ref = this.editing.secret_ref;
        body.secret_header = this.editing.secret_header || "Authorization";
        body.secret_prefix = this.editing.secret_prefix ?? "Bearer ";
      }
    }
    return body;
  }

  showErrors(errors) {
    let first = null;
    for (const [key, message] of errors) {
      const input = key ? this.fieldError(key, message) : null;
      if (!input) {
        this.formError.textContent = this.formError.textContent ? `${this.formError.textContent} ${message}` : message;
        this.formError.hidden = false;
      }
      first = first || input;
    }
    if (first) first.focus();
  }

  async submit() {
    this.clearErrors();
    const body = this.collect();
    if (!body) return;
    const adding = !this.editing;
    this.saveButton.disabled = true;
    try {
      await this.api.saveMcpServer(body);
    } catch (e) {
      const fields = Array.isArray(e.fields) ? e.fields : [];
      const errors = fields.length
        ? fields.map((f) => [FIELD_OF[f.field] || null, f.message])
        : [[null, e.detail || e.message]];
      // Disabling the focused button dropped focus to the page: it comes back in the form.
      this.saveButton.disabled = false;
      this.showErrors(errors);
      if (!this.form.contains(document.activeElement)) this.saveButton.focus();
      return;
    } finally {
      this.saveButton.disabled = false;
    }
    this.hideForm({ restoreFocus: false });
    this.say(adding ? `Added ${body.name}.` : `Saved ${body.name}.`);
    this.focusName = body.name;
    await this.load();
    const item = this.itemOf(body.name);
    if (item) item.querySelector(".server-name").focus();
    else this.addButton.focus();
  }
}
