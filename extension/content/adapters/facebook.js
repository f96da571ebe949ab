// Facebook comments plugin: the cross-origin iframe a news site embeds for its comments
// (`https://www.facebook.com/v<NN>/plugins/comments.php?…&href=<article URL>`, older pages without
// the version). This adapter runs INSIDE that frame (manifest: all_frames) and, like every frame
// adapter but Disqus, captures only while the top-level page's site is switched on (main.js).
// The page is the article the plugin is for: the frame URL's `href` parameter.
//
// Facebook ships obfuscated, changing class names, so every field is found by an ordered list of
// strategies, each searched within the comment's OWN subtree (a query that skips the nested
// replies), stable attributes first, class names of the two known generations after, and a
// documented last resort:
//   comment  role="article" with a "Comment by" / "Reply by" label (current), div._3-8y (2017+),
//            .UFIComment (UFI, up to ~2019); where a labelled wrapper holds a _3-8y block, both
//            match: the wrapper has no key or text of its own and is not counted (observer.js)
//   key      the comment's permalink: `fb_comment_id=` (plugin links to the article),
//            `reply_comment_id=` / `comment_id=` (links to facebook.com), else a data-commentid /
//            data-ft "ct" attribute; none: the comment is skipped (counted), never hashed
//   text     span._5mdd, .UFICommentBody, [data-testid="comment-body"]; last resort: the first
//            own element with dir="auto"
//   author   a._6qw4, .UFICommentActorName, [data-testid="comment-author"]; last resort: the
//            name in the comment's accessible label ("Comment by NAME", "Reply by NAME to …")
//   parent   the comment owning the reply list the reply sits in (nested inside it, current; or
//            the list's previous sibling, UFI; parent_via "structure"), else the `comment_id` of a
//            reply's own permalink ("key_prefix"); a reply with neither: "unknown", counted
//   time     abbr[data-utime] (Unix seconds), else a dated `title`
(function (ns) {
  const COMMENT = '[role="article"][aria-label^="Comment by"], [role="article"][aria-label^="Reply by"], div._3-8y, .UFIComment';
  const REPLY_LIST = "._44ri, .UFIReplyList, [data-testid='replies-list']";
  let top = null;

  function param(href, name) {
    const v = ns.urlParam(href, name, location.href);
    return v && /^[\w.-]+$/.test(v) ? v : null;
  }

  // the comment id some generations put in data-ft ({"ct": id}); not JSON: none
  function ftId(el) {
    try {
      const ft = JSON.parse(el.getAttribute("data-ft") || "{}");
      return ft && ft.ct ? String(ft.ct) : null;
    } catch (_) {
      return null;
    }
  }

  // The comment a reply answers: the owner of the reply list holding it.
  function structuralParent(el) {
    const list = el.parentElement && el.parentElement.closest(REPLY_LIST);
    if (!list) return null;
    const nested = list.closest(COMMENT);
    if (nested && nested !== el) return nested;
    for (let sib = list.previousElementSibling; sib; sib = sib.previousElementSibling) {
      const owner = sib.matches(COMMENT) ? sib : sib.querySelector(COMMENT);
      if (owner) return owner;
    }
    return null;
  }

  const LABEL = /^(?:Comment|Reply) by (.+?)(?: to .+)?$/;
  const href = (a) => a.getAttribute("href");
  const isReply = (el) => /^Reply by /.test(el.getAttribute("aria-label") || "") || !!(el.parentElement && el.parentElement.closest(REPLY_LIST));

  ns.defineAdapter({
    name: "facebook",
    platform: "facebook",
    matches(loc, settings) {
      top = (settings && settings.top) || null;
      return loc.hostname === "www.facebook.com" && /^\/(?:v[\d.]+\/)?plugins\/comments\.php$/.test(loc.pathname);
    },
    pageKey: (loc) => {
      const article = ns.urlParam(loc.href, "href");
      if (!article) return null;
      const url = new URL(article);
      return url.host + url.pathname;
    },
    pageUrl: (loc) => ns.urlParam(loc.href, "href") || (top && top.url) || loc.href,
    pageTitle: () => "",
    comments: COMMENT,
    // Ordered strategies per field (observer.js); selectors are searched in the comment's own
    // subtree, never in a nested reply's. The last entry of each list is the last resort.
    fields: {
      key: [
        { via: "fb_comment_id", sel: 'a[href*="fb_comment_id="]', value: (a) => param(href(a), "fb_comment_id") },
        { via: "permalink", sel: 'a[href*="comment_id="]', value: (a) => param(href(a), "reply_comment_id") || param(href(a), "comment_id") },
        { via: "data_attribute", find: (el) => el.getAttribute("data-commentid") || el.getAttribute("data-comment-id") || ftId(el) },
      ],
      text: ["span._5mdd", ".UFICommentBody", '[data-testid="comment-body"]', { via: "dir_auto", sel: '[dir="auto"]' }],
      author: ["a._6qw4", ".UFICommentActorName", '[data-testid="comment-author"]',
        { via: "aria_label", find: (el) => ((el.getAttribute("aria-label") || "").match(LABEL) || [])[1] || null }],
      parent: [
        // the parent's key by this adapter's own key strategies (ctx.keyOf): the key it is logged with
        { via: "structure", find: (el, ctx) => ctx.keyOf(structuralParent(el)) },
        // a reply's facebook.com permalink names its parent: comment_id=<parent>&reply_comment_id=<reply>
        { via: "key_prefix", sel: 'a[href*="reply_comment_id="]', value: (a, el, ctx) => {
          const p = param(href(a), "comment_id");
          return p && p !== ctx.key ? p : null;
        } },
      ],
      time: [
        { via: "data_utime", sel: "abbr[data-utime]", value: (n) => {
          const secs = Number(n.getAttribute("data-utime"));
          return secs > 0 ? new Date(secs * 1000).toISOString() : null;
        } },
        { via: "title", sel: "abbr[title], [data-tooltip-content]", value: (n) => n.getAttribute("title") || n.getAttribute("data-tooltip-content") },
      ],
    },
    isReply,
    markerAnchor: (el) => ns.own(el, ["span._5mdd", ".UFICommentBody", '[data-testid="comment-body"]'], COMMENT),
    // a photo or GIF attached to the comment (current: the attachment block; UFI: .UFICommentAttachment)
    media: '[data-testid="comment-attachment"] img, ._2txe img, .UFICommentAttachment img',
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/facebook-plugin, facebook-plugin-legacy;
// reconstructed from public knowledge of the plugin, not captured):
//   https://www.facebook.com/v19.0/plugins/comments.php?app_id=<id>&href=<article URL>&…
//   https://www.facebook.com/plugins/comments.php?href=<article URL>&… (UFI generation)
