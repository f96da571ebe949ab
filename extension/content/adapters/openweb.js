// OpenWeb (Spot.IM) conversations render in an open shadow root under the conversation module.
// Markup generations seen: 2023+ `message-view` elements with id="message-<key>" whose replies
// sit in a sibling `ul.spcv_children-list`; newer `data-message-id` messages; the live one wraps
// each message in article / threading-line / root-message layers inside the list item, so the
// message is no longer a direct child of its `li`. Nothing here depends on fixed positions.
(function (ns) {
  const MODULE = '[data-spotim-module="conversation"]';
  const COMMENT = '[data-message-id], [data-spot-im-class="message-view"][id^="message-"]';
  const ITEM = 'li, [role="listitem"]';
  const REPLIES = '.spcv_children-list, [data-spot-im-class="children-list"], [data-spot-im-class="replies-list"]';
  const keyOf = (el) => el.getAttribute("data-message-id") || (el.id || "").replace(/^message-/, "") || null;

  /** The message that belongs to list item `item` itself: in its subtree, not in a nested item's. */
  function messageOf(item) {
    for (const m of item.querySelectorAll(COMMENT)) if (m.closest(ITEM) === item) return m;
    return null;
  }
  /** The nearest ancestor list item (above the comment's own) that holds a message: the parent. */
  function parentMessage(el) {
    const own = el.closest(ITEM);
    for (let item = own && own.parentElement && own.parentElement.closest(ITEM); item; item = item.parentElement && item.parentElement.closest(ITEM)) {
      const m = messageOf(item);
      if (m) return m;
    }
    return null;
  }

  ns.defineAdapter({
    name: "openweb",
    platform: "openweb",
    matches: (loc, settings, doc) => !!(doc && doc.querySelector(MODULE)),
    pageKey: (loc, doc) => {
      const m = doc.querySelector(`${MODULE}[data-post-id]`);
      return m ? m.getAttribute("data-post-id") : null;
    },
    pageUrl: (loc, doc) => {
      const m = doc.querySelector(`${MODULE}[data-post-url]`);
      return (m && m.getAttribute("data-post-url")) || loc.href;
    },
    shadowHosts: `${MODULE}, ${MODULE} *`,
    comments: COMMENT,
    fields: {
      // last resort: none needed, a message is only matched by the attribute that carries its key
      key: [{ via: "data-message-id / id", find: keyOf }],
      text: ['[data-spot-im-class="message-text"]', '[data-testid="message-text"]',
        // last resort: the message's text container by its test hook of the live generation
        '[data-spot-im-class="message-content"]'],
      author: ['[data-spot-im-class="message-username"]', '[data-testid="message-username"]', '[data-spot-im-class="user-name"]',
        // last resort: the accessible label of the message / its article ("Comment by NAME")
        { via: "aria-label", find: (el) => ns.labelName(el) || ns.labelName(el.closest("article")) || ns.labelName(ns.own(el, "article[aria-label]", COMMENT)) }],
      // the nearest enclosing list item that holds a message, at any nesting depth
      parent: [{ via: "structure", find: (el) => { const m = parentMessage(el); return m ? keyOf(m) : null; } }],
      time: ['time[data-spot-im-class="message-timestamp"]', "time[datetime]",
        // last resort: a dated tooltip on the timestamp
        '[data-spot-im-class="message-timestamp"][title]'],
    },
    // inside a replies list: a reply whose parent must be found (else counted as "parent not found")
    isReply: (el) => !!el.closest(REPLIES),
    markerAnchor: (el) => ns.own(el, '[data-spot-im-class="message-text"], [data-testid="message-text"]', COMMENT),
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/openweb, openweb-live):
//   https://www.foxnews.com/<section>/<article>, https://nypost.com/<date>/<article>/
