// Counts shown in the popup (found/sent/scored/rated/errors in total), the comments this
// browser rated ("platform|key" -> {at, values}) and the per-study decile counts of the
// sampler. Totals are saved at most every 300 ms: they change with every scored comment.
(function (ns) {
  const store = chrome.storage.local;
  let saveTimer = null;

  const counters = {
    totals: { found: 0, sent: 0, scored: 0, rated: 0, errors: 0 },
    rated: {},
    decileCounts: {}, // study_id -> [10 counts]

    async load() {
      const got = await store.get(["totals", "rated", "decileCounts"]);
      this.totals = { ...this.totals, ...(got.totals || {}) };
      this.rated = got.rated || {};
      this.decileCounts = got.decileCounts || {};
    },

    saveSoon() {
      clearTimeout(saveTimer);
      saveTimer = setTimeout(() => store.set({ totals: this.totals, decileCounts: this.decileCounts }), 300);
    },

    ratingOf(platform, key) {
      return this.rated[ns.commentKey(platform, key)] || null;
    },

    async markRated(platform, key, values) {
      this.rated[ns.commentKey(platform, key)] = { at: Date.now(), values };
      await store.set({ rated: this.rated });
    },

    decilesFor(studyId) {
      if (!this.decileCounts[studyId]) this.decileCounts[studyId] = new Array(10).fill(0);
      return this.decileCounts[studyId];
    },
  };

  ns.counters = counters;
})(globalThis.modlens);
