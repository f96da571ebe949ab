// Every message the extension sends to the daemon, built in one place (docs/PROTOCOL.md; the
// daemon's models: modlens.protocol.messages). tests/test_extension_protocol.py runs these
// builders under node and validates each output with the pydantic models, so a field renamed on
// either side fails a test instead of a participant's session. Pure: no `chrome`, no socket.
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  // The fields of a comment as the content script found it (content/observer.js records) that
  // travel to the worker: the one list, used by content/main.js and read back by the worker.
  ns.CONTENT_COMMENT_FIELDS = ["key", "text", "author", "parent_key", "parent_via", "time_shown", "media"];

  /** A content-script record as the comment the worker receives (no empty fields, no DOM). */
  ns.contentComment = function contentComment(record) {
    const out = {};
    for (const f of ns.CONTENT_COMMENT_FIELDS) {
      const v = record[f];
      if (v != null && v !== "" && !(Array.isArray(v) && !v.length)) out[f] = v;
    }
    return out;
  };

  ns.protocol = {
    /** hello: the first message of a session. consent: {study_id, at, sha256} when the participant agreed;
     *  withdrawal: {study_id, at} when they withdrew it since (config.withdrawalToSend). */
    hello: ({ token, raterId, consent, withdrawal }) => {
      const msg = { type: "hello", id: ns.newId("hello"), protocol: ns.PROTOCOL, client: ns.CLIENT_NAME,
        client_version: ns.VERSION, token, rater_id: raterId };
      // consent goes with the study it was given to, while that is the study the daemon runs, and names
      // the text agreed to (its SHA-256): the daemon counts it only for its current consent text
      if (consent) { msg.study_id = consent.study_id; msg.consent_at = consent.at; msg.consent_sha256 = consent.sha256; }
      // the daemon records it on the rater's consents and leaves their data out of bundles
      else if (withdrawal) { msg.study_id = withdrawal.study_id; msg.consent_withdrawn_at = withdrawal.at; }
      return msg;
    },
    ping: () => ({ type: "ping", id: ns.newId("ping") }),
    /** status: the daemon answers status_ok (the popup shows its live-variant counts). */
    status: () => ({ type: "status", id: ns.newId("status") }),
    /** sync: sync_ok once the rows behind the answers this connection got are on disk (`modlens feed`
     *  sends it; the worker has no need: it drops a page from its outbox on comments_ok). */
    sync: () => ({ type: "sync", id: ns.newId("sync") }),

    /** One CommentItem from a comment the content script sent (contentComment) and its author hash. */
    commentItem: (comment, authorHash) => {
      const item = { key: String(comment.key), text: comment.text };
      if (comment.parent_key) item.parent_key = String(comment.parent_key);
      if (comment.parent_via) item.parent_via = String(comment.parent_via); // how the content script found the parent
      if (comment.time_shown) item.time_shown = comment.time_shown;
      if (authorHash) item.author_hash = authorHash;
      return item;
    },
    /** The page of a comments message: {url, platform, page_key, title}. */
    page: (p) => ({ url: p.url, platform: p.platform, page_key: p.page_key, title: p.title || "" }),
    /** comments: one message per ns.CHUNK_ITEMS items (the daemon's per-message limit is higher). */
    comments: (page, items) => {
      const out = [];
      for (let i = 0; i < items.length; i += ns.CHUNK_ITEMS) out.push({ type: "comments", id: ns.newId("c"), page, items: items.slice(i, i + ns.CHUNK_ITEMS) });
      return out;
    },
    /** rating: comment {platform, key}; answer {values, anchors?, time_spent_ms?} (content/ui.js).
     *  `slot`: the item-set assignment it was rated in: the id is `<slot>:r-<uuid>`, as `modlens
     *  rate` names a survey row's slot, so the review (study/acceptance.py) ties it to its task.
     *  `studyId`: the study it was given in (whose consent and attributes the participant saw): the
     *  daemon refuses it (study_mismatch) rather than store it in another study it runs by then. */
    rating: (comment, answer, slot, studyId) => ({ type: "rating", id: slot ? `${slot}:${ns.newId("r")}` : ns.newId("r"),
      comment: { platform: comment.platform, key: String(comment.key) },
      values: answer.values, anchors: answer.anchors || null, time_spent_ms: Math.max(0, Math.round(answer.time_spent_ms || 0)),
      ...(studyId ? { study_id: String(studyId) } : {}) }),
    /** comment_media: images [{mime, sha256, data_b64, url, position}] of one comment. */
    commentMedia: (platform, commentKey, images) => ({ type: "comment_media", id: ns.newId("m"), platform, comment_key: commentKey,
      items: images.map(({ mime, sha256, data_b64, url, position }) => ({ mime, sha256, data_b64, url, position })) }),
    /** join_study: a study pack's text, as the options page read it from the file. */
    joinStudy: (pack, fileName, replace) => ({ type: "join_study", id: ns.newId("join"), pack,
      file_name: String(fileName || "").slice(0, 255), replace: !!replace }),
  };

  /** Whether a detector scored this `scores` item (a number from at least one): a blank text
   *  (`not_scored`) or a comment every detector failed on is answered too, with none. */
  ns.wasScored = function wasScored(item) {
    return Object.values((item && item.detectors) || {}).some((d) => d && typeof d.toxicity === "number");
  };

  /** The live-variant counts of a status_ok answer (its queue.variants, live/variants.py), for
   *  every connection of the daemon together; null when the daemon gives none. */
  ns.daemonVariants = function daemonVariants(statusOk) {
    const v = statusOk && statusOk.queue && statusOk.queue.variants;
    if (!v || typeof v !== "object") return null;
    const n = (x) => (Number.isInteger(x) && x >= 0 ? x : 0);
    return { made: n(v.done), waiting: n(v.queued), deferred: n(v.deferred), failed: n(v.failed) };
  };

  /** The popup's line for `daemonVariants`; "" when there is nothing to say. */
  ns.variantsLine = function variantsLine(v) {
    if (!v) return "";
    return `variants (whole daemon): ${v.made} made · ${v.waiting} waiting · ${v.deferred} deferred`
      + (v.failed ? ` · ${v.failed} failed` : "") + (v.deferred ? " (`modlens rescore --variants` makes the deferred ones)" : "");
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
