// Disqus runs in a cross-origin iframe; this adapter runs INSIDE it (all_frames) and takes the
// page identity from the frame URL: t_i (the site's identifier) or t_u (the article URL).
(function (ns) {
  const own = (sel) => [`:scope > .post-content ${sel}`, `:scope > div ${sel}`, sel];

  function postId(el) {
    if (el.id && el.id.startsWith("post-")) return el.id.slice(5);
    const a = ns.own(el, 'a.time-ago[href*="#comment-"]', "li.post");
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
    fields: {
      key: [{ via: "post id", find: postId },
        // last resort: a data-* post id on the item or its own message
        { via: "data-post-id", find: (el) => el.getAttribute("data-post-id") || el.getAttribute("data-id") || null }],
      text: [".post-message", '[data-role="message"]'],
      author: [
        { via: "data-username", sel: ".post-byline .author a", value: (n) => n.getAttribute("data-username") || ns.textOf(n) },
        { via: "author", sel: ".post-byline .author", value: (n) => ns.textOf(n) },
        // last resort: the profile link target (https://disqus.com/by/<username>/)
        { via: "profile link", sel: 'a[href*="disqus.com/by/"], a[data-username]', value: (n) => n.getAttribute("data-username") || ((n.getAttribute("href") || "").match(/\/by\/([^/?#]+)/) || [])[1] || null },
      ],
      parent: [{ via: "structure", find: (el) => { const parent = el.parentElement && el.parentElement.closest("li.post"); return parent ? postId(parent) : null; } }],
      time: [
        { via: "time-ago title", sel: "a.time-ago", value: (a) => a.getAttribute("title") || ns.textOf(a) },
        "time[datetime]",
        // last resort: a dated tooltip anywhere in the byline
        ".post-meta [title]"],
    },
    isReply: (el) => !!el.closest("ul.children"),
    markerAnchor: (el) => ns.pick(el, own(".post-message")),
    // images a commenter attached (Disqus shows them in a media container under the message)
    media: ".post-media img, [data-role='post-media'] img, .media-container img",
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/disqus, disqus-threads):
//   https://disqus.com/embed/comments/?base=default&f=<forum>&t_i=<id>&t_u=<article url>
//   the same with comment images in .post-media (tests/fixtures/sites/disqus-media: *.disquscdn.com and data: URLs)
