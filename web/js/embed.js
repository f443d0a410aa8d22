// The embedded chat's hand-off with the host page that frames it (README, "Embedding the
// chat in the host product"). The page is /embed?tenant=<key>&host=<origin>; the server
// serves it only for a host origin the tenant lists, with `frame-ancestors` naming that
// origin alone, so the browser renders it in no other parent. Here the page talks to
// that parent only: it posts to `hostOrigin` (never "*"), and takes a message only when
// it comes from the parent window itself at exactly that origin and has a known shape.
// The host's JWT is passed on to POST /api/session and kept nowhere.

export const EMBED_PATH = "/embed";
const MAX_JWT_CHARS = 8_192;
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** The embedding this page was loaded for, or null when it runs standalone. */
export function embedding() {
  if (location.pathname !== EMBED_PATH) return null;
  const params = new URLSearchParams(location.search);
  // The server refuses a repeated one (it would check one value and the page use
  // another); a page that got here anyway is not embedded.
  if (params.getAll("host").length > 1 || params.getAll("tenant").length > 1) return null;
  const host = params.get("host") || "";
  let origin = null;
  try {
    origin = new URL(host).origin;
  } catch (e) {
    origin = null;
  }
  // The server checked it already; an origin written any other way could never match
  // `event.origin`, so it would only hide a mistake.
  if (!origin || origin === "null" || origin !== host) return null;
  return { tenant: params.get("tenant") || "default", hostOrigin: origin };
}

function plainObject(value) {
  return value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype;
}

function hasOnlyKeys(value, keys) {
  return Object.keys(value).every((key) => keys.includes(key));
}

/** A host message of a known shape, or null (anything else is ignored). */
export function readHostMessage(data) {
  if (!plainObject(data) || typeof data.type !== "string") return null;
  if (data.type === "albert:session") {
    const token = data.token;
    if (!hasOnlyKeys(data, ["type", "token"]) || typeof token !== "string") return null;
    if (token.length > MAX_JWT_CHARS || !JWT_SHAPE.test(token)) return null;
    return { type: data.type, token };
  }
  if (data.type === "albert:sign-out") {
    return hasOnlyKeys(data, ["type"]) ? { type: data.type } : null;
  }
  return null;
}

export class HostLink {
  /**
   * @param {string} hostOrigin the parent's origin, the only one spoken to or heard
   * @param {{signIn: (jwt: string) => Promise<{user_id: string}>, signOut: () => Promise<void>}} handlers
   */
  constructor(hostOrigin, handlers) {
    this.hostOrigin = hostOrigin;
    this.handlers = handlers;
    // One message at a time, in order: a sign-out sent during a sign-in comes after it.
    this.queue = Promise.resolve();
    this.expiryAnnounced = false;
    this.revocationAnnounced = false;
  }

  start() {
    window.addEventListener("message", (event) => this.receive(event));
    this.post({ type: "albert:ready" });
  }

  post(message) {
    if (window.parent === window) return; // opened on its own: nobody to talk to
    window.parent.postMessage(message, this.hostOrigin);
  }

  receive(event) {
    if (window.parent === window || event.source !== window.parent) return;
    if (event.origin !== this.hostOrigin) return;
    const message = readHostMessage(event.data);
    if (message === null) return;
    this.queue = this.queue.then(() => this.handle(message)).catch(() => {});
  }

  async handle(message) {
    if (message.type === "albert:session") {
      try {
        const result = await this.handlers.signIn(message.token);
        this.expiryAnnounced = false;
        this.revocationAnnounced = false;
        this.post({ type: "albert:signed-in", user_id: result.user_id });
      } catch (e) {
        this.post({ type: "albert:sign-in-failed", error: e.error || "sign_in_failed", detail: e.detail || e.message || "" });
      }
      return;
    }
    try {
      await this.handlers.signOut();
    } finally {
      // The user's session is gone even when the fresh anonymous one could not be
      // started yet (the next request starts it).
      this.expiryAnnounced = false;
      this.revocationAnnounced = false;
      this.post({ type: "albert:signed-out" });
    }
  }

  /** The user's session ran out: ask the host for a fresh JWT, once per session. */
  sessionExpired() {
    if (this.expiryAnnounced) return;
    this.expiryAnnounced = true;
    this.post({ type: "albert:session-expired" });
  }

  /** The user's sessions were revoked (401 `session_revoked` or a socket closed with
   * 4003): ask the host, once, whether the user is still signed in. */
  sessionRevoked() {
    if (this.revocationAnnounced) return;
    this.revocationAnnounced = true;
    this.post({ type: "albert:session-revoked" });
  }
}
