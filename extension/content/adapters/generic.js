// Sites without an adapter: selectors the user defined on the options page, one entry per host
// ({host, comment, text, author?, key?}; `key` names an attribute holding a stable id, else the
// key is a hash of author + text).
(function (ns) {
  const entryFor = (loc, settings) =>
    ((settings && settings.customSelectors) || []).find((c) => c && c.comment && (c.host === "*" || loc.hostname === c.host || loc.hostname.endsWith("." + c.host)));
  let entry = null;

  ns.defineAdapter({
    name: "generic",
    platform: "generic",
    matches(loc, settings) {
      entry = entryFor(loc, settings) || null;
      return !!entry;
    },
    pageKey: (loc, doc) => {
      const c = doc.querySelector('link[rel="canonical"]');
      const url = new URL((c && c.getAttribute("href")) || loc.href, loc.href);
      return url.host + url.pathname;
    },
    get comments() { return entry ? entry.comment : ":not(*)"; },
    key(el) {
      if (entry.key && el.getAttribute(entry.key)) return el.getAttribute(entry.key);
      const text = ns.textOf(entry.text ? el.querySelector(entry.text) : el);
      const author = entry.author ? ns.textOf(el.querySelector(entry.author)) : "";
      return text ? "g-" + ns.unitHash("generic", author, text).toString(36).slice(2, 12) : null;
    },
    text: (el) => (entry.text ? el.querySelector(entry.text) : el),
    author: (el) => (entry.author ? el.querySelector(entry.author) : null),
    parentKey: () => null,
  });
})(globalThis.modlens);
// Tested on: fixture pages only (tests/fixtures/sites/generic-*, selectors set through the options).
