// Content-script entry: picks the adapter for this frame, asks the worker whether this site is
// active (consent given, not paused, site switched on), runs the CommentObserver, forwards new
// comments, receives scores/ratings and keeps the markers in sync. Never runs in incognito.
// Frames: the worker's answer names the top-level page (`cfg.top`); an adapter running in an
// iframe (a comment widget's frame, the Facebook comments plugin, a custom selector's frame) is
// keyed by that page's site, and captures only while the participant has that site switched on.
// Disqus's frame is the exception: built in, it runs on any page (docs/EXTENSION.md).
(function () {
  const ns = globalThis.modlens;
  if (!ns || ns.mainStarted) return;
  ns.mainStarted = true;
  if (chrome.extension && chrome.extension.inIncognitoContext) return;
  let inFrame = true;
  try { inFrame = window.top !== window; } catch (_) { /* a cross-origin top: a frame */ }
  ns.inFrame = inFrame;
  // adapters made for a frame of their own that run wherever that frame is embedded (sites table)
  const ANY_PAGE_FRAMES = new Set(ns.ANY_PAGE_FRAMES);

  let cfg = null;
  let adapter = null;
  let observer = null;
  // the observer whose elements carry this page's markers: kept when it stops (pause, site switched
  // off), so a rating_ok / rating_refused that comes then still reaches its marker
  let marked = null;
  let lastPageKey = null; // the page the last observer was on: a new one clears what `info` holds
  const info = new Map(); // key -> {sampled, detectors, rated}
  const page = { found: 0, queued: 0, scored: 0, rated: 0 };
  let lastStatus = null;
  let refusal = ""; // why the worker did not take this page's comments (e.g. not a task page)
  const unsent = new Map(); // batch -> {n, error}: comments found here that the worker has not taken yet
  let batches = 0;

  const send = (msg) => chrome.runtime.sendMessage(msg);
  const msgs = ns.messages;

  // A frame captures only under a top-level page whose site the participant switched on.
  function frameAllowed() {
    if (!inFrame || (adapter && ANY_PAGE_FRAMES.has(adapter.name))) return true;
    return !!(cfg && cfg.top && cfg.top.granted);
  }

  // What the participant switched off for this page, "" when nothing: "Pause everything", its site
  // switched off, or a frame under a page whose site is not switched on (keys of ns.NOT_TAKING).
  // Consent is not among them: the markers do not say it (the worker's refusal does)
  function offKey() {
    if (cfg.paused) return "paused";
    if (cfg.sites[adapter.name] === false) return "siteOff";
    return frameAllowed() ? "" : "frameOff";
  }

  function active() {
    return !!(cfg && cfg.consented && !offKey());
  }

  function reason() {
    if (!cfg || !cfg.study) return "not connected to the daemon yet";
    if (!cfg.consented) return "consent needed";
    return ns.OFF_REASONS[offKey()] || refusal;
  }

  // The observer reports a status only when it changes: one the worker did not take (it was
  // stopping or starting) is sent again, else the popup would miss it until the next change.
  let statusRetry = null;
  function reportStatus(status, attempt = 0) {
    lastStatus = status || lastStatus;
    clearTimeout(statusRetry);
    const waiting = [...unsent.values()];
    const s = { ...(lastStatus || { adapter: adapter.name, state: "inactive" }), active: active(), reason: reason(),
      counts: { ...page, unsent: waiting.reduce((n, b) => n + b.n, 0) }, unsent_error: waiting.length ? waiting[waiting.length - 1].error : "" };
    // stale: the worker's config changed after this page asked for it (it may have told the open
    // pages before this one was among them): ask again, and report what holds the page back then
    send(msgs.pageStatus(s, cfg && cfg.revision)).then((res) => { if (res && res.stale) loadConfig(); }, () => {
      if (attempt < 4) statusRetry = setTimeout(() => reportStatus(undefined, attempt + 1), 500 * 2 ** attempt);
    });
  }

  async function sendComments(pg, items, attempt = 0, batch = ++batches) {
    const payload = items.map(ns.contentComment);
    try {
      const res = await send(msgs.comments(adapter.name, pg, payload));
      if (res && res.queued) { unsent.delete(batch); page.queued += items.length; refusal = ""; reportStatus(); return; }
      if (!res || res.error) throw new Error((res && res.error) || "no answer from the extension");
      unsent.delete(batch);
      if (res.reason) { refusal = res.reason; reportStatus(); }
    } catch (err) {
      // Not taken: the worker is restarting, or could not store them (its storage full). The page
      // status says so, and they are tried again while the page is open: the observer never
      // offers them again, so giving up would lose them without a word.
      unsent.set(batch, { n: items.length, error: String((err && err.message) || err) });
      reportStatus();
      setTimeout(() => sendComments(pg, items, attempt + 1, batch), Math.min(ns.UNSENT_RETRY_MAX_MS, 1000 * 2 ** attempt));
    }
  }

  const ctx = {
    get display() { return cfg ? cfg.display : "blind"; },
    get study() { return cfg && cfg.study; },
    // why no rating is started on this page now, "" when one is (the markers say so): "Pause
    // everything", its site switched off, or a frame under a page whose site is not switched on (the
    // worker refuses a rating saved before any of these reached the page: it checks a frame's top page)
    get notTaking() {
      return cfg ? offKey() : "";
    },
    /** Hands the answer to the worker; resolves to its word: {queued, id} or {queued: false, reason},
     *  {error} when it could not be asked, and `marked` whether this page marked the comment rated. */
    onRate: async (record, answer) => {
      const comment = { platform: adapter.platform, key: record.key };
      const res = await send(msgs.rate(comment, answer)).catch((e) => ({ error: String(e) }));
      const i = info.get(record.key);
      if (res && res.queued && i) {
        // in the outbox, not yet in the log: the marker says so until the daemon's rating_ok
        i.rated = { derived: answer.anchors ? ns.deriveToxicity(answer.anchors.vs_hard, answer.anchors.vs_extreme, extremeRating()).rating : answer.values.toxicity,
          saved: false };
        i.refused = null;
        page.rated += 1;
        reportStatus();
      }
      refresh(record.key);
      return { ...(res || { error: "no answer from the extension" }), marked: !!(i && i.rated) };
    },
  };

  function extremeRating() {
    const a = cfg.study.anchors.find((x) => x.role === "extreme");
    return a ? a.rating : "toxic";
  }

  function refresh(key) {
    if (!marked) return;
    const el = marked.elementFor(key);
    if (el) mark(el, key, marked.seen.get(key));
  }

  function mark(el, key, record) {
    const i = info.get(key);
    if (!i) return;
    const anchor = adapter.markerAnchor ? adapter.markerAnchor(el) : null;
    ns.markComment(el, key, record, i, ctx, anchor);
  }

  function startObserver() {
    if (observer || !active()) return;
    observer = new ns.CommentObserver(adapter, {
      onComments: (pg, items) => { sendComments(pg, items); },
      onElement: (el, key, record) => mark(el, key, record),
      onStatus: (s) => { page.found = s.found; reportStatus(s); },
      onPage: (pg) => {
        // An observer started again (after a pause, a site switched back on) calls the page it is on
        // new: the same page keeps its comments' scores, so its markers are drawn again from them
        // (with the daemon down no scores would come to redraw them). Its comments are queued again.
        Object.assign(page, { found: 0, queued: 0 });
        if (pg.page_key === lastPageKey) return;
        lastPageKey = pg.page_key;
        info.clear(); refusal = ""; Object.assign(page, { scored: 0, rated: 0 });
      },
    });
    marked = observer;
    observer.start();
  }

  function stopObserver() {
    if (observer) observer.stop();
    observer = null;
  }

  /** Applies the worker's config (`known`: one just fetched), starting or stopping the observer. */
  async function loadConfig(known) {
    cfg = known || (await send(msgs.contentHello()));
    if (cfg) ns.applyTimings(cfg.timings);
    if (active()) startObserver(); else stopObserver();
    // every marker follows the config (paused or not), observed or not
    for (const key of info.keys()) refresh(key);
    reportStatus();
  }

  chrome.runtime.onMessage.addListener((msg) => {
    if (!msg || !adapter) return;
    if (msg.type === ns.MSG.scores) {
      for (const it of msg.items) {
        if (!info.has(it.key) && ns.wasScored(it)) page.scored += 1; // a blank text is answered, not scored
        const prev = info.get(it.key);
        info.set(it.key, { sampled: it.sampled, detectors: it.detectors, rated: (prev && prev.rated) || it.rated });
        refresh(it.key);
      }
      reportStatus();
    } else if (msg.type === ns.MSG.ratingOk) {
      const i = info.get(msg.comment.key);
      if (i) { i.rated = { derived: msg.derived_toxicity, inconsistent: msg.inconsistent, saved: true }; refresh(msg.comment.key); }
    } else if (msg.type === ns.MSG.ratingRefused) {
      // the daemon refused it for good, or a withdrawal set it aside (consent_withdrawn: perhaps sent,
      // its answer not come): not rated, the panel is offered again with the reason
      const i = info.get(msg.comment.key);
      if (i && i.rated) {
        i.rated = null;
        i.refused = `${msg.code}: ${msg.message}`;
        i.refusedLabel = msg.code === "consent_withdrawn" ? "rating withdrawn" : "rating not saved";
        page.rated = Math.max(0, page.rated - 1);
        refresh(msg.comment.key);
        reportStatus();
      }
    } else if (msg.type === ns.MSG.configChanged) {
      loadConfig();
    }
  });

  // Pages that embed OpenWeb / Coral / Viafoura may add the widget late: look for it a while.
  async function boot() {
    cfg = await send(msgs.contentHello());
    // a frame on a page the participant did not switch on: nothing to look for (ads, embeds)
    if (inFrame && !(cfg && cfg.top && cfg.top.granted) && !ANY_PAGE_FRAMES.has((ns.pickAdapter(location, cfg, document) || {}).name)) return;
    adapter = ns.pickAdapter(location, cfg, document);
    if (adapter) return loadConfig(cfg);
    let tries = 0;
    const mo = new MutationObserver(() => {
      if (adapter) return;
      adapter = ns.pickAdapter(location, cfg, document);
      // found late: fetch the config again, it may have changed meanwhile
      if (adapter) { mo.disconnect(); loadConfig(); } else if (++tries > 2000) mo.disconnect();
    });
    mo.observe(document.documentElement, { childList: true, subtree: true });
  }

  ns.debugState = () => ({ adapter: adapter && adapter.name, cfg, status: lastStatus, page: { ...page } });
  boot().catch((err) => console.warn("modlens: content script could not start:", err && err.message));
})();
