// HTTP side of the chat: the session (client id + signed token) and the thread API.
// Anonymous sessions are kept in localStorage; a signed-in user's session (from the host's
// JWT, embedded chat only) lives in memory: the host hands a fresh JWT to every page load.

import { store } from "./storage.js";

const SESSION_KEY = "albert.session";
// Renew a token this long before it expires, so a long-open tab never sends a stale one.
const RENEW_MARGIN_MS = 24 * 3600 * 1000;
// A user's session cannot be renewed past the host's JWT: it is used until this close to
// its end, then the host is asked for a new JWT.
const USER_MARGIN_MS = 5_000;
// A claim the server finished (or had finished): the anonymous session is retired.
const CLAIM_DONE = new Set(["claimed", "already_claimed"]);

export class ApiError extends Error {
  /** `fields`: a refused body's errors, field by field ([{field, message}]), if it said. */
  constructor(status, error, detail, fields = null) {
    super(detail || error || `HTTP ${status}`);
    this.status = status;
    this.error = error;
    this.detail = detail;
    this.fields = fields;
  }
}

function loadSession(key) {
  try {
    const session = JSON.parse(store.get(key) || "null");
    if (session && typeof session.client_id === "string") return session;
  } catch (e) {
    // A damaged entry is replaced by a new session.
  }
  return null;
}

function fresh(session) {
  if (!session) return false;
  if (!session.token) return true;
  return !session.expires_at || session.expires_at * 1000 - Date.now() > RENEW_MARGIN_MS;
}

function authHeaders(session) {
  const headers = { "x-albert-client": session.client_id };
  if (session.token) headers.authorization = `Bearer ${session.token}`;
  return headers;
}

/** The `error` of a JSON error body, read from a clone (the caller may still read it). */
async function errorCode(response) {
  try {
    const body = await response.clone().json();
    return body && typeof body.error === "string" ? body.error : null;
  } catch (e) {
    return null;
  }
}

export class Api {
  /**
   * @param {{tenant?: string, storageKey?: string, onUserExpired?: () => void, onUserRevoked?: () => void}} options
   * `tenant`: anonymous sessions are started for it (the embedded chat's tenant);
   * `onUserExpired`: the signed-in session ended (the host is asked for a new JWT);
   * `onUserRevoked`: the user's sessions were revoked (401 `session_revoked`, or the
   * socket closed with 4003): nothing more is sent as the user until the host signs in again.
   */
  constructor({ tenant = null, storageKey = SESSION_KEY, onUserExpired = null, onUserRevoked = null } = {}) {
    this.tenant = tenant;
    this.storageKey = storageKey;
    this.onUserExpired = onUserExpired;
    this.onUserRevoked = onUserRevoked;
    this.session = loadSession(storageKey);
    this.user = null; // {client_id, token, expires_at, user_id}: memory only
    this.renewing = null;
  }

  /** The session requests go out with: the user's when signed in, else the anonymous one. */
  get current() {
    return this.user || this.session;
  }

  get clientId() {
    return this.current ? this.current.client_id : null;
  }

  get userId() {
    return this.user ? this.user.user_id : null;
  }

  /** True while the user's session is revoked and the host has not signed in again. */
  get userRevoked() {
    return Boolean(this.user && this.user.revoked);
  }

  /** The server revoked the user's session: drop its token (nothing more goes out with
   * it) and tell the page, once. The user id stays, so the host's next JWT for the same
   * user is recognised as a sign-in again, not as a switch. */
  revokeUser() {
    if (!this.user || this.user.revoked) return;
    this.user = { ...this.user, token: "", expires_at: 0, revoked: true };
    if (this.onUserRevoked) this.onUserRevoked();
  }

  /** A usable session: the stored one, renewed when close to expiry, or a new one. */
  async ensureSession() {
    if (this.user) {
      if (this.user.revoked) {
        // Neither renewed nor replaced by an anonymous session: only the host may sign in.
        throw new ApiError(401, "session_revoked", "signed out; waiting for the host to sign in again");
      }
      if (this.user.expires_at * 1000 - Date.now() > USER_MARGIN_MS) return this.user;
      // Renewing it here would start an anonymous client instead: only the host can.
      if (this.onUserExpired) this.onUserExpired();
      throw new ApiError(401, "session_expired", "the sign-in has expired; waiting for the host");
    }
    if (fresh(this.session)) return this.session;
    return this.renew();
  }

