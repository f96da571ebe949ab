// Which sites the content scripts run on. The built-in platforms (YouTube, X, the Disqus frame)
// are declared in the manifest and need no prompt. Any other site (a news page running OpenWeb,
// Coral, Viafoura or a custom selector) runs them only after the participant switched it on from
// the popup, which asks the browser for that origin (optional_host_permissions). The worker keeps
// one registered content script whose matches are exactly the granted extra origins: re-synced
// at start and whenever a permission is added or removed (popup, or the browser's own site-access
// controls), so registration and permission can never disagree for long.
(function (root) {
  const ns = (root.modlens = root.modlens || {});
  const SCRIPT_ID = "modlens-sites";

  // Match patterns of the manifest's static content scripts: the built-in platforms.
  function staticMatches() {
    return chrome.runtime.getManifest().content_scripts.flatMap((cs) => cs.matches);
  }

  // The same, as site patterns ("https://disqus.com/*"): permissions.getAll() reports granted
  // origins per site, whatever path the manifest named.
  function builtInOrigins() {
    return new Set(staticMatches().map(ns.sitePattern));
  }

  // The files of the manifest's main content script (the one carrying the generic adapter): one
  // list for static and registered scripts. Firefox reports them as absolute URLs.
  function contentScriptFiles() {
    const base = chrome.runtime.getURL("");
    const relative = (f) => (f.startsWith(base) ? f.slice(base.length) : f);
    const main = chrome.runtime.getManifest().content_scripts.find((cs) => cs.js.map(relative).includes("content/adapters/generic.js"));
    return main.js.map(relative);
  }

  // "https://www.foxnews.com/*" for a page URL or a match pattern; null where modlens cannot run
  // (chrome://, file:, the extension's own pages). Host only: Firefox's patterns take no port.
  ns.sitePattern = function sitePattern(urlOrPattern) {
    const m = /^(https?):\/\/([^/?#]+)/i.exec(String(urlOrPattern || ""));
    if (!m) return null;
    const host = m[2].replace(/^.*@/, "").replace(/:\d+$/, "").toLowerCase();
    return `${m[1].toLowerCase()}://${host}/*`;
  };

  async function grantedExtraOrigins() {
    const { origins = [] } = await chrome.permissions.getAll();
    // the image hosts the worker fetches comment attachments from are not sites to run on
    const builtIn = new Set([...builtInOrigins(), ...(ns.MEDIA_HOSTS || []).map(ns.sitePattern)]);
    return [...new Set(origins.map(ns.sitePattern))].filter((o) => o && !builtIn.has(o)).sort();
  }

  async function registerFor(origins) {
    const existing = await chrome.scripting.getRegisteredContentScripts({ ids: [SCRIPT_ID] });
    if (!origins.length) {
      if (existing.length) await chrome.scripting.unregisterContentScripts({ ids: [SCRIPT_ID] });
      return;
    }
    const script = {
      id: SCRIPT_ID, matches: origins, js: contentScriptFiles(), runAt: "document_idle", persistAcrossSessions: true,
      // a granted "all sites" must not run a second copy where a static script already runs
      excludeMatches: staticMatches(),
      // comment iframes: frames of a granted origin, and about:blank / srcdoc / blob: frames a
      // granted page writes its comment widget into (matched by their creator's origin); main.js
      // captures in a frame only while the top-level page's site is switched on
      allFrames: true, matchOriginAsFallback: true,
    };
    const put = (s) => (existing.length ? chrome.scripting.updateContentScripts([s]) : chrome.scripting.registerContentScripts([s]));
    try {
      await put(script);
    } catch (err) {
      // a browser that does not know matchOriginAsFallback still gets the frames of granted origins
      if (!/matchOriginAsFallback|match_origin_as_fallback/i.test(String(err && err.message))) throw err;
      delete script.matchOriginAsFallback;
      await put(script);
    }
  }

  // Registered scripts only reach pages loaded later: start capture in tabs already open on a
  // newly granted site (main.js starts once per frame, so a second injection is harmless).
  async function injectIntoOpenTabs(origins) {
    if (!origins.length) return;
    const tabs = await chrome.tabs.query({ url: origins });
    for (const tab of tabs) {
      chrome.scripting.executeScript({ target: { tabId: tab.id, allFrames: true }, files: contentScriptFiles() }).catch(() => {});
    }
  }

  // Calls are chained: an onAdded arriving during the start-up sync must not race it.
  let queue = Promise.resolve();
  function sync(added) {
    queue = queue.then(async () => {
      const origins = await grantedExtraOrigins();
      await registerFor(origins);
      if (added) await injectIntoOpenTabs(added.filter((o) => origins.includes(o)));
    }).catch((err) => console.error("modlens: site registration failed:", err));
    return queue;
  }

  ns.siteAccess = {
    builtInOrigins, grantedExtraOrigins,
    start() {
      chrome.permissions.onAdded.addListener((p) => sync(p.origins || []));
      chrome.permissions.onRemoved.addListener(() => sync());
      return sync();
    },
    synced: () => queue,
  };
})(globalThis);
