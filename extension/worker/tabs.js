// The worker's view of the tabs: where each comment message came from (so scores and rating
// acknowledgements go back to that tab and frame), the status every observing frame reported
// (for the popup), and broadcasts to the extension's own pages.
(function (ns) {
  const statuses = new Map(); // tabId -> Map(frameId -> page status)

  const tabs = {
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
    },

    /** The popup asks for its tab; without a tab id (tests, options) every observed frame is listed. */
    statuses(tabId) {
      if (tabId != null) return [...(statuses.get(tabId) || new Map()).values()];
      return [...statuses.entries()].flatMap(([id, frames]) => [...frames.values()].map((f) => ({ ...f, tabId: id })));
    },

    forget(tabId) {
      statuses.delete(tabId);
    },
  };

  ns.tabs = tabs;
})(globalThis.modlens);
