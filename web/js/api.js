// HTTP side of the chat: the client id and the thread API.

const CLIENT_KEY = "albert.client_id";

export class ApiError extends Error {
  constructor(status, error, detail) {
    super(detail || error || `HTTP ${status}`);
    this.status = status;
    this.error = error;
    this.detail = detail;
  }
}

async function newSession() {
  const response = await fetch("/api/session", { method: "POST" });
  if (!response.ok) throw new ApiError(response.status, "session", "could not start a session");
  const body = await response.json();
  localStorage.setItem(CLIENT_KEY, body.client_id);
  return body.client_id;
}

/** The stored client id, or a new one from POST /api/session. */
export async function ensureClientId() {
  const stored = localStorage.getItem(CLIENT_KEY);
  if (stored && /^c_[A-Za-z0-9_-]{16,64}$/.test(stored)) return stored;
  return newSession();
}

export class Api {
  constructor(clientId) {
    this.clientId = clientId;
  }

  async request(method, path, body) {
    const init = { method, headers: { "x-albert-client": this.clientId } };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    if (response.status === 204) return null;
    let payload = null;
    try {
      payload = await response.json();
    } catch (e) {
      payload = null;
    }
    if (!response.ok) {
      throw new ApiError(response.status, payload?.error, payload?.detail);
    }
    return payload;
  }

  listThreads() {
    return this.request("GET", "/api/threads?limit=100");
  }
  createThread(title) {
    return this.request("POST", "/api/threads", title ? { title } : {});
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

  /** Post client analytics events; `beacon` survives the page closing. */
  postEvents(events, { beacon = false } = {}) {
    const body = JSON.stringify({ events });
    if (beacon && navigator.sendBeacon) {
      const url = `/api/events?client_id=${encodeURIComponent(this.clientId)}`;
      return navigator.sendBeacon(url, new Blob([body], { type: "application/json" }));
    }
    return fetch("/api/events", {
      method: "POST",
      keepalive: true,
      headers: { "x-albert-client": this.clientId, "content-type": "application/json" },
      body,
    });
  }
}

export function chatSocketUrl(clientId) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  return `${scheme}://${location.host}/api/chat?client_id=${encodeURIComponent(clientId)}`;
}
