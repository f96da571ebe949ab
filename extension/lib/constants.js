// Constants shared by every part of the extension (worker, content scripts, pages, node tests).
// The wire protocol's values mirror the pydantic models (modlens.protocol), which define it;
// tests/test_extension_protocol.py checks them, and lib/protocol.js's messages, against those.
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  // ---- daemon protocol
  ns.PROTOCOL = 1; // PROTOCOL_VERSION
  ns.SUBPROTOCOL = "modlens.v1";
  ns.TOKEN_SUBPROTOCOL_PREFIX = "modlens.token."; // the pairing token travels as a subprotocol
  ns.CLIENT_NAME = "modlens-extension";
  ns.wsSubprotocols = (token) => [ns.SUBPROTOCOL, ns.TOKEN_SUBPROTOCOL_PREFIX + token];
  // The daemon listens on loopback only; any other address would carry the token and the comments
  // off the computer. The normalised ws:// URL on 127.0.0.0/8, localhost or [::1], else null
  // (the URL parser has already turned 127.1 or 0x7f000001 into 127.0.0.1).
  ns.loopbackDaemonUrl = (text) => {
    let url;
    try { url = new URL(String(text)); } catch (_) { return null; }
    if (url.protocol !== "ws:" || url.username || url.password || url.hash) return null;
    const host = url.hostname;
    const loopback = host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
    return loopback ? url.href : null;
  };
  ns.NOT_LOOPBACK = "The daemon address must be a ws:// URL on this computer (127.0.0.1, localhost or [::1]), e.g. ws://127.0.0.1:8765/ws";

  // ---- worker timing and sizes
  ns.KEEPALIVE_MS = 20000; // ping while open: an idle MV3 worker is stopped after ~30 s
  ns.SILENT_AFTER_MS = 45000; // nothing from the daemon this long (two pings unanswered): not connected
  ns.RESEND_AFTER_MS = 30000; // unacknowledged on an open socket this long: send again
  ns.BACKOFF_MIN_MS = 500;
  ns.BACKOFF_MAX_MS = 30000;
  ns.UNSENT_RETRY_MAX_MS = 30000; // content script: comments the worker did not take are tried again, backing off to this
  // For browser tests only: seed.json's `timings` ({NAME: ms}, written by tests/e2e/harness.py, never by
  // `modlens browse`) shortens these waits, so a test proves the 45 s silence rule in seconds. Only
  // these names, and only shorter than the default: nothing a participant's seed holds can slow a rule.
  ns.TUNABLE_TIMINGS = ["KEEPALIVE_MS", "SILENT_AFTER_MS", "BACKOFF_MAX_MS", "UNSENT_RETRY_MAX_MS"];
  ns.applyTimings = (timings) => {
    const applied = {};
    for (const name of ns.TUNABLE_TIMINGS) {
      const ms = timings && timings[name];
      if (Number.isFinite(ms) && ms > 0 && ms <= ns[name]) applied[name] = ns[name] = ms;
    }
    return applied;
  };
  ns.CHUNK_ITEMS = 50; // comments per message
  ns.WAKE_ALARM = "modlens-wake";
  ns.WAKE_MINUTES = 0.5;
  ns.JOIN_TIMEOUT_MS = 20000; // join_study: the daemon checks and writes the pack, then restarts
  ns.MAX_PACK_BYTES = 16 << 20; // the largest pack `modlens join` reads (study/pack.py PACK_MAX_BYTES)

  // ---- messages between the extension's parts (shapes: lib/messages.js)
  ns.MSG = {
    contentHello: "content_hello", comments: "comments", rate: "rate", pageStatus: "page_status", // content → worker
    getState: "get_state", setSettings: "set_settings", consent: "consent", reconnect: "reconnect", // pages → worker
    deadLetters: "dead_letters", joinStudy: "join_study",
    scores: "scores", ratingOk: "rating_ok", ratingRefused: "rating_refused", configChanged: "config_changed", // worker → content
    state: "state", counts: "counts", // worker → pages
  };

  // One comment, one key: "platform|key" (rated comments, calibration progress).
  ns.commentKey = (platform, key) => `${platform}|${key}`;

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
