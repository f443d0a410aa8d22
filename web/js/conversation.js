// The model of one thread's conversation: turns keyed by turn id, parts keyed by
// call id or step, so applying the same data twice (HTTP reload + live frames,
// a resent message) never shows anything twice.

const ANSWERED = new Set(["stop", "step_limit", "length", "refusal"]);
const RESTART_NOTE = "This answer was cut off by a restart of the server; what was written so far is kept.";
const STORAGE_NOTE = "This answer could not be saved (storage unavailable) and was stopped; what was shown of it is kept.";

function parseArgs(raw) {
  if (raw && typeof raw === "object") return raw;
  try {
    const value = JSON.parse(raw || "{}");
    return value && typeof value === "object" ? value : {};
  } catch (e) {
    return {};
  }
}

const UNFINISHED = { code: "failed", message: "This answer did not finish.", retryable: true };

/** A failed turn's error as shown: from an error frame, or the one its browser was told
 * (the stored `meta.error`); a general one where there is none. */
function turnError(error) {
  if (!error || typeof error.message !== "string" || !error.message) return { ...UNFINISHED };
  const shown = { code: String(error.code || "failed"), message: error.message, retryable: Boolean(error.retryable) };
  if (typeof error.detail === "string" && error.detail) shown.detail = error.detail;
  return shown;
}

export class Conversation {
  constructor(threadId) {
    this.threadId = threadId;
    this.turns = new Map();
  }

  /** Build from GET /api/threads/{id} messages (oldest first). */
  static fromMessages(threadId, messages) {
    const conv = new Conversation(threadId);
    for (const m of messages) conv.applyMessage(m);
    for (const turn of conv.turns.values()) {
      if (turn.state === "loading") {
        // A stored question with no stored answer: the turn never got to finish.
        turn.state = "unanswered";
      }
      for (const part of turn.parts) {
        if (part.type === "tool" && part.status === "running" && turn.state !== "running") {
          part.status = "error";
          part.content = part.content || "No result: the turn ended before this tool finished.";
        }
      }
    }
    return conv;
  }

  turn(turnId) {
    let turn = this.turns.get(turnId);
    if (!turn) {
      turn = { id: turnId, user: null, parts: [], state: "loading", error: null, finishReason: null, seenStart: false };
      this.turns.set(turnId, turn);
    }
    return turn;
  }

  tool(turn, callId) {
    return turn.parts.find((p) => p.type === "tool" && p.callId === callId);
  }

  applyMessage(m) {
    const turn = this.turn(m.turn_id);
    if (m.role === "user") {
      turn.user = { text: m.content, pending: false };
      return;
    }
    // An earlier answer of a regenerated question: kept apart, shown on request.
    const version = m.meta?.version;
    if (Number.isInteger(version) && version > 0) {
      turn.versions = turn.versions || [];
      let old = turn.versions[version - 1];
      if (!old) {
        old = { id: `${turn.id}#${version}`, parts: [], state: "loading", error: null, finishReason: null };
        turn.versions[version - 1] = old;
      }
      this._applyAnswer(old, m);
      if (old.state === "loading") old.state = "partial";
      return;
    }
    if (m.role === "assistant" && m.meta?.feedback) turn.feedback = m.meta.feedback;
    this._applyAnswer(turn, m);
  }

  _applyAnswer(turn, m) {
    if (m.role === "tool") {
      let part = this.tool(turn, m.tool_call_id);
      if (!part) {
        part = { type: "tool", callId: m.tool_call_id, name: m.name, args: {} };
        turn.parts.push(part);
      }
      part.status = m.status === "error" ? "error" : "ok";
      const source = m.meta?.source;
      part.server = source && source !== "local" && source !== "unknown" ? source : null;
      part.durationMs = m.meta?.duration_ms ?? null;
      part.truncated = Boolean(m.meta?.truncated);
      part.content = m.content;
      // Kept with the result, so a reloaded thread draws the same card (js/cards.js).
      part.structured = m.meta?.structured ?? null;
      if (m.meta?.arguments && !Object.keys(part.args).length) part.args = m.meta.arguments;
      if (m.meta?.confirmation) {
        // The user was asked before this call (a destructive remote tool): keep the answer.
        part.confirm = { ...part.confirm, server: m.meta.source, decision: m.meta.confirmation };
      }
      return;
    }
    // assistant
    if (m.content) turn.parts.push({ type: "text", key: m.id, text: m.content });
    for (const call of m.tool_calls || []) {
      if (!this.tool(turn, call.id)) {
        turn.parts.push({ type: "tool", callId: call.id, name: call.name, args: parseArgs(call.arguments), status: "running" });
      }
    }
    const reason = m.finish_reason;
    if (ANSWERED.has(reason)) {
      turn.state = "done";
      turn.error = null;
    } else if (reason === "cancelled") {
      turn.state = "cancelled";
    } else if (reason === "error") {
      turn.state = "error";
      const endedBy = m.meta?.ended_by;
      turn.error =
        endedBy === "restart"
          ? { code: "interrupted", message: RESTART_NOTE, retryable: true }
          : endedBy === "storage"
            ? { code: "storage_unavailable", message: STORAGE_NOTE, retryable: true }
            : turnError(m.meta?.error);
    } else if (turn.state === "loading") {
      turn.state = "partial";
    }
    turn.finishReason = reason;
  }

  /** Regenerating: the answer on screen becomes the newest previous version. */
  keepAsVersion(turn) {
    const { parts, state, error, finishReason } = turn;
    turn.versions = [...(turn.versions || []).filter(Boolean), { id: `${turn.id}#${(turn.versions || []).length + 1}`, parts, state, error, finishReason }];
    turn.parts = [];
    turn.showing = null;
    turn.feedback = null;
    turn.state = "pending";
    turn.error = null;
    turn.lastSeq = 0;
  }

