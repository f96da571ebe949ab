// What the worker answers to content scripts and to its own pages (popup, options,
// calibration): a handler map; every handler runs after the stored state is loaded.
(function (ns) {
  const { config, connection, counters, delivery, tabs } = ns;

  // The top-level page of the frame asking (a comment iframe's adapter is keyed by the site the
  // participant enabled, not by the frame's own host). `tab.url` is only visible where the
  // extension has access to the tab's site; `granted`: that site is built in or switched on.
  async function topPage(sender) {
    const url = sender && sender.tab && sender.tab.url;
    const site = url && ns.sitePattern(url);
    if (!site) return null;
    const granted = await chrome.permissions.contains({ origins: [site] }).catch(() => false);
    return { url, site, granted, frame: !!(sender.frameId && sender.frameId !== 0) };
  }

  // What a content script is told of the config, but for its top-level page (contentConfig).
  function pageConfig() {
    const study = config.study;
    return {
      consented: config.consented(), paused: config.settings.paused, sites: config.settings.sites, display: config.displayMode(),
      study: study && { study_id: study.study_id, attributes: study.attributes, toxicity_mode: study.toxicity_mode,
        anchors: study.anchors, max_comment_chars: study.max_comment_chars },
      customSelectors: config.settings.customSelectors || [],
      timings: config.timings || {},
    };
  }

  // The revision of a page config is a 64-bit hash of the config written out with its keys in order
  // (lib/hash.js hash64, as derived comment keys): a page holding another
  // one finds out when it next reports its status (a page that asked just before a change may not be
  // among the tabs told of it). Derived, not kept: whatever changes what a page is told changes it,
  // and nothing else does (a worker restart, a hello_ok of the same study). A hash, not the text:
  // every status report carries it back, and the text holds the study's anchors and attributes.
  const revisionOf = (cfg) => {
    const text = JSON.stringify(cfg, (k, v) => (v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.keys(v).sort().map((key) => [key, v[key]])) : v));
    return ns.hash64("page-config", "page-config", text);
  };

  async function contentConfig(msg, sender) {
    const cfg = pageConfig(); // read first: a change during the await below makes it stale, not silent
    return { revision: revisionOf(cfg), top: await topPage(sender), ...cfg };
  }

  // Calibration round (calibration.html): the study's gold comments, rated like any comment but
  // on platform "study". Done = the rating is in the outbox or saved; one the daemon refused for
  // good (a dead letter) is forgotten (delivery.refused), so its comment comes back.
  function calibrationState() {
    // review: attack texts queued for the human check (`modlens study add-attacks`), rated the same way
    const gold = [...((config.study && config.study.gold) || []), ...((config.study && config.study.review) || [])];
    const items = gold.map((g) => ({ key: g.key, text: g.text, done: !!counters.ratingOf("study", g.key) }));
    return { total: items.length, done: items.filter((i) => i.done).length, items };
  }

  // The item set (itemset.html): the assignment the daemon gave this rater at hello
  // (study/assignment.py), in its order, gold comments among them. Done: as in the calibration round.
  function itemsetState() {
    const set = config.study && config.study.itemset;
    if (!set || !Array.isArray(set.items)) return null;
    const items = set.items.map((i) => ({ ref: i.ref, platform: i.platform, key: i.key, text: i.text,
      done: !!counters.ratingOf(i.platform, i.key) }));
    return { assignment: set.assignment, task: set.task, slot: set.slot, slots: set.slots,
      total: items.length, done: items.filter((i) => i.done).length, items };
  }

  // The study's task pages with this browser's progress; `free_browsing` false: comments are
  // sent from task pages only (the study's choice, so every rating overlaps with others').
  function tasksState() {
    const study = config.study;
    const progress = ns.taskProgress((study && study.tasks) || [], counters.taskPageOf, counters.ratedInStudy());
    return { ...progress, freeBrowsing: !study || study.free_browsing !== false };
  }
  const NOT_A_TASK = "not a task page: this study collects comments on its task pages only";

  // The participant's withdrawal from the running study, as the worker keeps it (config.withdrawals,
  // stored with the consent's removal): a page says it after a reload too. `recorded`: this
  // connection's hello carried it and the daemon answered (it writes the withdrawal before hello_ok).
  function withdrawalState() {
    const w = config.withdrawalToSend();
    return w && { ...w, recorded: connection.status === "ready" && connection.helloCarried(w) };
  }

  // The state the extension's pages show (get_state, and the broadcast on every change). It holds
  // no secret: not the pairing token (only whether one is set) nor the study's author salt.
  ns.publicState = function publicState(tabId) {
    const { token, ...settings } = config.settings;
    const study = config.study && { ...config.study };
    if (study) delete study.author_salt;
    return {
      conn: connection.status, lastError: connection.lastError, consented: config.consented(), paused: config.settings.paused,
      study, detectors: config.detectors, consent: config.consent, withdrawal: withdrawalState(), settings: { ...settings, tokenSet: !!token },
      extensionOrigin: ns.extensionOrigin(chrome.runtime), // what `modlens pair --extension` takes
      totals: delivery.totals(), pages: tabs.statuses(tabId), display: config.displayMode(),
      calibration: calibrationState(), tasks: tasksState(), itemset: itemsetState(), variants: connection.variants,
    };
  };

  function sendSoon() {
    connection.ensure();
    delivery.flush(false);
    delivery.broadcastCounts();
  }

  async function queueComments(msg, sender) {
    // a comment frame under a page whose site is not switched on (switched off before the frame heard):
    // asked first, so that the checks below read the config in one turn
    const underSiteOff = await frameOff(msg.site, sender);
    if (!config.siteActive(msg.site)) return { queued: false, reason: config.consented() ? "paused or site switched off" : "consent needed" };
    if (underSiteOff) return { queued: false, reason: ns.OFF_REASONS.frameOff };
    const task = ns.taskFor(config.study.tasks, msg.page.url);
    if (!task && config.study.free_browsing === false) return { queued: false, reason: NOT_A_TASK };
    const salt = await config.authorSalt();
    const route = tabs.routeFrom(sender, msg.page.platform);
    const items = [];
    for (const it of msg.items) items.push(ns.protocol.commentItem(it, await ns.hashAuthor(it.author, salt)));
    const page = ns.protocol.page(msg.page);
    const ids = [];
    for (const message of ns.protocol.comments(page, items)) {
      await delivery.queue(message, route);
      ids.push(message.id);
    }
    // attached images follow their comment, fetched here (media.collect studies only); the text
    // above is already queued and never waits for them
    if (config.study.media && config.study.media.collect) {
      for (const it of msg.items) {
        if (Array.isArray(it.media) && it.media.length) ns.commentMedia.queueCommentMedia(page.platform, String(it.key), it.media.map(String), route);
      }
    }
    if (task) await counters.onTaskPage(page.platform, items.map((i) => i.key), ns.pageId(task.url));
    // counted as saved when the daemon acknowledges their rows (daemon_messages.js), not here
    sendSoon();
    return { queued: true, ids };
  }

  // The assignment a rating from the item-set page was made in: its rating id names it (as a
  // survey row's names its slot), else a participant who rated only its gold comments could not be
  // tied to the task (study/acceptance.py). Only an item of this rater's assignment, by ref and comment.
  function itemsetSlot(msg) {
    const set = config.study && config.study.itemset;
    if (!set || typeof msg.itemset_ref !== "string" || !Array.isArray(set.items)) return null;
    const item = set.items.find((i) => i.ref === msg.itemset_ref);
    const same = item && msg.comment && item.platform === msg.comment.platform && item.key === msg.comment.key;
    // an id is at most 128 characters (the protocol's MAX_ID_CHARS): `<slot>:r-<uuid>` leaves 89 for the slot
    return same && typeof set.assignment === "string" && set.assignment && set.assignment.length <= 89 ? set.assignment : null;
  }

  // A comment frame is taken from only under a top-level page whose site is switched on (Disqus's
  // frame: under any page, sites table), as content/main.js frameAllowed decides for its markers.
  async function frameOff(platform, sender) {
    if (!sender || !sender.frameId || ns.ANY_PAGE_FRAMES.includes(platform)) return false;
    const top = await topPage(sender); // null: the extension cannot see the page, its site is not on
    return !(top && top.granted);
  }

  async function queueRating(msg, sender) {
    // asked first, so that the checks below and the message read the config in one turn
    const underSiteOff = !ns.fromExtensionPage(sender, chrome.runtime) && await frameOff(msg.comment && msg.comment.platform, sender);
    if (!config.consented()) return { queued: false, reason: "consent needed" };
    // paused: nothing new is collected, a rating neither (the marker says paused; one saved just
    // before the page heard of the pause is refused here, and its panel says why)
    if (config.settings.paused) return { queued: false, reason: ns.NOT_TAKING.paused };
    // a site switched off takes no rating from its pages either: markers shown before the switch say
    // so (content/ui.js); the extension's own pages (calibration, item set) rate on no site
    if (!ns.fromExtensionPage(sender, chrome.runtime) && config.settings.sites[msg.comment && msg.comment.platform] === false) {
      return { queued: false, reason: ns.NOT_TAKING.siteOff };
    }
    // a comment frame under a page whose site is not switched on (or was switched off before the
    // frame heard): its markers' Rate is disabled, and one saved before that is refused here
    if (underSiteOff) return { queued: false, reason: ns.NOT_TAKING.frameOff };
    // the study it is given in (consented() holds: the running one): the message names it to the daemon,
    // which stores it in no other; the outbox keeps it for the same study (queue reads it in this turn)
    const message = ns.protocol.rating(msg.comment, msg, itemsetSlot(msg), config.study.study_id);
    const comment = message.comment;
    // the outbox write decides: a failure is the page's "Not saved", and nothing is sent or marked;
    // once it is stored, marking it writes nothing and cannot fail
    counters.markRated(await delivery.queue(message, tabs.routeFrom(sender, comment.platform)));
    sendSoon();
    return { queued: true, id: message.id };
  }

  const M = ns.MSG;
  const route = ns.makeRouter({
    [M.contentHello]: contentConfig,
    [M.comments]: queueComments,
    [M.rate]: queueRating,
    async [M.pageStatus](msg, sender) {
      await tabs.setStatus(sender, msg.status); // saved before the answer: the worker may stop after it
      // stale: the config changed since the page asked for it, perhaps before its tab was known to
      // tabs.configChanged; the page asks again and reports what now holds it back
      return { ok: true, stale: msg.revision !== revisionOf(pageConfig()) };
    },
    [M.getState]: (msg) => {
      connection.askStatus(); // its answer comes as a state broadcast
      return ns.publicState(msg.tabId);
    },
    async [M.setSettings](msg) {
      if (await config.updateSettings(msg.settings)) connection.reconnectNow();
      tabs.configChanged();
      // going on after a pause: what waited in the outbox goes now
      if (!config.settings.paused) delivery.flush(false);
      // every open extension page shows the settings as they are now, not only the one that set them
      const state = ns.publicState();
      tabs.broadcast(ns.messages.state(state));
      return state;
    },
    async [M.consent](msg) {
      if (!config.study || msg.study_id !== config.study.study_id) return { ok: false, error: "study changed; reload the consent text" };
      // the participant agrees to the text the page showed: not to one that replaced it meanwhile
      if (msg.accept && msg.consent_text !== config.study.consent_text) return { ok: false, error: "the consent text changed; read it again" };
      await config.setConsent(msg.accept, msg.study_id);
      // a withdrawal takes back what waits to be sent too (set aside, counted: the popup says how many)
      if (!msg.accept) await delivery.setAsideWithdrawn(msg.study_id);
      connection.reconnectNow(); // the daemon records consent_at at hello
      tabs.configChanged();
      return { ok: true, consent: config.consent };
    },
    [M.reconnect]() {
      connection.reconnectNow();
      return { ok: true };
    },
    [M.deadLetters]: () => delivery.outbox.dead(),
    // The options page opened a study pack: the daemon checks it, joins it and restarts on it;
    // the next hello_ok then brings the new study (and its consent text).
    async [M.joinStudy](msg) {
      if (typeof msg.pack !== "string" || !msg.pack || msg.pack.length > ns.MAX_PACK_BYTES) return { ok: false, error: "That file is not a study pack." };
      if (!connection.ready()) return { ok: false, error: "Not connected to the daemon: start `modlens serve` (without --config), then try again." };
      const answer = await connection.request(ns.protocol.joinStudy(msg.pack, msg.file_name, msg.replace), ns.JOIN_TIMEOUT_MS);
      if (answer.type !== "join_study_ok") return { ok: false, error: answer.message || "the daemon refused the pack", code: answer.code };
      if (answer.restarting) connection.backoff = ns.BACKOFF_MIN_MS; // back as soon as it listens again
      return { ok: true, study_id: answer.study_id, title: answer.title, tasks: answer.tasks, restarting: answer.restarting,
        signer: answer.signer, remote_off: Array.isArray(answer.remote_off) ? answer.remote_off : [] };
    },
  }, (msg) => ({ error: `unknown message ${msg && msg.type}` }));

  // Content scripts send comment and rating traffic only (lib/messages.js senderMayAsk).
  ns.onPageMessage = (msg, sender) => (ns.senderMayAsk(msg, sender, chrome.runtime) ? route(msg, sender)
    : { error: `${String(msg && msg.type).slice(0, 40)} is accepted from the extension's own pages only` });
})(globalThis.modlens);
