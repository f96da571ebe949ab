// Disqus runs in a cross-origin iframe; this adapter runs INSIDE it (all_frames) and takes the
// page identity from the frame URL: t_i (the site's identifier) or t_u (the article URL).
(function (ns) {
  const own = (sel) => [`:scope > .post-content ${sel}`, `:scope > div ${sel}`, sel];

  function postId(el) {
    if (el.id && el.id.startsWith("post-")) return el.id.slice(5);
    const a = el.querySelector('a.time-ago[href*="#comment-"]');
    const m = a && a.getAttribute("href").match(/#comment-(\d+)/);
    return m ? m[1] : null;
  }

  ns.defineAdapter({
    name: "disqus",
    platform: "disqus",
    matches: (loc) => loc.hostname === "disqus.com" && loc.pathname.startsWith("/embed/comments"),
    pageKey: (loc) => ns.urlParam(loc.href, "t_i") || ns.urlParam(loc.href, "t_u"),
    pageUrl: (loc) => ns.urlParam(loc.href, "t_u") || loc.href,
    pageTitle: (doc) => ns.urlParam(location.href, "t_d") || doc.title,
    comments: "#post-list li.post, ul.post-list li.post",
    key: postId,
    text: own(".post-message"),
    author: own(".post-byline .author a"),
    authorOf: (node) => node.getAttribute("data-username") || ns.textOf(node),
    parentKey(el) {
      const parent = el.parentElement && el.parentElement.closest("li.post");
      return parent ? postId(parent) : null;
    },
    timeShown: (el) => {
      const a = ns.pick(el, own("a.time-ago"));
      return a ? a.getAttribute("title") || ns.textOf(a) : null;
    },
    markerAnchor: (el) => ns.pick(el, own(".post-message")),
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/disqus-*):
//   https://disqus.com/embed/comments/?base=default&f=<forum>&t_i=<id>&t_u=<article url>
