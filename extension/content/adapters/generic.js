// Sites without an adapter: selectors the user defined on the options page, one entry per host
// ({host, comment, text, author?, key?}; `key` names an attribute holding a stable id, else the
// key is a hash of page key + text: lib/hash.js derivedCommentKey, never the author).
// Frames: the options key an entry by the article's host (the site the participant enabled), so
// inside an iframe (a comment widget embedded in the article, same-origin or about:blank/srcdoc)
// the entry, the page key and the page URL come from the top-level page the worker names
// (`settings.top`), never from the frame's own host.
(function (ns) {
  const hostMatches = (host, c) => c.host === "*" || host === c.host || host.endsWith("." + c.host);
  const entryFor = (host, settings) =>
    ((settings && settings.customSelectors) || []).find((c) => c && c.comment && hostMatches(host, c));
  let entry = null;
  let top = null; // the top-level page's URL, when this document is a frame

  function topUrl(settings) {
    if (!ns.inFrame) return null;
    const url = settings && settings.top && settings.top.url;
    return url ? new URL(url) : null;
  }

  // The article this document belongs to: its canonical URL (the top document's, when a frame
  // can read it), else its URL.
  function articleUrl(loc, doc) {
    let d = doc;
    if (top) {
      try { d = window.top.document; } catch (_) { d = null; } // cross-origin top: its URL only
    }
    const base = top ? top.href : loc.href;
    const c = d && d.querySelector('link[rel="canonical"]');
    return new URL((c && c.getAttribute("href")) || base, base);
  }

  ns.defineAdapter({
    name: "generic",
    platform: "generic",
    matches(loc, settings) {
      top = topUrl(settings);
      if (ns.inFrame && !top) { entry = null; return false; } // a frame of a page we do not know
      entry = entryFor((top || loc).hostname, settings) || null;
      return !!entry;
    },
    pageKey: (loc, doc) => {
      const url = articleUrl(loc, doc);
      return url.host + url.pathname;
    },
    pageUrl: (loc, doc) => (top ? articleUrl(loc, doc).href : loc.href),
    pageTitle: (doc) => {
      if (!top) return doc.title;
      try { return window.top.document.title; } catch (_) { return doc.title; }
    },
    get comments() { return entry ? entry.comment : ":not(*)"; },
    fields: {
      key: [
        { via: "key attribute", find: (el) => (entry.key && el.getAttribute(entry.key)) || null },
        // last resort: a hash of page key + text (the text the comment is logged with)
        { via: "hash", derived: true, find: (el, ctx) => {
          const text = ns.textOf(entry.text ? el.querySelector(entry.text) : el);
          return text ? ns.derivedCommentKey("g", "generic", [ctx.page && ctx.page.page_key, text]) : null;
        } },
      ],
      text: [{ via: "text selector", find: (el) => (entry.text ? el.querySelector(entry.text) : el) }],
      author: [{ via: "author selector", find: (el) => (entry.author ? el.querySelector(entry.author) : null) }],
      // no reply structure is known for a custom site: every comment is top-level
    },
  });
})(globalThis.modlens);
// Tested on: fixture pages only (tests/fixtures/sites/generic, generic-iframe; selectors set
// through the options, keyed by the article's host also for the comments inside an iframe).
