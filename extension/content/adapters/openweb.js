// OpenWeb (Spot.IM) conversations render in an open shadow root under the conversation module.
(function (ns) {
  const MODULE = '[data-spotim-module="conversation"]';
  const COMMENT = "[data-message-id]";

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
    key: (el) => el.getAttribute("data-message-id"),
    text: '[data-spot-im-class="message-text"]',
    author: '[data-spot-im-class="message-username"]',
    parentKey(el) {
      const parent = el.parentElement && el.parentElement.closest(COMMENT);
      return parent ? parent.getAttribute("data-message-id") : null;
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
