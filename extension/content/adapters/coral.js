// Coral Talk: open shadow root on #coral-shadow-container (no iframe since 2022). Replies live
// in a list whose id names the parent comment (a sibling of the parent, not inside it). Past the
// maximum indent Coral stops nesting and flattens deeper replies into the deepest list, each with
// "In reply to NAME": that label is used to check the structural parent, and where it names
// another author the nearest earlier comment by NAME is the parent (parent_via
// "in_reply_to_label"); a label that names nobody on the page keeps the structural parent and
// says so (parent_via "structure_mismatch").
(function (ns) {
  const REPLY_LIST = '[id^="coral-comments-replyList-log--"]';
  const COMMENT = 'div.coral-comment[id^="comment-"]';
  const USERNAME = [".coral-comment-username", ".coral-username"];
  const IN_REPLY_TO = ".coral-comment-inReplyTo-username, .coral-inReplyTo-username";

  const own = (el, sel) => ns.own(el, sel, COMMENT);
  const keyOf = (el) => (el.id && el.id.startsWith("comment-") ? el.id.slice("comment-".length) : null);
  function usernameOf(el) {
    for (const s of USERNAME) { const t = ns.textOf(own(el, s)); if (t) return t; }
    return ns.labelName(el);
  }
  function inReplyTo(el) {
    const n = own(el, IN_REPLY_TO);
    if (n) return ns.textOf(n);
    const label = own(el, ".coral-comment-inReplyTo");
    const m = label && ns.textOf(label).match(/^In reply to\s+(.+)$/i);
    return m ? ns.cleanText(m[1]) : null;
  }
  /** The nearest comment before `el` (document order, same shadow root) whose author is `name`. */
  function earlierBy(el, name) {
    const all = [...el.getRootNode().querySelectorAll(COMMENT)];
    for (let i = all.indexOf(el) - 1; i >= 0; i--) if (usernameOf(all[i]) === name) return all[i];
    return null;
  }

  function parentOf(el) {
    const list = el.closest(REPLY_LIST);
    const structural = list ? list.id.slice("coral-comments-replyList-log--".length) : null;
    const named = inReplyTo(el);
    if (!named) return structural ? { key: structural, via: "structure" } : null;
    const parentEl = structural && el.getRootNode().getElementById && el.getRootNode().getElementById("comment-" + structural);
    if (parentEl && usernameOf(parentEl) === named) return { key: structural, via: "structure" };
    const byName = earlierBy(el, named);
    if (byName) return { key: keyOf(byName), via: "in_reply_to_label" };
    return structural ? { key: structural, via: "structure_mismatch" } : null;
  }

  ns.defineAdapter({
    name: "coral",
    platform: "coral",
    matches: (loc, settings, doc) => !!(doc && doc.querySelector("#coral-shadow-container, #coral_thread")),
    pageKey: (loc, doc) => {
      const c = doc.querySelector('link[rel="canonical"]');
      const url = new URL((c && c.getAttribute("href")) || loc.href, loc.href);
      return url.origin + url.pathname;
    },
    shadowHosts: "#coral-shadow-container, #coral_thread, #coral_thread *",
    comments: COMMENT,
    fields: {
      key: [{ via: "id", find: keyOf },
        // last resort: the permalink's target (?commentID=<id>)
        { via: "permalink", find: (el) => { const a = own(el, 'a[href*="commentID="]'); return a ? ns.urlParam(a.getAttribute("href"), "commentID") : null; } }],
      text: [".coral-comment-content", ".coral-content"],
      author: [...USERNAME,
        // last resort: the comment's accessible label ("Comment from NAME")
        { via: "aria-label", find: (el) => ns.labelName(el) }],
      parent: [{ via: "structure", find: parentOf }],
      time: ["time.coral-comment-timestamp[datetime]", "time[datetime]",
        // last resort: a dated tooltip on the timestamp
        ".coral-comment-timestamp[title]"],
    },
    isReply: (el) => !!(el.closest(REPLY_LIST) || inReplyTo(el)),
    markerAnchor: (el) => own(el, ".coral-comment-content"),
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/coral, coral-flattened):
//   https://www.theverge.com/<section>/<id>/<slug>