  /** Sign in with the host's JWT (used for this one request, kept nowhere), claiming this
   * browser's anonymous work unless it was claimed already. A later call renews. */
  async signIn(jwt) {
    const body = {};
    if (this.tenant) body.tenant = this.tenant;
    if (this.session?.token) body.claim_token = this.session.token;
    const response = await fetch("/api/session", {
      method: "POST",
      headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    let payload = null;
    try {
      payload = await response.json();
    } catch (e) {
      payload = null;
    }
    if (!response.ok || !payload || typeof payload.user_id !== "string") {
      throw new ApiError(response.status, payload?.error || "sign_in_failed", payload?.detail);
    }
    this.user = {
      client_id: payload.client_id,
      token: payload.token,
      expires_at: payload.expires_at,
      user_id: payload.user_id,
    };
    if (payload.claim && CLAIM_DONE.has(payload.claim.status)) this.forgetAnonymous();
    return { user_id: payload.user_id, claim: payload.claim || null };
  }

  /** Drop the user's session and start a fresh anonymous one. */
  async signOut() {
    this.user = null;
    this.forgetAnonymous();
    return this.renew();
  }

  /** Its work went to the user (or it is being replaced): nothing to keep of it. */
  forgetAnonymous() {
    this.session = null;
    store.remove(this.storageKey);
  }

  /** POST /api/session: renews the current client when its token is still valid. */
  renew() {
    if (!this.renewing) {
      this.renewing = (async () => {
        const headers = this.session?.token ? { authorization: `Bearer ${this.session.token}` } : {};
        const init = { method: "POST", headers };
        if (this.tenant) {
          headers["content-type"] = "application/json";
          init.body = JSON.stringify({ tenant: this.tenant });
        }
        const response = await fetch("/api/session", init);
        if (!response.ok) throw new ApiError(response.status, "session", "could not start a session");
        const body = await response.json();
        this.session = { client_id: body.client_id, token: body.token || "", expires_at: body.expires_at || 0 };
        store.set(this.storageKey, JSON.stringify(this.session));
        return this.session;
      })().finally(() => {
        this.renewing = null;
      });
    }
    return this.renewing;
  }

  async request(method, path, body, { retried = false } = {}) {
    const session = await this.ensureSession();
    const init = { method, headers: authHeaders(session) };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    if (response.status === 401 && session === this.user && (await errorCode(response)) === "session_revoked") {
      this.revokeUser();
      throw new ApiError(401, "session_revoked", "this sign-in was revoked; waiting for the host");
    }
    if (response.status === 401 && !retried) {
      if (session === this.user) {
        // Only the host can renew a user's session.
        this.user.expires_at = 0;
        return this.request(method, path, body, { retried: true });
      }
      // Expired or rotated-out token: renew once and try again.
      await this.renew();
      return this.request(method, path, body, { retried: true });
    }
    if (response.status === 410 && !retried && session === this.session) {
      // This anonymous session's work was claimed by a user (in another tab of the
      // embedded chat): it answers nothing any more, so start a fresh one.
      this.forgetAnonymous();
      await this.renew();
      return this.request(method, path, body, { retried: true });
    }
    if (response.status === 204) return null;
    let payload = null;
    try {
      payload = await response.json();
    } catch (e) {
      payload = null;
    }
    if (!response.ok) throw new ApiError(response.status, payload?.error, payload?.detail, payload?.fields || null);
    return payload;
  }

  listThreads() {
    return this.request("GET", "/api/threads?limit=100");
  }
  createThread(title) {
    return this.request("POST", "/api/threads", title ? { title } : {});
  }
  mcpStatus() {
    return this.request("GET", "/api/mcp/status");
  }
  listMcpServers() {
    return this.request("GET", "/api/mcp/servers");
  }
  /** Add or replace one MCP server (McpServerIn). */
  saveMcpServer(body) {
    return this.request("POST", "/api/mcp/servers", body);
  }
  deleteMcpServer(name) {
    return this.request("DELETE", `/api/mcp/servers/${encodeURIComponent(name)}`);
  }
  /** Drop an MCP server's connection and connect afresh now: its status back. */
  reconnectMcp(name) {
    return this.request("POST", `/api/mcp/servers/${encodeURIComponent(name)}/reconnect`);
  }
  /** What answers the chat: { kind, model, host, text } (text: one line for people). */
  answerer() {
    return this.request("GET", "/api/answerer");
  }
  /** Begin an MCP server's OAuth: `{authorization_url}` for the user to open. */
  authorizeMcp(name) {
    return this.request("POST", `/api/mcp/servers/${encodeURIComponent(name)}/authorize`);
  }
  getThread(id) {
    return this.request("GET", `/api/threads/${encodeURIComponent(id)}?limit=200`);
  }
  renameThread(id, title) {
    return this.request("PATCH", `/api/threads/${encodeURIComponent(id)}`, { title });
  }
  searchThreads(q) {
    return this.request("GET", `/api/threads?q=${encodeURIComponent(q)}&limit=50`);
  }
  pinThread(id, pinned) {
    return this.request("PATCH", `/api/threads/${encodeURIComponent(id)}`, { pinned });
  }
  sendFeedback(threadId, turnId, rating, comment) {
    const path = `/api/threads/${encodeURIComponent(threadId)}/turns/${encodeURIComponent(turnId)}/feedback`;
    return this.request("PUT", path, { rating, comment: comment || null });
  }
  /** A thread's export (format "markdown" or "json") as a Blob to save. */
  async exportThread(id, format) {
    const session = await this.ensureSession();
    const response = await fetch(`/api/threads/${encodeURIComponent(id)}/export?format=${format}`, {
      headers: authHeaders(session),
    });
    if (!response.ok) throw new ApiError(response.status, await errorCode(response), "export failed");
    return response.blob();
  }
  deleteThread(id) {
    return this.request("DELETE", `/api/threads/${encodeURIComponent(id)}`);
  }

  /** Query string that authenticates where headers cannot be set: the WebSocket only
   * (the server takes a token from the URL on an upgrade and nowhere else). */
  authQuery() {
    const session = this.current;
    const params = new URLSearchParams({ client_id: session.client_id });
    if (session.token) params.set("token", session.token);
    return params.toString();
  }

  /** The chat socket's URL, with a session renewed first if it is close to expiry. */
  async socketUrl() {
    await this.ensureSession();
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    return `${scheme}://${location.host}/api/chat?${this.authQuery()}`;
  }

  /** Post client analytics events; `beacon` survives the page closing. A keepalive fetch
   * rather than sendBeacon: a beacon cannot carry the Authorization header. */
  postEvents(events, { beacon = false } = {}) {
    if (!this.current) return null;
    if (beacon) {
      const headers = { ...authHeaders(this.current), "content-type": "application/json" };
      const body = JSON.stringify({ events });
      return fetch("/api/events", { method: "POST", headers, body, keepalive: true });
    }
    return this.request("POST", "/api/events", { events });
  }
}
