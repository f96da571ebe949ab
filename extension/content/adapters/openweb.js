// OpenWeb (Spot.IM) conversations render in an open shadow root under the conversation module.
(function (ns) {
  const MODULE = '[data-spotim-module="conversation"]';
  // newer generation: data-message-id; 2023+: message-view with id="message-<id>"
  const COMMENT = '[data-message-id], [data-spot-im-class="message-view"][id^="message-"]';
  const keyOf = (el) => el.getAttribute("data-message-id") || el.id.replace(/^message-/, "");

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
    key: keyOf,
    text: '[data-spot-im-class="message-text"]',
    author: '[data-spot-im-class="message-username"]',
    // A reply's message sits in li > ul.spcv_children-list > li of its parent's list item.
    parentKey(el) {
      const item = el.closest("li");
      const parentItem = item && item.parentElement && item.parentElement.closest("li");
      const parent = parentItem && [...parentItem.children].find((c) => c.matches(COMMENT));
      return parent ? keyOf(parent) : null;
    },
    timeShown: (el) => {
      const t = el.querySelector('time[data-spot-im-class="message-timestamp"], time');
      return t ? t.getAttribute("datetime") || ns.textOf(t) : null;
    },
    markerAnchor: (el) => el.querySelector('[data-spot-im-class="message-text"]'),
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/openweb-*):
//   https://www.foxnews.com/<section>/<article>, https://nypost.com/<date>/<article>/
