// Client analytics: catalog-validated events, posted in small batches to /api/events.

import { EVENT, setEventSink, track } from "./events.generated.js";

const FLUSH_DELAY_MS = 300;
const MAX_QUEUE = 20;

export { EVENT, track };

function eventId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return "e_" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Start sending tracked events through `api`; returns nothing, tracking is global. */
export function startAnalytics(api) {
  let queue = [];
  let timer = null;
  const started = performance.now();

  const flush = (beacon = false) => {
    clearTimeout(timer);
    timer = null;
    if (!queue.length) return;
    const batch = queue;
    queue = [];
    try {
      const sent = api.postEvents(batch, { beacon });
      if (sent && typeof sent.catch === "function") sent.catch(() => {});
    } catch (e) {
      // Analytics never gets in the user's way.
    }
  };

  setEventSink((name, props) => {
    queue.push({ event: name, props, time: Date.now(), id: eventId() });
    if (queue.length >= MAX_QUEUE) flush();
    else if (timer === null) timer = setTimeout(flush, FLUSH_DELAY_MS);
  });

  let ended = false;
  window.addEventListener("pagehide", () => {
    if (ended) return;
    ended = true;
    track(EVENT.SESSION_ENDED, { duration_ms: Math.round(performance.now() - started) });
    flush(true);
  });
}

/** Track without ever throwing into UI code (a catalog mismatch is a bug, logged). */
export function safeTrack(name, props) {
  try {
    track(name, props);
  } catch (e) {
    console.error("analytics:", e.message);
  }
}
