// Viafoura (light DOM under vf-conversations). The DOM carries no comment id, so the key is a
// hash of page key + time shown + text (lib/hash.js derivedCommentKey, never the author):
// stable across reloads and re-renders of the same comment.
// Generations: `article.vf3-comment` (2023+) and the older `.vf-comment`; the live one puts the
// author in a username element under the comment header whose class changes between releases,
// while the comment's accessible label keeps saying "Comment by NAME".
(function (ns) {
  const COMMENT = "article.vf3-comment, .vf-comment";
  const TEXT = [".vf3-comment-content", ".vf3-comment__content", ".vf3-comment__body", ".vf-comment__content",
    ".vf-comment-content", ".vf-comment-body"];
  const AUTHOR = [".vf3-comment-header__author", ".vf3-comment-author", ".vf-comment-head__author", ".vf-comment-author",
    // the username element under the comment header, by the class names of later releases
    ".vf3-comment-header .vf-username", ".vf3-comment__header .vf-username", ".vf-username__name",
    '[class*="comment-header"] [class*="username"]', '[class*="comment__header"] [class*="username"]',
    '[class*="comment-head"] [class*="user-name"]', '[class*="comment__header"] [class*="user-name"]'];
  const TIME = ["time[datetime]", ".vf3-comment-header__time", ".vf-comment-head__time",
    // last resort: a dated tooltip
    "[title][class*='time']"];

  const own = (el, sel) => ns.own(el, sel, COMMENT);
  const byLabel = (el) => ns.labelName(el);
  // author strategies: known selectors first, the accessible label "Comment by NAME" last
  const AUTHOR_STRATEGIES = [...AUTHOR, { via: "aria-label", find: byLabel }];

  // The time the observer logs (time_shown, content/observer.js field()): the first TIME element
  // that reads as an instant, going on past one that says only "2h ago" to a dated tooltip.
  function timeOf(el) {
    for (const s of TIME) {
      const t = own(el, s);
      const at = t && ns.isoTime(t.getAttribute("datetime") || t.getAttribute("title") || ns.textOf(t));
      if (at) return at;
    }
    return null;
  }
  function textOf(el) {
    for (const s of TEXT) { const t = ns.textOf(own(el, s)); if (t) return t; }
    return "";
  }
  // The fields the comment is logged with: `page` the page's key (its container id: the same
  // words at the same minute on another article are another comment), the time shown as the
  // instant logged (a relative label such as "2h ago" changes between reloads: left out), the text.
  // Identical comments (same page, time and text) share it: the observer numbers them (derived).
  function keyOf(el, page) {
    const text = textOf(el);
    if (!text) return null;
    return ns.derivedCommentKey("vf", "viafoura", [page && page.page_key, timeOf(el), text]);
  }

  ns.defineAdapter({
    name: "viafoura",
    platform: "viafoura",
    matches: (loc, settings, doc) => !!(doc && doc.querySelector("vf-conversations, .viafoura")),
    pageKey: (loc, doc) => {
      const m = doc.querySelector('meta[name="vf:container_id"]');
      if (m && m.content) return m.content;
      const c = doc.querySelector("vf-conversations[vf-container-id]");
      if (c) return c.getAttribute("vf-container-id");
      return loc.origin + loc.pathname;
    },
    comments: COMMENT,
    fields: {
      // data-* id when a release carries one; else (today) the hash of page key + time + text
      key: [{ via: "data-id", find: (el) => el.getAttribute("data-id") || el.getAttribute("data-comment-id") },
        { via: "hash", derived: true, find: (el, ctx) => keyOf(el, ctx.page) }],
      text: TEXT,
      author: AUTHOR_STRATEGIES,
      parent: [{ via: "structure", find: (el, ctx) => { const p = el.parentElement && el.parentElement.closest(COMMENT); return p ? ctx.keyOf(p) : null; } }],
      time: TIME,
    },
    isReply: (el) => !!el.closest(".vf3-replies, .vf-comment__replies, .vf3-comment__replies"),
    markerAnchor: (el) => TEXT.map((s) => own(el, s)).find(Boolean) || null,
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/viafoura, viafoura-live):
//   https://apnews.com/article/<slug>
