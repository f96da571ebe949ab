// The sites table: every comment system modlens knows, one row each. It is the one list the
// rest is built from:
//   - manifest.json's content_scripts, host_permissions and optional_host_permissions
//     (`node tools/extension_manifest.mjs --write` rewrites them; extension/test/sites.test.mjs
//     fails when the checked-in manifest differs),
//   - the per-site switches and their labels (worker settings, options page: `ns.SITES`),
//   - the image hosts the worker fetches comment attachments from (`ns.MEDIA_HOSTS`),
//   - the frame adapters that run under any page (`ns.ANY_PAGE_FRAMES`, content/main.js).
// A new adapter is its file (content/adapters/<adapter>.js), one row here, and its fixture folder
// (tests/fixtures/sites/). Where each site's comments live: docs/SITES.md.
//
// Columns:
//   adapter     the adapter's name (its file, its switch in the settings)
//   label       the switch's label on the options page
//   hosts       match patterns of its pages when it is built in (a static content script, no
//               prompt); none: a news site the participant switches on from the popup (optional
//               host permission, lib/site_access.js registers the scripts)
//   frame       "any page": the comments live in the site's own cross-origin frame, which runs
//               on whatever page embeds it; "switched-on page": such a frame, capturing only under
//               a top-level page whose site is switched on; absent: the page itself
//   permission  "host" (default when it has hosts): host permission for its hosts; "none": only
//               the content script (the worker never talks to that host)
//   imageHosts  where its comment images are fetched from (host permissions, no content script)
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  ns.SITE_TABLE = [
    { adapter: "youtube", label: "YouTube", hosts: ["https://www.youtube.com/*", "https://m.youtube.com/*"] },
    // mobile.* hosts redirect to these
    { adapter: "x", label: "X / Twitter", hosts: ["https://x.com/*", "https://twitter.com/*"], imageHosts: ["https://pbs.twimg.com/*"] },
    { adapter: "disqus", label: "Disqus", hosts: ["https://disqus.com/embed/comments/*"], frame: "any page", imageHosts: ["https://*.disquscdn.com/*"] },
    { adapter: "facebook", label: "Facebook comments", frame: "switched-on page", permission: "none",
      hosts: ["https://www.facebook.com/plugins/comments.php*", "https://www.facebook.com/v*/plugins/comments.php*"],
      imageHosts: ["https://*.fbcdn.net/*"] },
    { adapter: "openweb", label: "OpenWeb" },
    { adapter: "coral", label: "Coral" },
    { adapter: "viafoura", label: "Viafoura" },
    { adapter: "generic", label: "Custom selectors" }, // off in effect until the user defines a selector
  ];

  // Per-site switches, in the options page's order.
  ns.SITES = ns.SITE_TABLE.map((s) => s.adapter);
  ns.SITE_LABELS = Object.fromEntries(ns.SITE_TABLE.map((s) => [s.adapter, s.label]));
  ns.MEDIA_HOSTS = ns.SITE_TABLE.flatMap((s) => s.imageHosts || []);
  ns.ANY_PAGE_FRAMES = ns.SITE_TABLE.filter((s) => s.frame === "any page").map((s) => s.adapter);
  if (ns.DEFAULT_SETTINGS) ns.DEFAULT_SETTINGS.sites = Object.fromEntries(ns.SITES.map((a) => [a, true]));

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
