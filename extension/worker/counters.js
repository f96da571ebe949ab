// Counts shown in the popup (saved/scored/rated/errors in total), the comments this
// browser rated ("platform|key" -> {at, values}) and, for comments sent from a study's task
// page, that page's id (task progress = rated comments per task page). Totals are saved at
// most every 300 ms: they change with every scored comment.
(function (ns) {
  const store = chrome.storage.local;
  let saveTimer = null;

  const counters = {
    // media_*: images attached to comments (worker/media.js): sent (on the socket), scored (logged),
    // failed (fetch, size or type), skipped (over media.max_per_comment)
    // saved: comments whose rows the daemon acknowledged (comments_ok); scored: those a detector
    // scored; both the sizes of `counted` (countComments). rated: ratings it acknowledged
    totals: { saved: 0, scored: 0, rated: 0, errors: 0, media_sent: 0, media_scored: 0, media_failed: 0, media_skipped: 0 },
    rated: {},
    taskPageOf: {}, // "platform|key" -> task page id (lib/tasks.js pageId)
    // study id -> {saved: Set, scored: Set} of study-log comment ids (comments_ok.comment_ids,
    // scores items[].comment_id): a comment sent again (its page loaded again, a resend after a lost
    // answer, a worker restart) is the same row and counts once. Stored as "countedComments".
    counted: {},

    async load() {
      const got = await store.get(["totals", "rated", "taskPageOf", "countedComments"]);
      // `sent` (comments put in the outbox, whatever became of them) and `found` (never counted)
      // were stored by earlier versions: not shown as anything. Their `saved` and `scored` counted
      // a comment again each time it was sent: replaced by the distinct comments stored here.
      const kept = { ...(got.totals || {}) };
      delete kept.sent;
      delete kept.found;
      this.totals = { ...this.totals, ...kept };
      this.counted = {};
      for (const [study, ids] of Object.entries(got.countedComments || {})) {
        this.counted[study] = { saved: new Set(ids.saved || []), scored: new Set(ids.scored || []) };
      }
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
      const sets = this.counted[study] || (this.counted[study] = { saved: new Set(), scored: new Set() });
      let added = 0;
      for (const id of ids) {
        if (Number.isInteger(id) && !sets[kind].has(id)) { sets[kind].add(id); added += 1; }
      }
      if (!added) return;
      this.totals[kind] += added;
      const stored = Object.fromEntries(Object.entries(this.counted).map(([s, v]) => [s, { saved: [...v.saved], scored: [...v.scored] }]));
      await store.set({ countedComments: stored, totals: this.totals });
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
