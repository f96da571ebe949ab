// One global namespace shared by the classic scripts of each context (worker, content, pages).
// Also loadable from node tests via require(), which is why nothing here touches `chrome`.
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  ns.VERSION = "0.1.0";

  ns.DEFAULT_SETTINGS = {
    daemonUrl: "ws://127.0.0.1:8765/ws",
    token: "",
    raterId: "",
    paused: false,
    sites: {}, // one switch per row of the sites table, all on (lib/sites.js fills it)
    display: "study", // "study" | "blind" | "scores"
    customSelectors: [], // [{host, comment, text, author, key}]
  };

  // Text exactly as the adapters report it: innerText with whitespace runs collapsed.
  ns.cleanText = function cleanText(s) {
    return String(s == null ? "" : s).replace(/\s+/g, " ").trim();
  };

  ns.newId = function newId(prefix) {
    const rnd = root.crypto && root.crypto.randomUUID ? root.crypto.randomUUID() : Math.random().toString(36).slice(2) + Date.now().toString(36);
    return prefix ? `${prefix}-${rnd}` : rnd;
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
