// Counts shown in the popup (saved/scored/rated/errors in total), the comments this
// browser rated ("platform|key" -> {at, values}) and, for comments sent from a study's task
// page, that page's id (task progress = rated comments per task page). Totals are saved at
// most every 300 ms: they change with every scored comment.
(function (ns) {
  const store = chrome.storage.local;
  let saveTimer = null;
  // The counted comment ids are appended, one storage key per batch of ids newly counted
  // ("cc:kind:study:first id" -> {kind, study, ids}), never rewritten: a participant sees thousands
  // of comments, and an ack must not rewrite all of them. An id is in at most one batch of its
  // kind and study (only ids not counted yet are written), so a batch's first id names it alone.
  const BATCH = "cc:";
  const LEGACY = "countedComments"; // {study: {saved: [ids], scored: [ids]}}, rewritten whole on every ack
  const batchKey = (kind, study, ids) => `${BATCH}${kind}:${study}:${ids[0]}`;

  const counters = {
    // media_*: images attached to comments (worker/media.js): sent (on the socket), scored (logged),
    // failed (fetch, size or type), skipped (over media.max_per_comment)
    // saved: comments whose rows the daemon acknowledged (comments_ok); scored: those a detector
    // scored; both the sizes of `counted`, recomputed on load (countComments). rated: ratings it acknowledged
    totals: { saved: 0, scored: 0, rated: 0, errors: 0, media_sent: 0, media_scored: 0, media_failed: 0, media_skipped: 0 },
    rated: {},
    taskPageOf: {}, // "platform|key" -> task page id (lib/tasks.js pageId)
    // study id -> {saved: Set, scored: Set} of study-log comment ids (comments_ok.comment_ids,
    // scores items[].comment_id): a comment sent again (its page loaded again, a resend after a lost
    // answer, a worker restart) is the same row and counts once. Stored as "cc:" batches (above).
    counted: {},

    async load() {
      const got = await store.get(null);
      // `sent` (comments put in the outbox, whatever became of them) and `found` (never counted)
      // were stored by earlier versions: not shown as anything. Their `saved` and `scored` counted
      // a comment again each time it was sent: replaced by the distinct comments stored here.
      const kept = { ...(got.totals || {}) };
      delete kept.sent;
      delete kept.found;
      this.totals = { ...this.totals, ...kept };
      this.counted = {};
      for (const [key, batch] of Object.entries(got)) {
        if (key.startsWith(BATCH) && batch && Array.isArray(batch.ids) && (batch.kind === "saved" || batch.kind === "scored")) {
          for (const id of batch.ids) this.setsOf(batch.study)[batch.kind].add(id);
        }
      }
      if (got[LEGACY]) await this.migrate(got[LEGACY]);
      for (const kind of ["saved", "scored"]) {
        this.totals[kind] = Object.values(this.counted).reduce((n, sets) => n + sets[kind].size, 0);
      }
      this.rated = got.rated || {};
      this.taskPageOf = got.taskPageOf || {};
    },

    /** Count the comments `ids` (study-log comment ids) as `kind` ("saved" or "scored") in the
     *  running study, each once ever; stored, with the totals, before it returns. */
    async countComments(kind, ids) {
      const study = (ns.config.study && ns.config.study.study_id) || "";
      const counted = this.setsOf(study)[kind];
      const fresh = [];
      for (const id of ids) {
        if (Number.isInteger(id) && !counted.has(id)) { counted.add(id); fresh.push(id); }
      }
      if (!fresh.length) return;
      this.totals[kind] += fresh.length;
      try {
        await store.set({ [batchKey(kind, study, fresh)]: { kind, study, ids: fresh }, totals: this.totals });
      } catch (err) {
        // not stored, not counted: the message stays in the outbox, and its next ack counts these
        for (const id of fresh) counted.delete(id);
        this.totals[kind] -= fresh.length;
        throw err;
      }
    },

    setsOf(study) {
      return this.counted[study] || (this.counted[study] = { saved: new Set(), scored: new Set() });
    },

    /** Ids stored by versions that kept them as one collection: written as batches, then dropped
     *  (stopped in between, the next start reads both and writes the same batches again). */
    async migrate(legacy) {
      const batches = {};
      for (const [study, lists] of Object.entries(legacy)) {
        for (const kind of ["saved", "scored"]) {
          const ids = (lists[kind] || []).filter(Number.isInteger);
          for (const id of ids) this.setsOf(study)[kind].add(id);
          if (ids.length) batches[batchKey(kind, study, ids)] = { kind, study, ids };
        }
      }
      try {
        await store.set(batches);
        await store.remove(LEGACY);
      } catch (err) { // counted all the same; the old collection is read again next start
        console.error("modlens: could not move the counted comment ids", String(err));
      }
    },

    saveSoon() {
      clearTimeout(saveTimer);
      saveTimer = setTimeout(() => store.set({ totals: this.totals }), 300);
    },

    /** This browser's rating of a comment in the running study (one made for another study is
     *  not a rating in this one; entries stored before ratings named their study count as this one's). */
    ratingOf(platform, key) {
      const r = this.rated[ns.commentKey(platform, key)];
      return r && this.inStudy(r) ? r : null;
    },

    inStudy(r) {
      const study = ns.config.study && ns.config.study.study_id;
      return !r.study || !study || r.study === study;
    },

    /** "platform|key" -> rating, for the running study's comments only (task progress). */
    ratedInStudy() {
      return Object.fromEntries(Object.entries(this.rated).filter(([, r]) => this.inStudy(r)));
    },

    /** A rating of this comment is in the outbox (`id`: its message id); `saved` once the daemon
     *  acknowledged it (ratingSaved). Calibration, item set and task progress count it from here. */
    async markRated(platform, key, values, id) {
      const study = ns.config.study ? ns.config.study.study_id : null;
      this.rated[ns.commentKey(platform, key)] = { at: Date.now(), values, id, study, saved: false };
      await store.set({ rated: this.rated });
    },

    async ratingSaved(platform, key, id) {
      const r = this.rated[ns.commentKey(platform, key)];
      if (!r || r.id !== id || r.saved) return;
      r.saved = true;
      await store.set({ rated: this.rated });
    },

    /** The daemon refused rating `id` for good: the comment is not rated (unless rated again since). */
    async forgetRating(platform, key, id) {
      const k = ns.commentKey(platform, key);
      if (!this.rated[k] || this.rated[k].id !== id) return;
      delete this.rated[k];
      await store.set({ rated: this.rated });
    },

    /** Remember that these comments were sent from task page `pageId`. */
    async onTaskPage(platform, keys, pageId) {
      let changed = false;
      for (const key of keys) {
        const k = ns.commentKey(platform, key);
        if (this.taskPageOf[k] !== pageId) { this.taskPageOf[k] = pageId; changed = true; }
      }
      if (changed) await store.set({ taskPageOf: this.taskPageOf });
    },
  };

  ns.counters = counters;
})(globalThis.modlens);
