// The shapes of the messages the extension's parts send each other (chrome.runtime and
// chrome.tabs messaging): one builder per message, used by sender and receiver alike.
(function (root) {
  const ns = (root.modlens = root.modlens || {});
  const M = ns.MSG;

  ns.messages = {
    // content script → worker
    contentHello: () => ({ type: M.contentHello }),
    /** page: {url, platform, page_key, title}; items: ns.contentComment(record) each (lib/protocol.js) */
    comments: (site, page, items) => ({ type: M.comments, site, page, items }),
    /** comment: {platform, key}; answer: {values, anchors, time_spent_ms} (content/ui.js);
     *  itemsetRef: the item's ref when rated on the item-set page (itemset.html) */
    rate: (comment, answer, itemsetRef) => ({ type: M.rate, comment: { platform: comment.platform, key: comment.key },
      values: answer.values, anchors: answer.anchors || null, time_spent_ms: answer.time_spent_ms,
      ...(itemsetRef ? { itemset_ref: itemsetRef } : {}) }),
    /** revision: that of the config the page holds (contentHello's answer); answered {ok, stale} */
    pageStatus: (status, revision) => ({ type: M.pageStatus, status, revision }),

    // popup, options, calibration → worker
    getState: (tabId) => (tabId == null ? { type: M.getState } : { type: M.getState, tabId }),
    setSettings: (settings) => ({ type: M.setSettings, settings }),
    /** consentText: the text the page showed (accepting counts only while it is the study's text). */
    consent: (accept, studyId, consentText) => ({ type: M.consent, accept, study_id: studyId, consent_text: consentText }),
    reconnect: () => ({ type: M.reconnect }),
    deadLetters: () => ({ type: M.deadLetters }),
    /** pack: the .modlens file's text; replace: leave the study joined before */
    joinStudy: (pack, fileName, replace) => ({ type: M.joinStudy, pack, file_name: fileName, replace: !!replace }),

    // worker → content script
    /** items: [{key, sampled, detectors: {k: {name, version, toxicity, error}}, rated}] */
    scores: (items) => ({ type: M.scores, items }),
    ratingOk: (comment, derived, inconsistent) => ({ type: M.ratingOk, comment, derived_toxicity: derived, inconsistent }),
    /** the daemon refused the rating for good (a dead letter): the comment is not rated */
    ratingRefused: (comment, code, message) => ({ type: M.ratingRefused, comment, code, message }),
    configChanged: () => ({ type: M.configChanged }),

    // worker → popup / options / calibration (broadcast)
    state: (state) => ({ type: M.state, state }),
    counts: (totals) => ({ type: M.counts, totals }),
  };

  // Why no rating is taken now, in the worker's refusal and on the markers that say so beforehand
  // (content/ui.js): one wording each.
  ns.NOT_TAKING = {
    paused: "paused: go on from the popup or the options to rate",
    siteOff: "site switched off: switch it on in the options to rate",
    frameOff: "the page's site is not switched on: switch it on from the popup to rate",
  };

  // Why no comment is taken now, as a page's status says it (content/main.js, the popup) and the
  // worker's refusal of a comment batch: one wording each (keys of ns.NOT_TAKING).
  ns.OFF_REASONS = { paused: "paused", siteOff: "site switched off", frameOff: "frame of a page whose site is not switched on" };

  /** What a rating panel (a marker's, the calibration and item-set pages') says of an answer the
   *  worker did not take: `res` is its answer to `rate`, or {error} when it could not be asked. */
  ns.ratingNotTakenText = (res) => {
    if (!res || res.error) return `Not saved: ${(res && res.error) || "no answer from the extension"}`;
    return `Not saved: the extension did not take this rating: ${res.reason || "no reason given"}`;
  };

  // Pages refresh on either broadcast.
  ns.isStateBroadcast = (msg) => !!msg && (msg.type === M.state || msg.type === M.counts);

  // A content script runs inside a web page that may be hostile (and may have subverted it), so
  // it may send only comment and rating traffic. Everything else — the state with the settings,
  // settings (daemon address, token), consent, joining a study, reconnecting, dead letters —
  // is accepted from the extension's own pages only.
  ns.CONTENT_SCRIPT_MESSAGES = new Set([M.contentHello, M.comments, M.rate, M.pageStatus]);

  /** The sender is a page of this extension (popup, options, calibration…), not a content script:
   *  the browser sets `sender.url` to the frame's own URL, a web page's for a content script. */
  ns.fromExtensionPage = (sender, runtime) => !!sender && sender.id === runtime.id
    && typeof sender.url === "string" && sender.url.startsWith(runtime.getURL(""));

  /** This extension's origin (`chrome-extension://<id>`, `moz-extension://<uuid>`): the daemon's
   *  pairing names it (`modlens pair --extension`). */
  ns.extensionOrigin = (runtime) => runtime.getURL("").replace(/\/+$/, "");

  /** Whether the worker may act on `msg` from `sender` (runtime: chrome.runtime). */
  ns.senderMayAsk = (msg, sender, runtime) => ns.fromExtensionPage(sender, runtime)
    || (!!sender && sender.id === runtime.id && ns.CONTENT_SCRIPT_MESSAGES.has(msg && msg.type));

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
