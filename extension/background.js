// The service worker (Chromium) / background script (Firefox): wiring only. The parts live in
// lib/ (shared with pages and content scripts) and worker/ (this context only); the Firefox
// `background.scripts` list in manifest.json names the same files in the same order.
/* global importScripts */
if (typeof importScripts === "function") {
  importScripts("lib/ns.js", "lib/constants.js", "lib/sites.js", "lib/messages.js", "lib/protocol.js", "lib/router.js", "lib/hash.js", "lib/sampling.js",
    "lib/tasks.js", "lib/outbox.js", "lib/site_access.js", "worker/config.js", "worker/counters.js", "worker/tabs.js",
    "worker/connection.js", "worker/delivery.js", "lib/media.js", "worker/media.js", "worker/daemon_messages.js",
    "worker/page_messages.js");
}
(function (ns) {
  const { config, connection, counters, delivery, tabs } = ns;

  // Stored state, loaded once per worker start; every event handler waits for it.
  let loaded = null;
  // Storage is read whole once, for the outbox and the counters (which mark the ratings not
  // acknowledged yet from the outbox's entries: loaded after it).
  async function loadStored() {
    const all = await chrome.storage.local.get(null);
    await delivery.outbox.load(all);
    await counters.load(all, delivery.outbox);
  }
  const ready = () => (loaded = loaded || Promise.all([config.load(), loadStored(), tabs.load()]));

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
  chrome.tabs.onRemoved.addListener((tabId) => ready().then(() => tabs.forget(tabId)));
  // A stopped worker wakes on any event; the alarm makes sure a pending outbox is retried.
  if (chrome.alarms) {
    chrome.alarms.create(ns.WAKE_ALARM, { periodInMinutes: ns.WAKE_MINUTES });
    chrome.alarms.onAlarm.addListener(() => ready().then(() => connection.ensure()));
  }
  // The page a browser start shows, once per browser session: the consent text until the
  // participant agreed (after an install, or when `modlens browse` asked for a start page), then
  // the study's task list (`modlens browse` without a URL writes start: "tasks" into seed.json).
  let startPage = Promise.resolve();
  async function openStartPage(install) {
    const session = chrome.storage.session;
    if (session && (await session.get("startPageShown")).startPageShown) return;
    const seed = config.seedFile; // read by config.load(): this runs after ready()
    const toTasks = !!seed && seed.start === "tasks";
    if (!install && !toTasks) return;
    if (session) await session.set({ startPageShown: true });
    if (!config.consented()) return openPage("options.html");
    if (toTasks && config.study && (config.study.tasks || []).length) return openPage("tasks.html");
  }
  // A tab in the open window, or a window of its own when the browser is just starting.
  async function openPage(page) {
    const url = chrome.runtime.getURL(page);
    try {
      if ((await chrome.windows.getAll()).length) await chrome.tabs.create({ url });
      else await chrome.windows.create({ url });
    } catch (err) {
      console.error("modlens: could not open", page, String(err));
    }
  }
  const startPageOnce = (install) => (startPage = startPage.then(() => ready()).then(() => openStartPage(install))
    .catch((err) => console.error("modlens: start page", err)));
  chrome.runtime.onInstalled.addListener((details) => { startPageOnce(details.reason === "install"); });
  ns.siteAccess.start();
  ready().then(() => connection.ensure());
  startPageOnce(false);
})(globalThis.modlens);