  /** Edit and resend: this turn and every later one go (the server deletes them too). */
  removeFrom(turnId) {
    let found = false;
    for (const id of [...this.turns.keys()]) {
      if (id === turnId) found = true;
      if (found) this.turns.delete(id);
    }
  }

  get lastTurn() {
    return [...this.turns.values()].pop() || null;
  }

  /** A question typed here, before the server has acknowledged it. */
  addPending(turnId, text) {
    const turn = this.turn(turnId);
    turn.user = { text, pending: true };
    turn.state = "pending";
    turn.error = null;
    return turn;
  }

  /** Apply a server frame of this thread; returns the turn it changed, if any. */
  applyFrame(frame) {
    // Turn frames are numbered per run. A start frame begins the run again (a retry, or
    // the replay of a resumed turn), so it rebuilds the turn's parts from the frames that
    // follow; a frame at or below the last applied number was already applied.
    if (frame.turn_id && typeof frame.seq === "number" && frame.seq > 0) {
      const turn = this.turn(frame.turn_id);
      if (frame.type === "start") {
        if (frame.seq === 1) turn.parts = [];
      } else if (frame.seq <= (turn.lastSeq || 0)) {
        return null;
      }
      turn.lastSeq = frame.seq;
    }
    switch (frame.type) {
      case "ack": {
        const turn = this.turns.get(frame.message_id);
        if (turn && turn.user) turn.user.pending = false;
        return turn || null;
      }
      case "start": {
        const turn = this.turn(frame.turn_id);
        if (turn.user) turn.user.pending = false;
        turn.state = "running";
        turn.error = null;
        turn.seenStart = true;
        turn.run = (turn.run || 0) + 1;
        return turn;
      }
      case "text_delta": {
        const turn = this.turn(frame.turn_id);
        const key = `live:${turn.run || 0}:${frame.step}`;
        let part = turn.parts.find((p) => p.type === "text" && p.key === key);
        if (!part) {
          part = { type: "text", key, text: "" };
          turn.parts.push(part);
        }
        part.text += frame.delta;
        if (turn.state !== "running") turn.state = "running";
        return turn;
      }
      case "tool_call": {
        const turn = this.turn(frame.turn_id);
        if (!this.tool(turn, frame.call_id)) {
          turn.parts.push({ type: "tool", callId: frame.call_id, name: frame.name, server: frame.server || null, args: frame.arguments || {}, status: "running", startedAt: Date.now() });
        }
        return turn;
      }
      case "confirm_tool": {
        // A destructive remote tool waits for the user's yes or no (tool_decision settles it).
        const turn = this.turn(frame.turn_id);
        let part = this.tool(turn, frame.call_id);
        if (!part) {
          part = { type: "tool", callId: frame.call_id, name: frame.tool, args: {}, status: "running" };
          turn.parts.push(part);
        }
        part.confirm = {
          server: frame.server,
          arguments: frame.arguments,
          cut: Boolean(frame.arguments_cut),
          timeoutSeconds: frame.timeout_seconds,
          decision: part.confirm?.decision || null,
          sent: part.confirm?.sent ?? null,
        };
        return turn;
      }
      case "tool_decision": {
        const turn = this.turn(frame.turn_id);
        const part = this.tool(turn, frame.call_id);
        if (!part) return null;
        part.confirm = { ...part.confirm, decision: frame.decision };
        return turn;
      }
      case "tool_progress": {
        const turn = this.turn(frame.turn_id);
        const part = this.tool(turn, frame.call_id);
        if (!part || part.status !== "running") return null;
        part.progress = { done: frame.progress, total: frame.total ?? null, message: frame.message || "" };
        return turn;
      }
      case "tool_result": {
        const turn = this.turn(frame.turn_id);
        let part = this.tool(turn, frame.call_id);
        if (!part) {
          part = { type: "tool", callId: frame.call_id, name: frame.name, args: {} };
          turn.parts.push(part);
        }
        part.status = frame.ok ? "ok" : "error";
        part.server = frame.server || part.server || null;
        part.durationMs = frame.duration_ms;
        part.truncated = frame.truncated;
        part.content = frame.content;
        part.structured = frame.structured ?? null;
        return turn;
      }
      case "done": {
        const turn = this.turn(frame.turn_id);
        turn.finishReason = frame.finish_reason;
        if (ANSWERED.has(frame.finish_reason)) turn.state = "done";
        else if (frame.finish_reason === "cancelled") turn.state = "cancelled";
        else turn.state = "error";
        if (turn.state === "error" && !turn.error) {
          turn.error = { ...UNFINISHED };
        }
        return turn;
      }
      case "turn_interrupted": {
        // A restart of the server cut this turn off: nothing more of it will come.
        const turn = this.turn(frame.turn_id);
        turn.state = "error";
        turn.finishReason = "error";
        turn.error = { code: "interrupted", message: frame.message || RESTART_NOTE, retryable: frame.retryable !== false };
        return turn;
      }
      case "error": {
        if (!frame.turn_id) return null;
        const turn = this.turn(frame.turn_id);
        turn.state = "error";
        turn.error = turnError(frame); // its detail shown folded under the message
        return turn;
      }
      default:
        return null;
    }
  }

  /** True while a turn of this thread is waiting for or receiving an answer. */
  get busy() {
    for (const turn of this.turns.values()) {
      if (turn.state === "running" || turn.state === "pending") return true;
    }
    return false;
  }

  get runningTurn() {
    for (const turn of this.turns.values()) if (turn.state === "running") return turn;
    return null;
  }
}
