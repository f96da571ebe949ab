// The one class that watches a page for comments, for the adapter content/registry.js picked:
// MutationObservers on the document and on every open shadow root the adapter names, dedupe by
// comment key (elements are reused and emptied by virtualized lists), SPA navigation (a new page
// key starts a new page), the adapter's ordered per-field strategies, per-strategy error counting,
// per-field "not found" counts and the "adapter found nothing" status. A strategy that throws is
// counted, never propagated to the page. DOM helpers: content/dom.js.
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  // A strategy's raw answer as the field's value: nodes give their text, times their
  // datetime / title attribute first.
  function convert(name, found) {
    if (typeof found !== "object") return found;
    if (!found.nodeType) return name === "parent" ? found : null;
    if (name === "time") return found.getAttribute("datetime") || found.getAttribute("title") || ns.textOf(found);
    return ns.textOf(found);
  }

  // Identical comments of one page share a derived key (see extract): `keys` is the key each element
  // was given (with the base it was given for), `bases` each base's numbers in use (n -> element).
  const newTwins = () => ({ keys: new WeakMap(), bases: new Map() });

  const NOTHING_FOUND_AFTER_MS = 5000;
  const DEBOUNCE_MS = 150;

  class CommentObserver {
    /**
     * @param adapter   a definition passed to defineAdapter
     * @param handlers  {onComments(page, items), onElement(el, key, record), onStatus(status), onPage(page)}
     */
    constructor(adapter, handlers, opts = {}) {
      this.adapter = adapter;
      this.h = handlers;
      this.doc = opts.document || document;
      this.roots = new Set();
      this.observers = [];
      this.page = null;
      this.seen = new Map(); // key -> record, this page
      this.emittedAnywhere = new Set(); // keys already sent under some page: never re-attributed
      this.elements = new Map(); // key -> element last seen carrying it
      this.twins = newTwins();
      this.counts = { found: 0, skipped: 0, errors: 0, pages: 0, missing: { key: 0, text: 0, author: 0, parent: 0, time: 0 }, parents: {} };
      this.lastError = "";
      this.timer = null;
      this.startedAt = 0;
      this.stopped = true;
    }

    start() {
      if (!this.stopped) return;
      this.stopped = false;
      this.startedAt = Date.now();
      this.addRoot(this.doc);
      this.onNav = () => this.schedule(0);
      for (const ev of this.adapter.navigationEvents || []) this.doc.addEventListener(ev, this.onNav, true);
      root.addEventListener("popstate", this.onNav);
      // Cheap safety net for SPA routers we have no event for, and the "nothing found" status.
      this.poll = setInterval(() => this.scan(), 2000);
      this.scan();
    }

    stop() {
      this.stopped = true;
      for (const o of this.observers) o.disconnect();
      this.observers = [];
      this.roots.clear();
      clearInterval(this.poll);
      clearTimeout(this.timer);
      for (const ev of this.adapter.navigationEvents || []) this.doc.removeEventListener(ev, this.onNav, true);
      root.removeEventListener("popstate", this.onNav);
    }

    addRoot(r) {
      if (this.roots.has(r)) return;
      this.roots.add(r);
      const mo = new MutationObserver(() => this.schedule(DEBOUNCE_MS));
      mo.observe(r === this.doc ? this.doc.documentElement || this.doc : r, { childList: true, subtree: true, characterData: true });
      this.observers.push(mo);
    }

    schedule(delay) {
      if (this.stopped || this.timer) return;
      this.timer = setTimeout(() => { this.timer = null; this.scan(); }, delay);
    }

    guard(what, fn, fallback = null) {
      try {
        return fn();
      } catch (err) {
        this.counts.errors += 1;
        this.lastError = `${what}: ${err && err.message}`;
        return fallback;
      }
    }

    findShadowRoots() {
      const sel = this.adapter.shadowHosts;
      if (!sel) return;
      // Shadow roots can nest: repeat until no new root appears.
      let added = true;
      while (added) {
        added = false;
        for (const r of [...this.roots]) {
          for (const host of r.querySelectorAll(sel)) {
            if (host.shadowRoot && !this.roots.has(host.shadowRoot)) { this.addRoot(host.shadowRoot); added = true; }
          }
        }
      }
    }

    currentPage() {
      const key = this.guard("pageKey", () => this.adapter.pageKey(location, this.doc));
      if (!key) return null;
      const title = this.guard("pageTitle", () => (this.adapter.pageTitle ? this.adapter.pageTitle(this.doc) : this.doc.title)) || "";
      // An adapter's pageUrl is the page's address as logged (X's drops the author's handle): when
      // it answers nothing the page is not recorded, never given the address bar's URL instead.
      const url = this.adapter.pageUrl ? this.guard("pageUrl", () => this.adapter.pageUrl(location, this.doc)) : location.href;
      if (!url) return null;
      return { url, platform: this.adapter.platform, page_key: String(key), title: ns.cleanText(title) };
    }

    /** Tries one field's strategies in order: {value, via} of the first that answers, else null. */
    field(el, name, ctx) {
      const a = this.adapter;
      for (const s of a.strategies[name]) {
        const value = this.guard(`${name}/${s.via}`, () => {
          const found = s.sel ? ns.own(el, s.sel, a.comments) : s.find(el, ctx);
          if (found == null || found === "") return null;
          return s.value && typeof found === "object" && found.nodeType ? s.value(found, el, ctx) : convert(name, found);
        });
        if (name === "parent" && value && typeof value === "object") {
          if (value.key) return { value: String(value.key), via: value.via || s.via };
          continue;
        }
        const v = name === "time" ? ns.isoTime(value) : name === "key" || name === "parent" ? (value == null ? "" : String(value)) : ns.cleanText(value == null ? "" : String(value));
        if (v) return { value: v, via: s.via, derived: !!s.derived };
      }
      return null;
    }

    /** Another comment element's key, found by the same key strategies (e.g. a reply's parent), a
     *  derived one numbered as extract numbers it: a reply names its own twin parent, also one that
     *  is skipped, has no text or comes later on the page (numbered here, it keeps that number). */
    keyOf(el, page) {
      if (!el) return null;
      const a = this.adapter;
      const found = this.field(el, "key", { page, adapter: a, own: (sel) => ns.own(el, sel, a.comments), keyOf: (o) => this.keyOf(o, page) });
      if (!found) return null;
      return found.derived ? this.twinKey(el, found.value) : found.value;
    }

    /** The key of element `el` whose derived key is `base`. An element keeps the key it was given
     *  while its content stays the same and its number is still its own, wherever twins come and
     *  go around it (a newer twin shown above it on a list sorted newest first, one that leaves a
     *  virtualized list). A new element takes the first number of its base whose element has left
     *  the page (most often the same comment rendered again, but identical comments cannot be told
     *  apart, so it may be another twin), else the next number not used yet: the first is the base
     *  itself, the n-th "<base>-n". An element that comes back after its number was taken so is
     *  numbered again like a new one: no two elements on the page share a key. */
    twinKey(el, base) {
      const { keys, bases } = this.twins;
      const had = keys.get(el);
      if (had && had.base === base && bases.get(base) && bases.get(base).get(had.n) === el) return had.key;
      // an element reused for another comment (virtualized lists) gives its old number back
      if (had && bases.get(had.base) && bases.get(had.base).get(had.n) === el) bases.get(had.base).delete(had.n);
      if (!bases.has(base)) bases.set(base, new Map());
      const used = bases.get(base);
      let n = 1;
      while (used.has(n) && used.get(n).isConnected !== false) n += 1;
      used.set(n, el);
      const key = n > 1 ? `${base}-${n}` : base;
      keys.set(el, { base, n, key });
      return key;
    }

    holdsComment(el) {
      return this.guard("comments selector", () => !!el.querySelector(this.adapter.comments), false);
    }

    /** The comment record of element `el`. A key derived from the comment's content (a strategy
     *  marked derived: the site gives no id) is shared by identical comments: each element gets a
     *  number of its own for this page (twinKey), kept while it stays on the page. */
    extract(el, page) {
      const a = this.adapter;
      if (a.skip && this.guard("skip", () => a.skip(el), false)) return null;
      const ctx = { page, adapter: a, own: (sel) => ns.own(el, sel, a.comments), keyOf: (other) => this.keyOf(other, page) };
      const key = this.field(el, "key", ctx);
      const text = this.field(el, "text", ctx);
      // An element the comment selector matches around another comment (two markup generations'
      // markers on one comment: a labelled wrapper and the block inside it) holds no key and no
      // text of its own: it is not a comment missing its key, the comment inside it is counted.
      if (!key && !text && this.holdsComment(el)) return { container: true };
      if (!key) return { missing: "key" };
      ctx.key = key.derived ? this.twinKey(el, key.value) : key.value;
      if (!text) return { missing: "text" };
      const record = { key: ctx.key, text: text.value, author: null, missing: [] };
      ctx.record = record;
      const author = this.field(el, "author", ctx);
      if (author) record.author = author.value; else record.missing.push("author");
      const parent = this.field(el, "parent", ctx);
      if (parent && parent.value !== record.key) {
        record.parent_key = parent.value;
        // the daemon refuses a message with a parent_via outside its vocabulary: a strategy named
        // otherwise is a structural one
        record.parent_via = ns.PARENT_VIA.includes(parent.via) ? parent.via : "structure";
      } else {
        const reply = !!(a.isReply && this.guard("isReply", () => a.isReply(el, ctx), false));
        record.parent_via = reply ? "unknown" : "none";
        if (reply) record.missing.push("parent");
      }
      const shown = this.field(el, "time", ctx);
      if (shown) record.time_shown = shown.value; else record.missing.push("time");
      // images attached to the comment (adapter `media`: one selector; its own subtree only, big
      // enough to be an attachment): their URLs; the worker fetches them when the study collects media
      // (adapter `ownPart(el, node)`: false for a part of the comment that is not its own, X's quoted post)
      const own = (n) => n.closest(a.comments) === el && (!a.ownPart || a.ownPart(el, n));
      if (a.media) record.media = this.guard("media", () => ns.attachedImageUrls(el, a.media, own), []) || [];
      return record;
    }

    scan() {
      if (this.stopped) return;
      const page = this.currentPage();
      if (!page) return this.report(null);
      if (!this.page || this.page.page_key !== page.page_key) {
        // A new video / post / article: counts and dedupe start over for it.
        this.page = page;
        this.seen = new Map();
        this.elements = new Map();
        this.twins = newTwins();
        this.counts.pages += 1;
        this.startedAt = Date.now();
        if (this.h.onPage) this.h.onPage(page);
      }
      this.findShadowRoots();
      const fresh = [];
      const unkeyed = { key: 0, text: 0 }; // elements on the page now whose key / text no strategy finds
      for (const r of this.roots) {
        let els = [];
        try { els = r.querySelectorAll(this.adapter.comments); } catch (err) { this.counts.errors += 1; this.lastError = `comments selector: ${err.message}`; }
        for (const el of els) {
          const record = this.extract(el, page);
          if (record && record.container) continue;
          if (!record || record.missing === "key" || record.missing === "text") {
            // emptied / placeholder elements (virtualized lists) are not comments missing a field
            if (el.childElementCount > 0) {
              this.counts.skipped += 1;
              if (record) unkeyed[record.missing] += 1;
            }
            continue;
          }
          this.elements.set(record.key, el);
          if (!this.seen.has(record.key)) {
            this.seen.set(record.key, record);
            if (!this.emittedAnywhere.has(record.key)) {
              this.emittedAnywhere.add(record.key);
              fresh.push(record);
            }
          }
          if (this.h.onElement) this.guard("marker", () => this.h.onElement(el, record.key, this.seen.get(record.key)));
        }
      }
      this.counts.found = this.seen.size;
      // Per-field "not found" counts: key and text over the elements present now (a comment
      // without them is not logged), the others over the comments logged for this page.
      const missing = { ...unkeyed, author: 0, parent: 0, time: 0 };
      const parents = {};
      for (const rec of this.seen.values()) {
        for (const f of rec.missing) missing[f] += 1;
        parents[rec.parent_via] = (parents[rec.parent_via] || 0) + 1;
      }
      this.counts.missing = missing;
      this.counts.parents = parents;
      if (fresh.length && this.h.onComments) this.h.onComments(page, fresh);
      this.report(page);
    }

    status(page) {
      const waited = Date.now() - this.startedAt;
      let state = "ok";
      if (!page) state = "no page";
      else if (this.seen.size === 0) state = waited > NOTHING_FOUND_AFTER_MS ? "adapter found nothing" : "looking";
      return { adapter: this.adapter.name, platform: this.adapter.platform, page: page, state, ...this.counts, lastError: this.lastError };
    }

    report(page) {
      const s = this.status(page);
      const sig = JSON.stringify(s);
      if (sig !== this.lastStatus && this.h.onStatus) { this.lastStatus = sig; this.h.onStatus(s); }
    }

    elementFor(key) {
      const el = this.elements.get(key);
      return el && el.isConnected ? el : null;
    }
  }

  ns.CommentObserver = CommentObserver;
  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
