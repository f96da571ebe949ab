// YouTube: watch pages, Shorts, live; top-level comments and reply threads; the 2024+
// `ytd-comment-view-model` and the older `ytd-comment-renderer` generation (docs/SITES.md).
(function (ns) {
  const LINK = '#published-time-text a[href*="lc="], a#published-time-text[href*="lc="], #header-author a[href*="lc="]';

  const COMMENT = "ytd-comment-view-model, ytd-comment-renderer";
  const authorText = (node) => ns.textOf(node) || (node.getAttribute("href") || "").replace(/^\//, "");

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
    // The video's address and nothing else: other watch parameters may name its channel
    // (`ab_channel=<name>` on some links), a playlist or a time; Shorts and live keep their path.
    pageUrl(loc) {
      if (loc.pathname === "/watch") {
        const v = new URLSearchParams(loc.search).get("v");
        return v ? `https://www.youtube.com/watch?v=${encodeURIComponent(v)}` : null;
      }
      const m = loc.pathname.match(/^\/(shorts|live)\/([\w-]{6,})/);
      return m ? `https://www.youtube.com/${m[1]}/${m[2]}` : null;
    },
    pageTitle: (doc) => doc.title.replace(/ - YouTube$/, ""),
    comments: COMMENT,
    fields: {
      key: [{ via: "lc link", find: lcOf },
        // last resort: any link of the comment's own header whose target carries lc=
        { via: "lc in any link", find: (el) => { const a = ns.own(el, 'a[href*="lc="]', COMMENT); return a ? ns.urlParam(a.getAttribute("href"), "lc") : null; } }],
      text: ["#content-text", "yt-attributed-string#content-text", "yt-formatted-string#content-text", "#content #content-text"],
      author: [
        { via: "author-text", sel: "#header-author #author-text", value: authorText },
        { via: "author-text", sel: "#author-text", value: authorText },
        { via: "owner badge", sel: "ytd-author-comment-badge-renderer a#name", value: authorText },
        { via: "owner badge", sel: "#author-comment-badge a", value: authorText },
        // last resort: the channel link target of the author's thumbnail ("/@handle")
        { via: "thumbnail link", sel: '#author-thumbnail a[href^="/@"], a#author-thumbnail-button[href^="/@"]', value: (n) => (n.getAttribute("href") || "").replace(/^\//, "") },
      ],
      parent: [
        // reply ids are "<parent>.<reply>"
        { via: "key_prefix", find: (el, ctx) => (ctx.key.includes(".") ? ctx.key.split(".")[0] : null) },
        // else the thread's top comment, for a comment inside the replies section
        { via: "structure", find: (el) => {
          if (!el.closest("ytd-comment-replies-renderer, #replies")) return null;
          const thread = el.closest("ytd-comment-thread-renderer");
          const top = thread && thread.querySelector("#comment");
          return top && top !== el ? lcOf(top) : null;
        } },
      ],
      // YouTube shows relative times only ("2 days ago"): an absolute one is taken when present
      time: [{ via: "published-time-text", find: (el) => ns.textOf(el.querySelector("#published-time-text")) || null },
        { via: "tooltip", sel: "#published-time-text[title], #published-time-text a[title]", value: (n) => n.getAttribute("title") }],
    },
    isReply: (el) => !!el.closest("ytd-comment-replies-renderer, #replies"),
    navigationEvents: ["yt-navigate-finish", "yt-page-data-updated"],
    markerAnchor: (el) => el.querySelector("#content-text"),
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/youtube-watch, youtube-watch-legacy, youtube-shorts):
//   https://www.youtube.com/watch?v=<id>   (new view-model and old renderer generations, replies)
//   https://www.youtube.com/shorts/<id>    (engagement panel comments)
//   page row: the video's address only (no `ab_channel=<channel name>`, list or time), the video title
//   kept (it names the video, not a comment author): extension/test/sites.test.mjs
