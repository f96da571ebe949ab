// The worker's view of the tabs: where each comment message came from (so scores and rating
// acknowledgements go back to that tab and frame), the status every observing frame reported
// (for the popup), and broadcasts to the extension's own pages.
//
// Statuses are kept in storage.session as well as in memory: Chromium stops an idle worker and
// its memory goes with it, while a page reports its status only when the status changes, so a
// page that found its comments before the stop would otherwise be missing from the popup until
// its next comment. storage.session lasts as long as the browser session, like the tabs.
(function (ns) {
  const STORE_KEY = "pageStatuses";
  const store = chrome.storage.session || null; // absent on browsers without it: memory only
  const statuses = new Map(); // tabId -> Map(frameId -> page status)
  let saving = Promise.resolve();

  function snapshot() {
    const out = {};
    for (const [tabId, frames] of statuses) out[tabId] = Object.fromEntries(frames);
    return out;
  }

  function save() {
    if (!store) return saving;
    // chained, so that writes land in the order the statuses came in
    saving = saving.then(() => store.set({ [STORE_KEY]: snapshot() })).catch((err) => console.warn("modlens: saving page statuses", String(err)));
    return saving;
  }

  const tabs = {
    /** Statuses saved before the worker last stopped. A tab closed meanwhile woke the worker with
     * its onRemoved event, handled after this load (background.js): no stale tab stays. */
    async load() {
      if (!store) return;
      const saved = (await store.get(STORE_KEY))[STORE_KEY] || {};
      for (const [tabId, frames] of Object.entries(saved)) {
        statuses.set(Number(tabId), new Map(Object.entries(frames).map(([frameId, s]) => [Number(frameId), s])));
      }
    },

    /** The route of a message from a content script (or -1 for extension pages: calibration). */
    routeFrom(sender, platform) {
      return { tabId: sender.tab ? sender.tab.id : -1, frameId: sender.frameId || 0, platform };
    },

    send(route, message) {
      if (route.tabId == null || route.tabId < 0) return;
      chrome.tabs.sendMessage(route.tabId, message, { frameId: route.frameId || 0 }).catch(() => {});
    },

    broadcast(message) {
      chrome.runtime.sendMessage(message).catch(() => {}); // popup / options, when open
    },

    configChanged() {
      for (const tabId of statuses.keys()) chrome.tabs.sendMessage(tabId, ns.messages.configChanged()).catch(() => {});
    },

    setStatus(sender, status) {
      const { tabId, frameId } = this.routeFrom(sender);
      if (!statuses.has(tabId)) statuses.set(tabId, new Map());
      statuses.get(tabId).set(frameId, { ...status, frameId });
      return save();
    },

    /** The popup asks for its tab; without a tab id (tests, options) every observed frame is listed. */
    statuses(tabId) {
      if (tabId != null) return [...(statuses.get(tabId) || new Map()).values()];
      return [...statuses.entries()].flatMap(([id, frames]) => [...frames.values()].map((f) => ({ ...f, tabId: id })));
    },

    forget(tabId) {
      if (statuses.delete(tabId)) save();
    },
  };

  ns.tabs = tabs;
})(globalThis.modlens);
