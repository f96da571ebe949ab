// The one class that watches a page for comments. A site adapter is a small declaration
// (selectors + hooks, see content/adapters/*.js); everything that is hard lives here once:
// MutationObservers on the document and on every open shadow root the adapter names,
// dedupe by comment key (elements are reused and emptied by virtualized lists), SPA
// navigation (a new page key starts a new page), error counting, and the "adapter found
// nothing" status. A hook that throws is counted, never propagated to the page.
(function (root) {
  const ns = (root.modlens = root.modlens || {});
  const adapters = (ns.adapters = ns.adapters || []);

  ns.defineAdapter = function defineAdapter(def) {
    for (const k of ["name", "platform", "matches", "pageKey", "comments", "key"]) {
      if (!def[k]) throw new Error(`adapter ${def.name || "?"} lacks ${k}`);
    }
    adapters.push(def);
    return def;
  };

  ns.pickAdapter = function pickAdapter(loc, settings, doc) {
    const ok = (a) => { try { return a.matches(loc, settings, doc); } catch (_) { return false; } };
    return adapters.find((a) => a.name !== "generic" && ok(a)) || adapters.find((a) => a.name === "generic" && ok(a)) || null;
  };

  // Hook helpers shared by adapters: a hook may be a selector string or a function.
  ns.pick = function pick(el, spec) {
    if (!spec) return null;
    if (typeof spec === "function") return spec(el);
    for (const sel of [].concat(spec)) {
      const found = el.querySelector(sel);
      if (found) return found;
    }
    return null;
  };
  ns.textOf = function textOf(node) {
    if (!node) return "";
    if (typeof node === "string") return ns.cleanText(node);
    return ns.cleanText(node.innerText !== undefined && node.isConnected ? node.innerText : node.textContent);
  };
  ns.urlParam = function urlParam(href, name, base) {
    try { return new URL(href, base || location.href).searchParams.get(name); } catch (_) { return null; }
  };

  // The site's posting time as an ISO instant, when it shows an absolute one (a datetime
  // attribute, a dated tooltip); relative labels ("2 days ago") are not guessed at.
  ns.isoTime = function isoTime(value) {
    if (!value || !/\d{4}/.test(value)) return null;
    const t = Date.parse(value);
    return Number.isNaN(t) ? null : new Date(t).toISOString();
  };

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
      this.counts = { found: 0, skipped: 0, errors: 0, pages: 0 };
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
      const url = this.guard("pageUrl", () => (this.adapter.pageUrl ? this.adapter.pageUrl(location, this.doc) : location.href)) || location.href;
      return { url, platform: this.adapter.platform, page_key: String(key), title: ns.cleanText(title) };
    }

    extract(el, page) {
      const a = this.adapter;
      if (a.skip && this.guard("skip", () => a.skip(el), false)) return null;
      const key = this.guard("key", () => a.key(el, page));
      if (!key) return null;
      const textNode = this.guard("text", () => ns.pick(el, a.text));
      const text = a.textOf ? this.guard("textOf", () => a.textOf(el, textNode)) : ns.textOf(textNode);
      if (!text) return null;
      const authorNode = this.guard("author", () => ns.pick(el, a.author));
      const author = authorNode ? (a.authorOf ? this.guard("authorOf", () => a.authorOf(authorNode, el)) : ns.textOf(authorNode)) : null;
      const record = { key: String(key), text, author: author || null };
      const parent = a.parentKey ? this.guard("parentKey", () => a.parentKey(el, record.key, page)) : null;
      if (parent && String(parent) !== record.key) record.parent_key = String(parent);
      const shown = a.timeShown ? this.guard("timeShown", () => ns.isoTime(a.timeShown(el))) : null;
      if (shown) record.time_shown = shown;
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
        this.counts.pages += 1;
        this.startedAt = Date.now();
        if (this.h.onPage) this.h.onPage(page);
      }
      this.findShadowRoots();
      const fresh = [];
      for (const r of this.roots) {
        let els = [];
        try { els = r.querySelectorAll(this.adapter.comments); } catch (err) { this.counts.errors += 1; this.lastError = `comments selector: ${err.message}`; }
        for (const el of els) {
          const record = this.extract(el, page);
          if (!record) { this.counts.skipped += el.childElementCount > 0 ? 1 : 0; continue; }
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
