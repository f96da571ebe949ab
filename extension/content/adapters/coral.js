// Coral Talk: open shadow root on #coral-shadow-container (no iframe since 2022). Replies live
// in a list whose id names the parent comment.
(function (ns) {
  const REPLY_LIST = '[id^="coral-comments-replyList-log--"]';

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
    comments: 'div.coral-comment[id^="comment-"]',
    key: (el) => el.id.slice("comment-".length),
    text: ".coral-comment-content",
    author: ".coral-comment-username",
    parentKey(el) {
      const list = el.closest(REPLY_LIST);
      return list ? list.id.slice("coral-comments-replyList-log--".length) : null;
    },
    timeShown: (el) => {
      const t = el.querySelector("time.coral-comment-timestamp[datetime], time[datetime]");
      return t ? t.getAttribute("datetime") : null;
    },
    markerAnchor: (el) => el.querySelector(".coral-comment-content"),
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/coral-*):
//   https://www.theverge.com/<section>/<id>/<slug>
