// The one chat WebSocket: connection state, keep-alive, reconnect with backoff.

const PING_EVERY_MS = 25_000;
const BASE_DELAY_MS = 400;
const MAX_DELAY_MS = 8_000;
// The server closed this socket because the client has too many open (another tab
// took its place): reconnecting would only push that tab out in turn.
const CLOSE_TOO_MANY_SOCKETS = 4008;
// The user's sessions were revoked (the host signed the user out everywhere): no
// reconnect with this session; the page waits for the host to sign in again.
export const CLOSE_SESSION_REVOKED = 4003;

export class ChatConnection {
  /**
   * @param {() => Promise<string>} url
   * @param {{onFrame: (f: object) => void, onState: (s: string) => void, onOpen: (again: boolean) => void}} handlers
   */
  constructor(url, handlers) {
    this.url = url;
    this.handlers = handlers;
    this.ws = null;
    this.state = "connecting";
    this.attempts = 0;
    this.everOpened = false;
    this.timer = null;
    this.pinger = null;
    this.connecting = false;
    this.generation = 0; // bumped by restart(): a connect begun before it is dropped
    window.addEventListener("online", () => this.reconnectNow());
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.reconnectNow();
    });
  }

  start() {
    this.connect();
  }

  get isOpen() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.handlers.onState(state);
  }

  async connect() {
    clearTimeout(this.timer);
    this.timer = null;
    this.setState(this.everOpened ? "reconnecting" : "connecting");
    this.connecting = true;
    const generation = this.generation;
    let ws;
    try {
      const url = await this.url();
      if (generation !== this.generation) return;
      ws = new WebSocket(url);
    } catch (e) {
      if (generation === this.generation) this.scheduleReconnect();
      return;
    } finally {
      if (generation === this.generation) this.connecting = false;
    }
    this.ws = ws;
    ws.onopen = () => {
      if (this.ws !== ws) return;
      const again = this.everOpened;
      this.everOpened = true;
      this.attempts = 0;
      this.setState("live");
      clearInterval(this.pinger);
      this.pinger = setInterval(() => this.send({ type: "ping" }), PING_EVERY_MS);
      this.handlers.onOpen(again);
    };
    ws.onmessage = (event) => {
      if (this.ws !== ws) return;
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch (e) {
        return;
      }
      this.handlers.onFrame(frame);
    };
    ws.onclose = (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      clearInterval(this.pinger);
      if (event.code === CLOSE_SESSION_REVOKED) {
        this.setState("paused");
        if (this.handlers.onRevoked) this.handlers.onRevoked();
        return;
      }
      if (event.code === CLOSE_TOO_MANY_SOCKETS) {
        this.setState("paused");
        if (this.handlers.onEvicted) this.handlers.onEvicted();
        return;
      }
      this.scheduleReconnect();
    };
    ws.onerror = () => {
      // onclose follows and schedules the retry.
    };
  }

  scheduleReconnect() {
    this.setState(this.everOpened ? "reconnecting" : "connecting");
    if (this.timer !== null) return;
    const base = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** this.attempts);
    const delay = base * (0.75 + Math.random() * 0.5);
    this.attempts += 1;
    if (this.attempts % 3 === 0 && this.handlers.onRepeatedFailure) this.handlers.onRepeatedFailure();
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, delay);
  }

  /** Drop the current socket and connect afresh (another session: the URL's token
   * changed). Frames of the old socket are not delivered any more. */
  restart() {
    this.drop("session changed");
    this.attempts = 0;
    this.everOpened = false;
    this.connect();
  }

  /** Close the socket and stay closed until restart() (the session was revoked). */
  stop() {
    this.drop("session revoked");
    this.setState("paused");
  }

  /** Close the current socket, pending reconnects and pings; its frames and close event
   * are not delivered any more. */
  drop(reason) {
    this.generation += 1;
    this.connecting = false;
    clearTimeout(this.timer);
    this.timer = null;
    clearInterval(this.pinger);
    const old = this.ws;
    this.ws = null; // its close event is then ignored
    if (old) old.close(1000, reason);
  }

  /** Skip the wait, e.g. when the network comes back. */
  reconnectNow() {
    if (this.ws !== null || this.timer === null || this.connecting) return;
    this.attempts = 0;
    this.connect();
  }

  /** Send a frame; false when the socket is not open (the caller keeps it for later). */
  send(frame) {
    if (!this.isOpen) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }
}
