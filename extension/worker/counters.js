// Counts shown in the popup (saved/scored/rated/errors in total), the comments this
// browser rated ("platform|key" -> {at, values}) and, for comments sent from a study's task
// page, that page's id (task progress = rated comments per task page). Totals are saved at
// most every 300 ms: they change with every scored comment.
(function (ns) {
  const store = chrome.storage.local;
  let saveTimer = null;
  // What the counts and marks rest on is appended, one storage key per write
  // ("cc:kind:study:name" -> {kind, study, ids, ...}), never one list rewritten whole: a participant
  // sees thousands of comments, and an ack or a rating must not rewrite all of them.
  // - saved, scored, rated, media_*: ids newly counted (study-log comment ids; for rated, the ids of the
  //   rating messages the daemon acknowledged; for images, IMAGES below). An id is in at most one batch of its kind and study
  //   (only ids not counted yet are written), so a batch's first id names it alone.
  // - rating: one acknowledged rating as answered ({comment, at, values}), named by its message id
  //   (unique), written with the `rated` batch that counts it. A rating not acknowledged yet is its
  //   outbox entry (lib/outbox.js), the one write that decides whether it is delivered: marked from
  //   there, it is marked exactly while it may still reach the log (a refused one is buried, gone).
  //   The latest of a comment's ratings is its rating.
  // - taskPage: comments newly sent from task page `page`, named by the write's `seq`: a comment can
  //   move to another page, so it may be in several batches, and the latest (highest seq) wins.
  const BATCH = "cc:";
  // images attached to comments (worker/media.js), each once per study however often its page is
  // observed and its images fetched and sent again: sent and logged named by their comment and bytes
  // (sha256), failed, over the limit and dropped by their comment and place among its images (no bytes read)
  const IMAGES = ["media_sent", "media_scored", "media_failed", "media_skipped", "media_not_taken"];
  const COUNTED = ["saved", "scored", "rated", ...IMAGES];
  const batchKey = (kind, study, name) => `${BATCH}${kind}:${study || ""}:${name}`;
  // the one list each that earlier versions rewrote whole on every change: moved to records on load
  const LEGACY = ["countedComments", "rated", "taskPageOf"];
  const named = (id) => typeof id === "string" && id.length > 0;
  const countable = { saved: Number.isInteger, scored: Number.isInteger, rated: named, ...Object.fromEntries(IMAGES.map((k) => [k, named])) };
  // a rating's order among its comment's: its outbox entry's seq (write order; load keeps the outbox
  // numbering on after every stored rating), not the wall clock, which can be set back; `at` only
  // orders ratings moved from the lists of earlier versions (seq 0)
  const later = (a, b) => (a.seq - b.seq) || (a.entry.at - b.entry.at);
  const runningStudy = () => (ns.config.study && ns.config.study.study_id) || "";

  const counters = {
    // media_*: distinct images attached to comments (worker/media.js, IMAGES above): sent (on the
    // socket), scored (logged), failed (fetch, size or type), skipped (over media.max_per_comment),
    // not_taken (fetched after capture stopped: paused, consent withdrawn, site switched off); like
    // saved and scored, recomputed from `counted` on load
    // saved: comments whose rows the daemon acknowledged (comments_ok); scored: those a detector
    // scored; rated: ratings it acknowledged (rating_ok), ratedBefore + those counted by id; all
    // recomputed from `counted` on load (countComments)
    totals: { saved: 0, scored: 0, rated: 0, errors: 0, media_sent: 0, media_scored: 0, media_failed: 0, media_skipped: 0, media_not_taken: 0 },
    // ratings acknowledged by versions that counted them without their ids (their stored `rated`
    // total), kept in every totals write as `rated_before`
    ratedBefore: 0,
    rated: {}, // "platform|key" -> the latest rating of it {at, values, id, study, saved}
    ratings: new Map(), // rating message id -> {comment, seq, entry}: every acknowledged or pending rating
    taskPageOf: {}, // "platform|key" -> task page id (lib/tasks.js pageId)
    // study id -> {saved: Set, scored: Set, rated: Set} of study-log comment ids (comments_ok.comment_ids,
    // scores items[].comment_id) and acknowledged rating ids: a comment sent again (its page loaded
    // again, a resend after a lost answer, a worker restart) is the same row and counts once, and a
    // rating answered again (duplicate) is the same rating. Stored as "cc:" batches (above).
    counted: {},
    seq: 0, // the last write sequence number used by taskPage batches
    // "kind:study:id" -> a promise settled once the write counting that id held or failed
    // (countComments): an id in it is counted in `counted` but maybe not stored
    writing: new Map(),
    // study id -> scored ids whose count was not stored (countScored): the daemon's `scores` message
    // is neither acknowledged nor resent, so these are kept here, in memory, until a write holds
    scoredOwed: new Map(),
    scoredRetryMs: 10000, // the wait before owed scored ids are written again when no scores message comes

    /** `got`: everything stored (store.get(null), read once at the worker's start); `outbox`: the
     *  lib/outbox.js Outbox loaded from it, whose rating entries are the ratings not acknowledged yet. */
    async load(got, outbox) {
      // `sent` (comments put in the outbox, whatever became of them) and `found` (never counted)
      // were stored by earlier versions: not shown as anything. Their `saved` and `scored` counted
      // a comment again each time it was sent, their media_* an image again each time it was
      // fetched: replaced by the distinct comments and images stored here.
      const kept = { ...(got.totals || {}) };
      this.ratedBefore = [kept.rated_before, kept.rated, 0].find(Number.isInteger);
      for (const old of ["sent", "found", "rated_before"]) delete kept[old];
      this.totals = { ...this.totals, ...kept };
      this.counted = {};
      this.ratings = new Map();
      this.taskPageOf = {};
      this.seq = 0;
      const moved = this.legacyRecords(got);
      const pages = [];
      const ratingRecords = [];
      for (const [key, rec] of Object.entries({ ...got, ...moved })) {
        if (!key.startsWith(BATCH) || !rec || !Array.isArray(rec.ids)) continue;
        this.seq = Math.max(this.seq, rec.seq || 0);
        if (COUNTED.includes(rec.kind)) {
          for (const id of rec.ids) this.setsOf(rec.study)[rec.kind].add(id);
        } else if (rec.kind === "rating") {
          ratingRecords.push(rec);
        } else if (rec.kind === "taskPage") {
          pages.push(rec);
        }
      }
      pages.sort((a, b) => (a.seq || 0) - (b.seq || 0));
      for (const rec of pages) for (const k of rec.ids) this.taskPageOf[k] = rec.page;
      // an acknowledged rating is its record (moved from an earlier version's list: `saved` says so);
      // a record of one never acknowledged (written at rating time by an earlier version) is not a
      // rating: its outbox entry is, while it waits, and nothing once it was refused for good
      for (const rec of ratingRecords) {
        if (rec.saved || this.acknowledged(rec.ids[0])) this.ratings.set(rec.ids[0], this.ratingFrom(rec, true));
      }
      for (const entry of outbox.pending()) {
        if (entry.message.type === "rating" && !this.ratings.has(entry.id)) this.ratings.set(entry.id, this.pendingRating(entry));
      }
      // an outbox emptied by acknowledgements starts its numbering again: a new rating must come after these
      outbox.numberAfter([...this.ratings.values()].reduce((max, r) => Math.max(max, r.seq), 0));
      this.rated = {};
      for (const r of [...this.ratings.values()].sort(later)) this.rated[r.comment] = r.entry;
      for (const kind of COUNTED) {
        this.totals[kind] = Object.values(this.counted).reduce((n, sets) => n + sets[kind].size, 0);
      }
      this.totals.rated += this.ratedBefore;
      if (Object.keys(moved).length) await this.moveLegacy(moved, got);
    },

    /** Count `ids` as `kind` in the running study, each once ever: "saved" or "scored" (study-log
     *  comment ids), "rated" (rating message ids); stored, with the totals and `records` (written
     *  only with ids newly counted), before it returns. Returns whether it counted any. When it
     *  returns, every one of `ids` is stored as counted, whatever the timing of the daemon's
     *  messages: an id whose write is still under way (an earlier ack's, a handler given up on after
     *  connection.handleTimeoutMs, or one on a socket left since) is waited for, and counted here
     *  if that write failed. So the caller lets the outbox drop the message only once its ids are
     *  stored. The totals (the popup) count an id once its write held. */
    async countComments(kind, ids, records = {}, study = runningStudy()) {
      const counted = this.setsOf(study)[kind];
      const key = (id) => `${kind}:${study}:${id}`;
      for (;;) { // writes still under way: their ids are neither counted nor uncounted yet
        const under = ids.filter((id) => countable[kind](id)).map((id) => this.writing.get(key(id))).filter(Boolean);
        if (!under.length) break;
        await Promise.all(under);
      }
      const fresh = [];
      for (const id of ids) {
        if (countable[kind](id) && !counted.has(id)) { counted.add(id); fresh.push(id); }
      }
      if (!fresh.length) return false;
      let done;
      const written = new Promise((resolve) => { done = resolve; });
      for (const id of fresh) this.writing.set(key(id), written);
      try {
        await store.set({ ...records, [batchKey(kind, study, fresh[0])]: { kind, study, ids: fresh },
          totals: this.storedTotals() });
        this.totals[kind] += fresh.length;
      } catch (err) {
        // not stored, not counted: the message stays in the outbox, and its next ack (or one
        // waiting for this write) counts these
        for (const id of fresh) counted.delete(id);
        throw err;
      } finally {
        for (const id of fresh) this.writing.delete(key(id));
        done();
      }
      return true;
    },

    /** Count `ids` (study-log comment ids a detector scored) as scored in the running study, and
     *  every scored id owed from before in its own study. An id whose write fails stays owed (and
     *  the error is rethrown); it is written again by the next call (the next scores message, or
     *  daemon_messages.js's retry when none comes). An owed id whose write is under way in another
     *  call is left to that call, not waited for. Owed ids live in memory only: a worker stopped
     *  first counts them when the page is sent and scored again. */
    async countScored(ids) {
      const study = runningStudy();
      if (ids.length && !this.scoredOwed.has(study)) this.scoredOwed.set(study, new Set());
      for (const id of ids) this.scoredOwed.get(study).add(id);
      let failed = null;
      for (const [owedStudy, owed] of [...this.scoredOwed]) {
        // not the ids whose write is under way in another call (one that hangs would hold this call
        // and every later scores message up): that call settles them, or leaves them owed
        const tried = [...owed].filter((id) => !this.writing.has(`scored:${owedStudy}:${id}`));
        if (!tried.length) continue;
        try {
          await this.countComments("scored", tried, {}, owedStudy);
        } catch (err) {
          failed = err;
          continue;
        }
        // stored, every one (countComments): ids owed again meanwhile stay
        for (const id of tried) owed.delete(id);
        if (!owed.size && this.scoredOwed.get(owedStudy) === owed) this.scoredOwed.delete(owedStudy);
      }
      if (failed) throw failed;
    },

    setsOf(study) {
      return this.counted[study] || (this.counted[study] = Object.fromEntries(COUNTED.map((k) => [k, new Set()])));
    },

    acknowledged(ratingId) {
      return Object.values(this.counted).some((sets) => sets.rated.has(ratingId));
    },

    /** The totals as stored: what is counted nowhere else (errors) and rated_before. Not saved,
     *  scored, rated or the images: load counts them from the cc: batches, and a number written beside
     *  a batch could be stale (two writes under way at once each hold the total they began with). */
    storedTotals() {
      const kept = Object.fromEntries(Object.entries(this.totals).filter(([k]) => !COUNTED.includes(k)));
      return { ...kept, rated_before: this.ratedBefore };
    },

    /** Count images of comment `platform`/`key` as `kind` (IMAGES) in `study`, each once ever: `parts`
     *  name them among the comment's images (sha256 of their bytes, or their place). Stored before
     *  it returns (countComments); a write that fails throws and counts nothing. */
    async countImages(kind, platform, key, parts, study = runningStudy()) {
      return this.countComments(kind, parts.map((p) => JSON.stringify([platform, String(key), p])), {}, study);
    },

    ratingFrom(rec, saved) {
      return { comment: rec.comment, seq: rec.seq || 0, entry: { at: rec.at, values: rec.values, id: rec.id, study: rec.study || null, saved } };
    },

    /** The record of the rating an outbox entry carries (its time and order: the entry's). */
    ratingRecord(entry) {
      const m = entry.message;
      return { kind: "rating", study: entry.study || null, ids: [entry.id], id: entry.id,
        comment: ns.commentKey(m.comment.platform, m.comment.key), at: entry.createdAt, values: m.values, seq: entry.seq };
    },

    pendingRating(entry) {
      return this.ratingFrom(this.ratingRecord(entry), false);
    },

    /** Records for what versions that kept one list per thing stored (each rewritten whole on every
     *  change): ratings saved then (or stored before ratings said whether) keep `saved`; comments'
     *  task pages come before any batch written since (seq 0). */
    legacyRecords(got) {
      const records = {};
      for (const [study, lists] of Object.entries(got.countedComments || {})) {
        for (const kind of ["saved", "scored"]) {
          const ids = ((lists || {})[kind] || []).filter(Number.isInteger);
          if (ids.length) records[batchKey(kind, study, ids[0])] = { kind, study, ids };
        }
      }
      for (const [comment, r] of Object.entries(got.rated || {})) {
        if (!r || r.saved === false) continue; // not acknowledged: its outbox entry is its rating
        const name = r.id || comment; // ratings stored before they kept their message id
        records[batchKey("rating", r.study, name)] = { kind: "rating", study: r.study || null, ids: [name], id: r.id,
          comment, at: r.at || 0, values: r.values, saved: r.saved !== false, seq: 0 };
      }
      const byPage = {};
      for (const [k, page] of Object.entries(got.taskPageOf || {})) (byPage[page] = byPage[page] || []).push(k);
      for (const [page, ids] of Object.entries(byPage)) {
        records[batchKey("taskPage", "", `moved-${page}`)] = { kind: "taskPage", study: "", ids, page, seq: 0 };
      }
      return records;
    },

    /** Write the records made from the old lists, then drop the lists (stopped in between, the next
     *  start reads both and writes the same records again). */
    async moveLegacy(records, got) {
      try {
        await store.set(records);
        await store.remove(LEGACY.filter((k) => k in got));
      } catch (err) { // counted all the same; the old lists are read again next start
        console.error("modlens: could not move the stored counts to records", String(err));
      }
    },

    saveSoon() {
      clearTimeout(saveTimer);
      saveTimer = setTimeout(() => store.set({ totals: this.storedTotals() }), 300);
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

    /** The rating outbox entry `entry` (delivery.queue's, stored) is its comment's rating, not
     *  acknowledged yet. Calibration, item set and task progress count it from here. Writes nothing:
     *  the entry is what a restarted worker marks it from (load). */
    markRated(entry) {
      // never demotes a rating already acknowledged (an answer that came first)
      if (!this.ratings.has(entry.id)) this.ratings.set(entry.id, this.pendingRating(entry));
      this.settle(this.ratings.get(entry.id).comment);
    },

    /** The daemon acknowledged the rating outbox entry `entry` (its first answer or a duplicate):
     *  counted once, by its id, and stored with its record in one write before it returns (the
     *  caller lets the outbox drop the entry only then). */
    async ratingSaved(entry) {
      const known = this.ratings.get(entry.id);
      if (known && known.entry.saved) return; // counted and stored with its record already
      const rec = this.ratingRecord(entry);
      const record = { [batchKey("rating", rec.study, entry.id)]: rec };
      // its id counted and stored already, without this record (by the version that stored ratings
      // apart from their count): the record alone
      if (!(await this.countComments("rated", [entry.id], record))) await store.set(record);
      this.ratings.set(entry.id, this.ratingFrom(rec, true));
      this.settle(rec.comment);
    },

    /** The daemon refused rating `id` for good (its outbox entry buried): it is no rating of its
     *  comment (which is unrated, unless rated again since). Writes nothing: the outbox entry is gone. */
    forgetRating(id) {
      const r = this.ratings.get(id);
      if (!r) return;
      this.ratings.delete(id);
      this.settle(r.comment);
    },

    /** The comment's rating is its latest one, if any. */
    settle(comment) {
      const own = [...this.ratings.values()].filter((r) => r.comment === comment).sort(later);
      if (own.length) this.rated[comment] = own[own.length - 1].entry;
      else delete this.rated[comment];
    },

    /** Remember that these comments were sent from task page `pageId`: one batch of those not
     *  remembered with that page yet, stored before they count (a failed write leaves them out). */
    async onTaskPage(platform, keys, pageId) {
      const fresh = [...new Set(keys.map((key) => ns.commentKey(platform, key)))].filter((k) => this.taskPageOf[k] !== pageId);
      if (!fresh.length) return;
      const study = (ns.config.study && ns.config.study.study_id) || "";
      const seq = ++this.seq;
      await store.set({ [batchKey("taskPage", study, seq)]: { kind: "taskPage", study, ids: fresh, page: pageId, seq } });
      for (const k of fresh) this.taskPageOf[k] = pageId;
    },
  };

  ns.counters = counters;
})(globalThis.modlens);
