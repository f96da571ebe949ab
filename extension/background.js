// The service worker (Chromium) / background script (Firefox): wiring only. The parts live in
// lib/ (shared with pages and content scripts) and worker/ (this context only); the Firefox
// `background.scripts` list in manifest.json names the same files in the same order.
/* global importScripts */
if (typeof importScripts === "function") {
  importScripts("lib/ns.js", "lib/constants.js", "lib/messages.js", "lib/router.js", "lib/hash.js", "lib/sampling.js",
    "lib/tasks.js", "lib/outbox.js", "lib/site_access.js", "worker/config.js", "worker/counters.js", "worker/tabs.js",
    "worker/connection.js", "worker/delivery.js", "worker/daemon_messages.js", "worker/page_messages.js");
}
(function (ns) {
  const { config, connection, counters, delivery, tabs } = ns;

  // Stored state, loaded once per worker start; every event handler waits for it.
  let loaded = null;
  const ready = () => (loaded = loaded || Promise.all([config.load(), counters.load(), delivery.outbox.load()]));

  connection.onMessage = ns.onDaemonMessage;
  connection.onStatus = () => tabs.broadcast(ns.messages.state(ns.publicState()));
  connection.onNewSocket = () => delivery.newSocket();
  connection.onTick = () => delivery.flush(false);

  // Listeners are added synchronously at start: an event that woke the worker must find them.
  chrome.runtime.onMessage.addListener((msg, sender, respond) => {
    ready().then(() => ns.onPageMessage(msg, sender))
      .then(respond, (err) => respond({ error: String((err && err.message) || err) }));
    return true; // async response
  });
  chrome.tabs.onRemoved.addListener((tabId) => tabs.forget(tabId));
  // A stopped worker wakes on any event; the alarm makes sure a pending outbox is retried.
  if (chrome.alarms) {
    chrome.alarms.create(ns.WAKE_ALARM, { periodInMinutes: ns.WAKE_MINUTES });
    chrome.alarms.onAlarm.addListener(() => ready().then(() => connection.ensure()));
  }
  chrome.runtime.onInstalled.addListener((details) => {
    ready().then(() => {
      if (details.reason === "install" && !config.consented()) chrome.runtime.openOptionsPage().catch(() => {});
    });
  });
  ns.siteAccess.start();
  ready().then(() => connection.ensure());
})(globalThis.modlens);
