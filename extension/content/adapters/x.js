// X / Twitter reply threads. The list is virtualized (cells are emptied and reused), posts are
// not nested in the DOM: a reply's parent is the opened post of the thread.
(function (ns) {
  const STATUS = /^\/([^/]+)\/status\/(\d+)/;

  function statusId(el) {
    const time = el.querySelector("time[datetime]");
    const link = (time && time.closest("a[href*='/status/']")) || el.querySelector("a[href*='/status/']");
    const m = link && new URL(link.getAttribute("href"), location.href).pathname.match(STATUS);
    return m ? m[2] : null;
  }

  ns.defineAdapter({
    name: "x",
    platform: "x",
    matches: (loc) => /(^|\.)(x|twitter)\.com$/.test(loc.hostname),
    pageKey(loc) {
      const m = loc.pathname.match(STATUS);
      return m ? m[2] : null;
    },
    pageTitle: (doc) => doc.title.replace(/ \/ X$/, ""),
    comments: 'article[data-testid="tweet"]',
    key: statusId,
    // Cells after a heading cell ("Discover more") are recommendations, not replies.
    skip(el) {
      let cell = el.closest('[data-testid="cellInnerDiv"]');
      for (let i = 0; cell && i < 500; i++) {
        cell = cell.previousElementSibling;
        if (cell && cell.querySelector('h2[role="heading"], [role="heading"][aria-level="2"]')) return true;
      }
      return false;
    },
    text: '[data-testid="tweetText"]',
    author: '[data-testid="User-Name"] a[href^="/"]',
    authorOf: (node) => (node.getAttribute("href") || "").replace(/^\//, "").split("/")[0] || ns.textOf(node),
    parentKey: (el, key, page) => (page && key !== page.page_key ? page.page_key : null),
    timeShown: (el) => {
      const t = el.querySelector("time[datetime]");
      return t ? t.getAttribute("datetime") : null;
    },
    markerAnchor: (el) => el.querySelector('[data-testid="tweetText"]'),
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/x-*):
//   https://x.com/<handle>/status/<id>   (opened post, replies, virtualized cells, SPA to another post)
