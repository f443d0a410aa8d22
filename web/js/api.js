// HTTP side of the chat: the session (client id + signed token) and the thread API.

const SESSION_KEY = "albert.session";
// Renew a token this long before it expires, so a long-open tab never sends a stale one.
const RENEW_MARGIN_MS = 24 * 3600 * 1000;

export class ApiError extends Error {
  constructor(status, error, detail) {
    super(detail || error || `HTTP ${status}`);
    this.status = status;
    this.error = error;
    this.detail = detail;
  }
}

function loadSession() {
  try {
    const session = JSON.parse(localStorage.getItem(SESSION_KEY) || "null");
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

export class Api {
  constructor() {
    this.session = loadSession();
    this.renewing = null;
  }

  get clientId() {
    return this.session ? this.session.client_id : null;
  }

  /** A usable session: the stored one, renewed when close to expiry, or a new one. */
  async ensureSession() {
    if (fresh(this.session)) return this.session;
    return this.renew();
  }

  /** POST /api/session: renews the current client when its token is still valid. */
  renew() {
    if (!this.renewing) {
      this.renewing = (async () => {
        const headers = this.session?.token ? { authorization: `Bearer ${this.session.token}` } : {};
        const response = await fetch("/api/session", { method: "POST", headers });
        if (!response.ok) throw new ApiError(response.status, "session", "could not start a session");
        const body = await response.json();
        this.session = { client_id: body.client_id, token: body.token || "", expires_at: body.expires_at || 0 };
        localStorage.setItem(SESSION_KEY, JSON.stringify(this.session));
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
    if (response.status === 401 && !retried) {
      // Expired or rotated-out token: renew once and try again.
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
    if (!response.ok) throw new ApiError(response.status, payload?.error, payload?.detail);
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
  getThread(id) {
    return this.request("GET", `/api/threads/${encodeURIComponent(id)}?limit=200`);
  }
  renameThread(id, title) {
    return this.request("PATCH", `/api/threads/${encodeURIComponent(id)}`, { title });
  }
  deleteThread(id) {
    return this.request("DELETE", `/api/threads/${encodeURIComponent(id)}`);
  }

  /** Query string that authenticates where headers cannot be set: the WebSocket only
   * (the server takes a token from the URL on an upgrade and nowhere else). */
  authQuery() {
    const params = new URLSearchParams({ client_id: this.session.client_id });
    if (this.session.token) params.set("token", this.session.token);
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
    if (!this.session) return null;
    if (beacon) {
      const headers = { ...authHeaders(this.session), "content-type": "application/json" };
      const body = JSON.stringify({ events });
      return fetch("/api/events", { method: "POST", headers, body, keepalive: true });
    }
    return this.request("POST", "/api/events", { events });
  }
}
