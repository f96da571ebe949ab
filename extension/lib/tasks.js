// The study's task pages (hello_ok.study.tasks = [{url, title?, target?}]): pages every
// participant visits, so their comments get ratings from several people. A page is matched to
// a task by a normalised page id, so the link the researcher wrote and the URL the browser
// shows (another scheme, www./m., a time offset, a share parameter) still meet.
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  // Query parameters that track the visit, not name the page (news sites keep the others).
  const TRACKING = /^(utm_\w+|fbclid|gclid|dclid|msclkid|mc_cid|mc_eid|igshid|ref|ref_src|ref_url|cmpid|ocid|smid)$/i;

  /** "host/path?page-identifying query", or null for what is not an http(s) URL. */
  ns.pageId = function pageId(url) {
    let u;
    try { u = new URL(url); } catch (_) { return null; }
    if (u.protocol !== "http:" && u.protocol !== "https:") return null;
    let host = u.hostname.toLowerCase().replace(/^www\./, "");
    const path = u.pathname.replace(/\/+$/, "") || "/";
    // YouTube: a video is its id, whether watched, as a Short, live, embedded or via youtu.be
    if (host === "youtu.be") return `youtube.com/watch?v=${path.slice(1)}`;
    if (/^(m\.)?youtube\.com$/.test(host)) {
      const m = path.match(/^\/(?:shorts|live|embed)\/([\w-]+)/);
      const v = m ? m[1] : u.searchParams.get("v");
      return v ? `youtube.com/watch?v=${v}` : `youtube.com${path}`;
    }
    // X: a thread is its status id (the handle in the path can change or differ in case)
    if (/^(mobile\.)?(x|twitter)\.com$/.test(host)) {
      const m = path.match(/^\/[^/]+\/status(?:es)?\/(\d+)/);
      return m ? `x.com/i/status/${m[1]}` : `x.com${path.toLowerCase()}`;
    }
    if (u.port) host += `:${u.port}`;
    const keep = [...u.searchParams].filter(([k]) => !TRACKING.test(k)).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return host + path + (keep.length ? `?${new URLSearchParams(keep)}` : "");
  };

  /** The task a page URL belongs to, or null. */
  ns.taskFor = function taskFor(tasks, url) {
    const id = ns.pageId(url);
    return (id && (tasks || []).find((t) => ns.pageId(t.url) === id)) || null;
  };

  /**
   * Progress per task and overall. `pageOf` maps "platform|key" -> page id (recorded when a
   * comment was sent from a task page); `rated` holds the comments this browser rated.
   */
  ns.taskProgress = function taskProgress(tasks, pageOf, rated) {
    const counts = {};
    for (const k of Object.keys(rated || {})) {
      const id = pageOf && pageOf[k];
      if (id) counts[id] = (counts[id] || 0) + 1;
    }
    const items = (tasks || []).map((t) => {
      const id = ns.pageId(t.url);
      const n = counts[id] || 0;
      return { url: t.url, title: t.title || null, target: t.target || null, id, rated: n, done: !!t.target && n >= t.target };
    });
    const withTarget = items.filter((t) => t.target);
    return {
      items,
      rated: items.reduce((s, t) => s + t.rated, 0),
      target: withTarget.reduce((s, t) => s + t.target, 0), // comments asked for, over pages with a target
      toward: withTarget.reduce((s, t) => s + Math.min(t.rated, t.target), 0), // of those, rated
      done: items.filter((t) => t.done).length,
    };
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
