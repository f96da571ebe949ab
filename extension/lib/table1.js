// Toxicity from two anchor comparisons, Table 1 of the human-centered Perspective study
// (the human-centred Perspective study). Mirrors src/modlens/ratings.py exactly; tests/e2e/test_extension_units.py checks
// both agree on every answer pair. The daemon re-derives it; the panel uses it to show the
// derived rating and to warn about inconsistent answers before submitting.
(function (root) {
  const ns = (root.modlens = root.modlens || {});
  const NOT = "not toxic", HARD = "hard to say", TOX = "toxic";
  const TABLE_1 = {
    [NOT]: { "more|more": [TOX], "less|more": [HARD, NOT], "less|less": [NOT], "less|same": [NOT], "same|more": [HARD] },
    [TOX]: { "more|more": [TOX], "more|less": [HARD, TOX], "more|same": [TOX], "less|less": [NOT], "same|less": [HARD] },
  };
  const ANSWERS = ["more", "less", "same"];

  ns.TABLE_1 = TABLE_1;
  ns.deriveToxicity = function deriveToxicity(vsHard, vsExtreme, extremeRating) {
    if (!TABLE_1[extremeRating]) throw new Error(`extreme anchor rating must be "${NOT}" or "${TOX}", not ${JSON.stringify(extremeRating)}`);
    for (const a of [vsHard, vsExtreme]) {
      if (!ANSWERS.includes(a)) throw new Error(`anchor answer must be more, less or same, not ${JSON.stringify(a)}`);
    }
    const candidates = TABLE_1[extremeRating][`${vsHard}|${vsExtreme}`];
    if (!candidates) return { rating: null, candidates: [], inconsistent: true };
    // Two-candidate cells: "hard to say" borders both, as in ratings.py.
    return { rating: candidates.length > 1 ? HARD : candidates[0], candidates: candidates.slice(), inconsistent: false };
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
