// DOM helpers shared by the site adapters and the observer: a comment's own subtree (never a
// nested reply's), accessible-label names, text as the adapters report it, URL parameters and
// absolute posting times. Pure functions of the nodes they are given; loadable from node tests.
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  /** The first element matching `sel` in `el`'s subtree whose closest `scope` is `el` itself.
   * `sel` may be a list: its selectors are tried in order (a priority, not document order). */
  ns.own = function own(el, sel, scope) {
    for (const one of [].concat(sel)) {
      for (const n of el.querySelectorAll(one)) if (!scope || n.closest(scope) === el) return n;
    }
    return null;
  };

  /** "Comment by NAME" / "Reply from NAME" style accessible labels: NAME, or null. */
  ns.labelName = function labelName(node, re) {
    const label = node && node.getAttribute && node.getAttribute("aria-label");
    const m = label && label.match(re || /^\s*(?:comment|reply|post)\s+(?:by|from)\s+(.+?)\s*$/i);
    return m ? ns.cleanText(m[1]) : null;
  };

  /** The first element of `el`'s subtree matching one of `spec` (a selector or a list, in order). */
  ns.pick = function pick(el, spec) {
    if (!spec) return null;
    for (const sel of [].concat(spec)) {
      const found = el.querySelector(sel);
      if (found) return found;
    }
    return null;
  };

  /** A node's text as the adapters report it (rendered text when attached), whitespace collapsed. */
  ns.textOf = function textOf(node) {
    if (!node) return "";
    if (typeof node === "string") return ns.cleanText(node);
    return ns.cleanText(node.innerText !== undefined && node.isConnected ? node.innerText : node.textContent);
  };

  ns.urlParam = function urlParam(href, name, base) {
    try { return new URL(href, base || root.location.href).searchParams.get(name); } catch (_) { return null; }
  };

  // The site's posting time as an ISO instant, when it shows an absolute one (a datetime
  // attribute, a dated tooltip); relative labels ("2 days ago") are not guessed at.
  ns.isoTime = function isoTime(value) {
    if (!value || !/\d{4}/.test(value)) return null;
    const t = Date.parse(value);
    return Number.isNaN(t) ? null : new Date(t).toISOString();
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
