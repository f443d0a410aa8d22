// localStorage that never throws. A framed chat may be refused storage (a browser that
// blocks storage for third-party frames throws on every access), and the chat must still
// start: then what it keeps lives in memory for the life of the page.

const memory = new Map();

function area() {
  try {
    return globalThis.localStorage || null;
  } catch (e) {
    return null;
  }
}

export const store = {
  get(key) {
    try {
      const storage = area();
      if (storage) return storage.getItem(key);
    } catch (e) {
      // Refused: the page's own copy below.
    }
    return memory.has(key) ? memory.get(key) : null;
  },
  set(key, value) {
    memory.set(key, String(value));
    try {
      area()?.setItem(key, String(value));
    } catch (e) {
      // Refused or full: kept in memory only.
    }
  },
  remove(key) {
    memory.delete(key);
    try {
      area()?.removeItem(key);
    } catch (e) {
      // Refused: nothing stored there to remove.
    }
  },
};
