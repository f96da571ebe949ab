// Viafoura (light DOM under vf-conversations). The DOM carries no comment id, so the key is a
// hash of author + time shown + text: stable across reloads and re-renders of the same comment.
(function (ns) {
  const COMMENT = "article.vf3-comment, .vf-comment";
  const TEXT = [".vf3-comment-content", ".vf-comment__content", ".vf-comment-content", ".vf-comment-body"];
  const AUTHOR = [".vf3-comment-header__author", ".vf3-comment-author", ".vf-comment-head__author", ".vf-comment-author"];
  const TIME = "time[datetime], .vf3-comment-header__time, .vf-comment-head__time";

  const own = (el, sels) => {
    for (const s of sels) {
      for (const n of el.querySelectorAll(s)) if (n.closest(COMMENT) === el) return n;
    }
    return null;
  };
  const timeOf = (el) => {
    const t = [...el.querySelectorAll(TIME)].find((n) => n.closest(COMMENT) === el);
    return t ? t.getAttribute("datetime") || ns.textOf(t) : "";
  };
  function keyOf(el) {
    const id = el.getAttribute("data-id") || el.getAttribute("data-comment-id");
    if (id) return id;
    const text = ns.textOf(own(el, TEXT));
    if (!text) return null;
    const author = ns.textOf(own(el, AUTHOR));
    return "vf-" + ns.unitHash("viafoura", author + "|" + timeOf(el), text).toString(36).slice(2, 12);
  }

  ns.defineAdapter({
    name: "viafoura",
    platform: "viafoura",
    matches: (loc, settings, doc) => !!(doc && doc.querySelector("vf-conversations, .viafoura")),
    pageKey: (loc, doc) => {
      const m = doc.querySelector('meta[name="vf:container_id"]');
      if (m && m.content) return m.content;
      return loc.origin + loc.pathname;
    },
    comments: COMMENT,
    key: keyOf,
    text: (el) => own(el, TEXT),
    author: (el) => own(el, AUTHOR),
    parentKey(el) {
      const parent = el.parentElement && el.parentElement.closest(COMMENT);
      return parent ? keyOf(parent) : null;
    },
    timeShown: (el) => timeOf(el) || null,
    markerAnchor: (el) => own(el, TEXT),
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/viafoura-*):
//   https://apnews.com/article/<slug>
