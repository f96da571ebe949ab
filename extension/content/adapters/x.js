// X / Twitter reply threads. The list is virtualized (cells are emptied and reused) and posts are
// not nested in the DOM, so reply structure comes from what X draws and says:
//   1. connector: a post that replies to the post in the previous cell has a thin vertical line
//      above its avatar (the line that joins it to the previous post) -> that post is the parent;
//   2. "Replying to @handle" (older generation, and nested conversations) -> the nearest earlier
//      post by that handle;
//   3. otherwise a post below the opened post replies to the opened post; posts above it (the
//      chain that leads to it) without a connector are top-level.
(function (ns) {
  const STATUS = /^\/([^/]+)\/status\/(\d+)/;
  const CELL = '[data-testid="cellInnerDiv"]';
  const TWEET = 'article[data-testid="tweet"]';
  const AVATAR = '[data-testid="Tweet-User-Avatar"], [data-testid^="UserAvatar-Container"]';
  const cellKeys = new WeakMap(); // cell -> status id last seen in it (cells are emptied when far away)
  // A post that quotes another draws the quoted post as a card inside its own article, with that
  // post's User-Name, time, text and "Replying to": none of them is the quoting post's.
  const QUOTED = 'div[role="link"]';
  const notQuoted = (el) => (n) => { const card = n.closest(QUOTED); return !card || !el.contains(card); };
  /** The first `sel` of post `el`'s own, outside a quoted post's card. */
  const ownOf = (el, sel) => [...el.querySelectorAll(sel)].find((n) => n.closest(TWEET) === el && notQuoted(el)(n)) || null;
  const TEXT = '[data-testid="tweetText"]';

  function statusOf(link) {
    const m = link && new URL(link.getAttribute("href"), location.href).pathname.match(STATUS);
    return m ? { handle: m[1], id: m[2] } : null;
  }
  function remember(el, id) {
    const cell = el.closest(CELL);
    if (cell && id) cellKeys.set(cell, id);
    return id;
  }
  const timeLink = (el) => { const t = el.querySelector("time[datetime]"); return t && t.closest("a[href*='/status/']"); };
  const handleOf = (tweet) => {
    const a = tweet.querySelector('[data-testid="User-Name"] a[href^="/"]');
    const h = a && (a.getAttribute("href") || "").replace(/^\//, "").split("/")[0];
    return h || ((statusOf(timeLink(tweet)) || {}).handle) || null;
  };
  const keyOfTweet = (tweet) => (statusOf(timeLink(tweet) || tweet.querySelector("a[href*='/status/']")) || {}).id || null;

  /** The cells before this post's cell, nearest first, with the status id each holds (or held). */
  function* earlierCells(el) {
    let cell = el.closest(CELL);
    for (let i = 0; cell && i < 200; i++) {
      cell = cell.previousElementSibling;
      if (!cell) return;
      const tweet = cell.querySelector(TWEET);
      yield { cell, tweet, id: tweet ? keyOfTweet(tweet) : cellKeys.get(cell) || null };
    }
  }

  /** A thin vertical line whose bottom is at or above the avatar's top, centred on the avatar. */
  function connectorAbove(el) {
    const avatar = el.querySelector(AVATAR);
    if (!avatar) return false;
    const a = avatar.getBoundingClientRect();
    if (!a.width) return false;
    const mid = a.left + a.width / 2;
    for (const n of el.querySelectorAll("div:empty, span:empty")) {
      if (avatar.contains(n)) continue;
      const r = n.getBoundingClientRect();
      if (r.width > 0 && r.width <= 3 && r.height >= 4 && r.bottom <= a.top + 2 && Math.abs(r.left + r.width / 2 - mid) <= 4) return true;
    }
    return false;
  }

  function replyToPrevious(el) {
    if (!connectorAbove(el)) return null;
    const prev = earlierCells(el).next().value;
    return prev && prev.id ? prev.id : null;
  }

  function replyingTo(el) {
    const label = [...el.querySelectorAll("div, span")].filter(notQuoted(el)).find((n) => /^\s*Replying to\b/i.test(n.textContent || "") && n.querySelector("a[href^='/']"));
    if (!label) return null;
    const handle = (label.querySelector("a[href^='/']").getAttribute("href") || "").replace(/^\//, "").split("/")[0].toLowerCase();
    for (const c of earlierCells(el)) if (c.tweet && c.id && (handleOf(c.tweet) || "").toLowerCase() === handle) return c.id;
    return null;
  }

  /** Below the opened post: a reply to it. Above it (or the post itself): not a reply to it. */
  function openedPost(el, ctx) {
    const page = ctx.page;
    if (!page || ctx.key === page.page_key) return null;
    const focal = el.ownerDocument.querySelector(`${TWEET}[tabindex="-1"]`);
    if (focal && !(focal.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING)) return null;
    return page.page_key;
  }

  /**
   * `<name> on X: "<text>" / X` (a "(3) " unread count may lead) -> `<text>`. The greedy `.*`
   * ends the prefix at the LAST ` on X: "`, so a name that itself holds those words is dropped
   * whole (a post text holding them loses its start, never gains the name). Any other shape (the
   * title while loading, another interface language) gives the neutral "Post on X".
   */
  function postTitle(doc) {
    const m = /^.* on (?:X|Twitter): "([\s\S]*)" \/ (?:X|Twitter)$/.exec(doc.title || "");
    return m && m[1].trim() ? m[1] : "Post on X";
  }

  ns.defineAdapter({
    name: "x",
    platform: "x",
    matches: (loc) => /(^|\.)(x|twitter)\.com$/.test(loc.hostname),
    pageKey(loc) {
      const m = loc.pathname.match(STATUS);
      return m ? m[2] : null;
    },
    // The page row never names the opened post's author (the consent text promises authors are
    // hashed): X's own handle-free address of the post, and the post's text as the tab title
    // quotes it, without the "<display name> on X:" before it.
    pageUrl(loc) {
      const m = loc.pathname.match(STATUS);
      return m ? `https://x.com/i/status/${m[2]}` : null;
    },
    pageTitle: postTitle,
    comments: TWEET,
    // Cells after a heading cell ("Discover more") are recommendations, not replies.
    skip(el) {
      let cell = el.closest(CELL);
      for (let i = 0; cell && i < 500; i++) {
        cell = cell.previousElementSibling;
        if (cell && cell.querySelector('h2[role="heading"], [role="heading"][aria-level="2"]')) return true;
      }
      return false;
    },
    fields: {
      key: [
        { via: "time link", find: (el) => remember(el, (statusOf(timeLink(el)) || {}).id) },
        // last resort: the first status link of the post
        { via: "status link", find: (el) => remember(el, (statusOf(el.querySelector("a[href*='/status/']")) || {}).id) },
      ],
      // the post's own text; one that only quotes another post has none (skipped, counted)
      text: [{ via: TEXT, find: (el) => ownOf(el, TEXT) }],
      author: [
        { via: "User-Name link", sel: '[data-testid="User-Name"] a[href^="/"]', value: (n) => (n.getAttribute("href") || "").replace(/^\//, "").split("/")[0] || ns.textOf(n) },
        // last resort: the handle in the post's own status link target
        { via: "status link", find: (el) => (statusOf(timeLink(el)) || {}).handle || null },
      ],
      parent: [
        { via: "connector", find: replyToPrevious },
        { via: "replying_to", find: replyingTo },
        { via: "page", find: openedPost },
      ],
      time: ["time[datetime]"],
    },
    markerAnchor: (el) => ownOf(el, TEXT),
    // photos attached to the post (the avatar is an <img> too, but outside tweetPhoto and small);
    // a quoted post's photos are that post's
    media: '[data-testid="tweetPhoto"] img',
    ownPart: (el, node) => notQuoted(el)(node),
  });
})(globalThis.modlens);
// Tested on (markup imitated by tests/fixtures/sites/x-thread, x-chain):
//   https://x.com/<handle>/status/<id>   (opened post, replies, virtualized cells, SPA to another post,
//   reply chains joined by connector lines, the chain above an opened reply, "Replying to @handle");
//   its page row: https://x.com/i/status/<id> and the post's text, no handle or display name
//   (extension/test/sites.test.mjs on the x-thread, x-chain, x-media titles; tests/e2e/test_consent_claims.py)
//   https://x.com/<handle>/status/<id>   with reply photos (tests/fixtures/sites/x-media: pbs.twimg.com and data: URLs)
