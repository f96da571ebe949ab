// YouTube: watch pages, Shorts, live; top-level comments and reply threads; the 2024+
// `ytd-comment-view-model` and the older `ytd-comment-renderer` generation (SITES.md).
(function (ns) {
  const LINK = '#published-time-text a[href*="lc="], a#published-time-text[href*="lc="], #header-author a[href*="lc="]';

  function lcOf(el) {
    const a = el.querySelector(LINK);
    return a ? ns.urlParam(a.getAttribute("href"), "lc") : null;
  }

  ns.defineAdapter({
    name: "youtube",
    platform: "youtube",
    matches: (loc) => /(^|\.)youtube\.com$/.test(loc.hostname),
    pageKey(loc) {
      if (loc.pathname === "/watch") return new URLSearchParams(loc.search).get("v");
      const m = loc.pathname.match(/^\/(?:shorts|live)\/([\w-]{6,})/);
      return m ? m[1] : null;
    },
    pageTitle: (doc) => doc.title.replace(/ - YouTube$/, ""),
    comments: "ytd-comment-view-model, ytd-comment-renderer",
    key: lcOf,
    text: ["#content-text", "yt-attributed-string#content-text", "yt-formatted-string#content-text"],
    author: ["#header-author #author-text", "#author-text", "ytd-author-comment-badge-renderer a#name", "#author-comment-badge a"],
    authorOf: (node) => ns.textOf(node) || (node.getAttribute("href") || "").replace(/^\//, ""),
    // Reply ids are "<parent>.<reply>"; fall back to the thread's top comment.
    parentKey(el, key) {
      if (key.includes(".")) return key.split(".")[0];
      if (!el.closest("ytd-comment-replies-renderer, #replies")) return null;
      const thread = el.closest("ytd-comment-thread-renderer");
      const top = thread && thread.querySelector("#comment");
      return top && top !== el ? lcOf(top) : null;
    },
    timeShown: (el) => ns.textOf(el.querySelector("#published-time-text")) || null,
    navigationEvents: ["yt-navigate-finish", "yt-page-data-updated"],
    markerAnchor: (el) => el.querySelector("#content-text"),
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/youtube-*):
//   https://www.youtube.com/watch?v=<id>   (new view-model and old renderer generations, replies)
//   https://www.youtube.com/shorts/<id>    (engagement panel comments)
