// The site adapters' registry: one declaration per site (content/adapters/*.js) passed to
// `defineAdapter`, checked here once, and `pickAdapter` choosing the adapter for a document.
//
// An adapter declares, for each field of a comment, an ordered list of strategies
// (`fields: {key, text, author, parent, time}`); the observer tries them in order and takes the
// first non-empty answer. A strategy is
//   - a CSS selector string, searched in the comment's OWN subtree: the first match whose
//     closest comment is this comment (never a nested reply's element), or
//   - a function (el, ctx) -> Node | string | null
//     (ctx: {page, key, record, adapter, own(sel), keyOf(commentEl)}), or
//   - {via, sel | find, value?, derived?}: a named strategy; `value(node, el, ctx)` turns the node found
//     into the field's value (default: the node's text; for time its datetime / title / text).
//     `derived: true` on a key strategy: the key is made from the comment's content (no site id,
//     lib/hash.js derivedCommentKey), so identical comments on one page share it; the observer
//     numbers them (the first "<key>", the n-th "<key>-n"), each element keeping its number while
//     no other element holds it (a new twin may take the number of one that left the page; that
//     one, back, is numbered anew: content/observer.js twinKey), never a site's own id.
// A parent strategy answers a key (recorded with its `via`) or {key, via}; `ctx.keyOf(other)` is
// another comment element's key found by this same key list, so a parent's key is always the key
// it is logged with. The last entry of each list is the adapter's documented last resort. A field
// no strategy finds is counted per field in the page status, never filled with a guess.
(function (root) {
  const ns = (root.modlens = root.modlens || {});
  const adapters = (ns.adapters = ns.adapters || []);

  ns.FIELDS = ["key", "text", "author", "parent", "time"];
  // mirrors modlens.protocol.messages.ParentVia (the daemon refuses any other value)
  ns.PARENT_VIA = ["structure", "key_prefix", "connector", "replying_to", "in_reply_to_label", "structure_mismatch", "page", "none", "unknown"];
  const REQUIRED = ["name", "platform", "matches", "pageKey", "comments", "fields"];
  // the hooks of the one-hook form adapters used before field strategies: refused with a pointer
  const OLD_HOOKS = ["key", "text", "author", "authorOf", "parentKey", "timeShown"];

  function strategy(s, field) {
    if (!s) return null;
    if (typeof s === "string") return { via: s, sel: s };
    if (typeof s === "function") return { via: s.name || field, find: s };
    return { via: s.via || s.sel || field, ...s };
  }

  ns.defineAdapter = function defineAdapter(def) {
    for (const k of REQUIRED) if (!def[k]) throw new Error(`adapter ${def.name || "?"} lacks ${k}`);
    const old = OLD_HOOKS.filter((k) => Object.prototype.hasOwnProperty.call(def, k));
    if (old.length) throw new Error(`adapter ${def.name}: ${old.join(", ")} belong in fields: {key, text, author, parent, time} (ordered strategies)`);
    const unknown = Object.keys(def.fields).filter((k) => !ns.FIELDS.includes(k));
    if (unknown.length) throw new Error(`adapter ${def.name}: unknown field(s) ${unknown.join(", ")}`);
    def.strategies = {};
    for (const k of ns.FIELDS) def.strategies[k] = [].concat(def.fields[k] == null ? [] : def.fields[k]).map((s) => strategy(s, k)).filter(Boolean);
    for (const k of ["key", "text"]) if (!def.strategies[k].length) throw new Error(`adapter ${def.name} has no ${k} strategy`);
    adapters.push(def);
    return def;
  };

  /** The adapter for this document: a site's own first, the user's custom selectors last. */
  ns.pickAdapter = function pickAdapter(loc, settings, doc) {
    const ok = (a) => { try { return a.matches(loc, settings, doc); } catch (_) { return false; } };
    return adapters.find((a) => a.name !== "generic" && ok(a)) || adapters.find((a) => a.name === "generic" && ok(a)) || null;
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
